# Sourced by scripts/image-check and scripts/compose-check: podman set up for this kind of machine
# (no Docker daemon, no registry), and base images built from Debian packages when missing.
# Not part of ./scripts/test. See docs/operations.md "Container image and compose stack".
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CONTAINERS_CONF="$ROOT/deploy/podman/containers.conf"
export CONTAINERS_STORAGE_CONF="$ROOT/deploy/podman/storage.conf"

DEBIAN_IMAGE=localhost/market-standin/debian:bookworm
PYTHON_IMAGE=localhost/python:3.11-slim   # what the Dockerfile's FROM python:3.11-slim resolves to
T0=$(date +%s.%N)
STEP_T=$T0

die() { echo "$(basename "$0"): $*" >&2; exit 1; }
now() { date +%s.%N; }
# step NAME: print the time the previous step took, then announce the next one
step() {
  local t; t=$(now)
  printf '[%6.1fs] %s\n' "$(echo "$t - $T0" | bc)" "$*"
  STEP_T=$t
}
took() { printf '%.1f' "$(echo "$(now) - $1" | bc)"; }

# One line and a non-zero exit when this machine cannot run the check; nothing is built before this.
preflight() {
  [ "$(id -u)" = 0 ] || die "needs root (rootful podman, debootstrap): run it with sudo"
  local missing=() c
  for c in podman debootstrap runc newuidmap bc curl python3 "$@"; do
    command -v "$c" >/dev/null 2>&1 || missing+=("$c")
  done
  # netavark + aardvark-dns: container networks with name resolution (compose's service names)
  [ -x /usr/lib/podman/aardvark-dns ] || missing+=(aardvark-dns)
  [ ${#missing[@]} = 0 ] || die "missing ${missing[*]}: apt-get install podman buildah runc debootstrap uidmap netavark aardvark-dns podman-compose bc curl python3"
}

# The Debian mirror apt already uses (deb822 "URIs:" or one-line "deb" entries), not the security one.
debian_mirror() {
  local m
  m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
      | sed -n -e 's/^URIs:[[:space:]]*//p' -e 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\).*/\2/p' \
      | tr ' ' '\n' | grep -E '/debian/?$' | head -1)
  echo "${m:-http://deb.debian.org/debian}"
}
debian_security_mirror() {
  local m
  m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
      | sed -n -e 's/^URIs:[[:space:]]*//p' -e 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\).*/\2/p' \
      | tr ' ' '\n' | grep -E '/debian-security/?$' | head -1)
  echo "${m:-http://deb.debian.org/debian-security}"
}

# localhost/market-standin/debian:bookworm: debootstrap minbase + ca-certificates, the host's extra CA
# certificates trusted (a TLS-intercepting proxy may sit between this machine and PyPI), apt pointed
# at the host's mirrors (bookworm, -updates, -security).
ensure_debian_image() {
  podman image exists "$DEBIAN_IMAGE" && return 0
  local rootfs mirror sec t
  t=$(now)
  rootfs=$(mktemp -d /var/tmp/market-rootfs.XXXXXX)
  mirror=$(debian_mirror); sec=$(debian_security_mirror)
  echo "  debootstrap bookworm from $mirror" >&2
  debootstrap --variant=minbase --include=ca-certificates bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 \
    || { tail -20 "$rootfs.log" >&2; rm -rf "$rootfs"; die "debootstrap failed (log: $rootfs.log)"; }
  rm -f "$rootfs.log"
  if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
    chroot "$rootfs" update-ca-certificates >/dev/null 2>&1
  fi
  cat >"$rootfs/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $sec bookworm-security main
EOF
  chroot "$rootfs" apt-get clean
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/log/*.log
  chmod 755 "$rootfs"   # mktemp made it 0700: the image's / must be searchable by non-root users
  tar -C "$rootfs" -c . | podman import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["bash"]' - "$DEBIAN_IMAGE" >"$rootfs.log" 2>&1 || { cat "$rootfs.log" >&2; rm -rf "$rootfs"; die "podman import failed"; }
  rm -f "$rootfs.log"
  rm -rf "$rootfs"
  echo "  $DEBIAN_IMAGE built in $(took "$t") s" >&2
}

# build_local IMAGE CONTAINERFILE CONTEXT [podman build args...]: podman build the way it works here
# (chroot isolation: no nested namespaces needed; host network: the host's view of the mirrors and
# PyPI; never pull: every FROM is a local image; docker format: keeps HEALTHCHECK).
build_local() {
  local image=$1 file=$2 ctx=$3; shift 3
  podman build --isolation chroot --network host --pull=never --format docker \
    -f "$file" -t "$image" "$@" "$ctx"
}

# localhost/python:3.11-slim: Debian's python3.11 on the Debian image (python, pip in /usr/local/bin,
# no EXTERNALLY-MANAGED marker), standing in for Docker Hub's python:3.11-slim.
ensure_python_image() {
  podman image exists "$PYTHON_IMAGE" && return 0
  ensure_debian_image
  local t; t=$(now)
  build_local "$PYTHON_IMAGE" "$ROOT/deploy/podman/python-base.Containerfile" "$ROOT/deploy/podman" -q 2>&1 >/dev/null \
    | grep -v '^debconf: delaying' >&2 || true
  podman image exists "$PYTHON_IMAGE" || die "building $PYTHON_IMAGE failed"
  echo "  $PYTHON_IMAGE built in $(took "$t") s" >&2
}

image_size_mb() { podman image inspect --format '{{.Size}}' "$1" | awk '{printf "%.0f", $1/1000000}'; }

# Stand-ins for compose.yaml's haproxy, redis and postgres images, from Debian packages
# (deploy/podman/*.Containerfile), named localhost/market-standin/NAME:bookworm.
ensure_standins() {
  ensure_debian_image
  local name t
  for name in haproxy redis postgres; do
    podman image exists "localhost/market-standin/$name:bookworm" && continue
    t=$(now)
    build_local "localhost/market-standin/$name:bookworm" "$ROOT/deploy/podman/$name.Containerfile" \
      "$ROOT/deploy/podman" -q 2>&1 >/dev/null | grep -v '^debconf: delaying' >&2 || true
    podman image exists "localhost/market-standin/$name:bookworm" || die "building the $name stand-in failed"
    echo "  localhost/market-standin/$name:bookworm built in $(took "$t") s" >&2
  done
}
