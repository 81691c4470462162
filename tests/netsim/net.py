"""A simulated network of test hosts: Linux network namespaces joined by veth pairs to a router namespace.

    with Network() as net:                       # skips (pytest) where namespaces cannot be made
        redis, hub = net.host("redis"), net.host("hub1")
        net.shape(delay_ms=2, jitter_ms=1, loss=0.005)   # on every link
        net.cut(hub, redis); net.heal(hub, redis)        # a partition between two hosts, both ways

Every host is a namespace `nsim<run>-<name>` with one interface `eth0` (10.77.N.2/24) whose peer lives in
the router namespace `nsim<run>-router` (10.77.N.1/24, IP forwarding on): every packet between two hosts is
forwarded by the router, so one nftables table there cuts links (a set of (in, out) interface pairs) and
queues packets to the shaper (tests/netsim/shaper.py), a userspace netem: this kernel has no `sch_netem`,
so delay, jitter and loss are applied to the forwarded packets by a process on an NFQUEUE, per packet by
the link it came in on (each host's egress, as netem on each host's eth0 would). No address exists outside
the namespaces; the root namespace reaches none of them. Test code reaches the hosts from inside one:
`with net.inside(clients):` moves the calling thread (and threads it starts) into that host's namespace.

Names carry a random run id, so parallel runs never collide; everything is removed on exit (the context
manager, and atexit), and a run that died without cleaning up (kill -9) is swept by the next one: each run
records its pid under /run/netsim.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "nsim"
STATE = Path("/run/netsim")
CLONE_NEWNET = 0x40000000
SUBNET = "10.77"


def unavailable() -> str | None:
    """Why namespaces cannot be made here, or None."""
    if sys.platform != "linux":
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "network namespaces need root (run the netsim tests as root)"
    for tool in ("ip", "nft", "iptables"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (apt-get install iproute2 nftables iptables; .ci/run does)"
    probe = f"{PREFIX}probe{secrets.token_hex(3)}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def require() -> None:
    """Skip, saying why, where namespaces cannot be made; where they could (root) but a tool is missing and
    MARKET_REQUIRE_SERVICES=1 (.ci/run, which installs the tools), fail instead."""
    reason = unavailable()
    if reason is not None:
        if os.environ.get("MARKET_REQUIRE_SERVICES") == "1" and os.geteuid() == 0:
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)


def _run(*cmd: str, stdin: str | None = None) -> str:
    out = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {out.stderr.strip() or out.stdout.strip()}")
    return out.stdout


def sweep_stale() -> None:
    """Delete the namespaces of runs whose process is gone (killed before it could clean up)."""
    if not STATE.is_dir():
        return
    for record in STATE.glob("*.pid"):
        try:
            pid = int(record.read_text())
            os.kill(pid, 0)
            continue  # that run lives
        except ProcessLookupError:
            pass
        except (ValueError, PermissionError):
            continue
        run = record.stem
        for ns in _namespaces():
            if ns.startswith(f"{PREFIX}{run}-"):
                _kill_all_in(ns)
                subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        record.unlink(missing_ok=True)


def _namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _kill_all_in(ns: str) -> None:
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


class Host:
    def __init__(self, net: Network, name: str, index: int) -> None:
        self.net, self.name, self.index = net, name, index
        self.ns = f"{PREFIX}{net.run}-{name}"
        self.ip = f"{SUBNET}.{index}.2"
        self.router_if = f"{PREFIX}{net.run}r{index}"  # the router's end of this host's link (<= 15 chars)

    def cmd(self, *args: str) -> list[str]:
        """A command line that runs `args` inside this host."""
        return ["ip", "netns", "exec", self.ns, *args]

    def popen(self, args: Sequence[str], log: Path, env: dict[str, str] | None = None,
              user: str | None = None) -> Proc:
        """Start a process inside this host (tracked: killed when the network goes away)."""
        argv = list(args) if user is None else ["runuser", "-u", user, "--", *args]
        handle: IO[bytes] = open(log, "ab")  # noqa: SIM115
        proc = subprocess.Popen(self.cmd(*argv), stdout=handle, stderr=subprocess.STDOUT, cwd=ROOT,
                                env={**os.environ, **(env or {})}, start_new_session=True)
        tracked = Proc(proc, handle, log, self)
        self.net.procs.append(tracked)
        return tracked

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.cmd(*args), capture_output=True, text=True, timeout=timeout, cwd=ROOT)

    def __repr__(self) -> str:
        return f"Host({self.name} {self.ip})"


class Proc:
    """A process inside a host: `ip netns exec` execs it in place, so the pid is the program's own."""

    def __init__(self, proc: subprocess.Popen[bytes], handle: IO[bytes], log: Path, host: Host) -> None:
        self.proc, self._handle, self.log, self.host = proc, handle, log, host

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive():
            os.killpg(self.proc.pid, sig)

    def kill(self) -> None:
        """kill -9 (the process and anything it started)."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM, then SIGKILL after `timeout`; the exit code."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._handle.close()
        return int(self.proc.returncode)

    def output(self) -> str:
        if not self._handle.closed:
            self._handle.flush()
        return self.log.read_text(errors="replace")


class Network:
    def __init__(self, workdir: Path | None = None) -> None:
        self.run = secrets.token_hex(3)
        self.workdir = workdir or Path(f"/tmp/netsim-{self.run}")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.router_ns = f"{PREFIX}{self.run}-router"
        self.hosts: dict[str, Host] = {}
        self.procs: list[Proc] = []
        self.shaper: Proc | None = None
        self.cuts: set[tuple[str, str]] = set()
        self._closed = False

    # --- life ---------------------------------------------------------------------------------
    def __enter__(self) -> Network:
        require()
        STATE.mkdir(parents=True, exist_ok=True)
        sweep_stale()
        (STATE / f"{self.run}.pid").write_text(str(os.getpid()))
        atexit.register(self.close)
        try:
            _run("ip", "netns", "add", self.router_ns)
            _run("ip", "-n", self.router_ns, "link", "set", "lo", "up")
            _run("ip", "netns", "exec", self.router_ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
            _run("ip", "netns", "exec", self.router_ns, "nft", "-f", "-", stdin=(
                "table inet netsim {\n"
                "  set cut { type ifname . ifname; }\n"
                "  chain forward { type filter hook forward priority -10; policy accept;\n"
                "    iifname . oifname @cut drop\n"
                "  }\n"
                "}\n"))
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for proc in reversed(self.procs):
            with contextlib.suppress(Exception):
                proc.kill()
            with contextlib.suppress(Exception):
                proc._handle.close()
        for ns in [h.ns for h in self.hosts.values()] + [self.router_ns]:
            _kill_all_in(ns)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        (STATE / f"{self.run}.pid").unlink(missing_ok=True)
        if os.environ.get("NETSIM_KEEP") != "1":  # NETSIM_KEEP=1 keeps the logs
            shutil.rmtree(self.workdir, ignore_errors=True)
        with contextlib.suppress(ValueError):
            atexit.unregister(self.close)

    # --- topology ---------------------------------------------------------------------------------
    def host(self, name: str) -> Host:
        """A new host (namespace) linked to the router."""
        assert name not in self.hosts and len(self.hosts) < 250
        host = Host(self, name, len(self.hosts) + 1)
        self.hosts[name] = host
        _run("ip", "netns", "add", host.ns)
        _run("ip", "link", "add", host.router_if, "netns", self.router_ns, "type", "veth",
             "peer", "name", "eth0", "netns", host.ns)
        _run("ip", "-n", self.router_ns, "addr", "add", f"{SUBNET}.{host.index}.1/24", "dev", host.router_if)
        _run("ip", "-n", self.router_ns, "link", "set", host.router_if, "up")
        _run("ip", "-n", host.ns, "addr", "add", f"{host.ip}/24", "dev", "eth0")
        _run("ip", "-n", host.ns, "link", "set", "eth0", "up")
        _run("ip", "-n", host.ns, "link", "set", "lo", "up")
        _run("ip", "-n", host.ns, "route", "add", "default", "via", f"{SUBNET}.{host.index}.1")
        return host

    def cut(self, a: Host, *others: Host) -> None:
        """Drop every packet between `a` and each of `others`, both ways (connections stay open and
        stall, as behind a broken switch: no reset, no error until a timeout)."""
        elements = []
        for b in others:
            self.cuts.add((a.name, b.name))
            elements += [f"{a.router_if} . {b.router_if}", f"{b.router_if} . {a.router_if}"]
        self._nft("add", elements)

    def heal(self, a: Host, *others: Host) -> None:
        elements = []
        for b in others:
            self.cuts.discard((a.name, b.name))
            elements += [f"{a.router_if} . {b.router_if}", f"{b.router_if} . {a.router_if}"]
        self._nft("delete", elements)

    def _nft(self, verb: str, elements: list[str]) -> None:
        if elements:
            _run("ip", "netns", "exec", self.router_ns, "nft", verb, "element", "inet", "netsim", "cut",
                 "{ " + ", ".join(elements) + " }")

    def shape(self, delay_ms: float, jitter_ms: float = 0.0, loss: float = 0.0,
              hosts: Sequence[Host] | None = None) -> None:
        """netem on every link (or `hosts`' links): each packet a host sends waits delay +/- jitter
        (uniform) and is dropped with probability `loss`. Call once, after the hosts are made."""
        assert self.shaper is None, "shape() once per network"
        links = {h.router_if: [delay_ms, jitter_ms, loss] for h in (hosts or list(self.hosts.values()))}
        router = Host.__new__(Host)
        router.net, router.name, router.ns, router.ip = self, "router", self.router_ns, ""
        ready = self.workdir / "shaper.ready"
        self.shaper = router.popen(
            [sys.executable, "-m", "tests.netsim.shaper", "--queue", "0", "--links", json.dumps(links),
             "--ready", str(ready)], self.workdir / "shaper.log")
        deadline = time.monotonic() + 10
        while not ready.exists():
            if not self.shaper.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"shaper did not start:\n{self.shaper.output()}")
            time.sleep(0.02)  # another process binds its queue: nothing to await
        # `bypass`: while no shaper listens (it died), packets pass unshaped instead of being dropped
        # (iptables' NFQUEUE target: this kernel has xt_NFQUEUE but not nft's queue expression)
        _run("ip", "netns", "exec", self.router_ns, "iptables", "-A", "FORWARD", "-j", "NFQUEUE",
             "--queue-num", "0", "--queue-bypass")

    def shaper_stats(self) -> dict[str, Any]:
        """What the shaper did so far: packets passed, dropped (loss), the delays it applied (it writes them
        every half second; this waits for figures newer than the call)."""
        if self.shaper is None:
            return {}
        stats, since = self.workdir / "shaper.stats.json", time.monotonic()
        deadline = since + 15
        while time.monotonic() < deadline:
            with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
                data: dict[str, Any] = json.loads(stats.read_text())
                if data.get("at", 0) >= since:
                    return data
            time.sleep(0.05)  # the shaper writes its figures: nothing to await
        raise RuntimeError(f"no figures from the shaper within 15 s:\n{self.shaper.output()}")

    # --- reaching the hosts ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def inside(self, host: Host) -> Iterator[None]:
        """Move the calling thread into `host`'s namespace (sockets it opens meanwhile live there, threads
        it starts too) and back afterwards."""
        with open("/proc/thread-self/ns/net") as back, open(f"/run/netns/{host.ns}") as there:
            _setns(there.fileno())
            try:
                yield
            finally:
                _setns(back.fileno())
