# Sourced by scripts/serve and scripts/test: make .venv (Python 3.11+) with the pinned
# dependencies and the project installed; skipped when nothing changed since the last run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
EXTRAS="${1:-}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
  "$PY" -m venv "$VENV"
fi
stamp="$VENV/.installed$EXTRAS"
want="$(cat "$ROOT/pyproject.toml" "$ROOT/requirements.lock" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setting up $VENV ..." >&2
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >&2
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -c "$ROOT/requirements.lock" -e "$ROOT$EXTRAS" >&2
  echo "$want" > "$stamp"
fi
