"""`serve --workers N`: N whole hubs on the same HTTP and WebSocket ports of this machine (SPEC 12).

The parent is a small supervisor, not a hub. It checks the two ports once, then starts N children,
`market-server <the same arguments> --workers 1 --worker-id I`. Each child is a complete hub on
`--engine redis` (its own event loop, HTTP runtime, WebSocket server, Redis and storage connections)
and binds both ports with SO_REUSEPORT (Granian and Robyn do for HTTP, the stream server for
WebSocket when it is a worker), so the kernel spreads new connections over the children. They share
the feed, the rate limits and the revocations through Redis exactly as hubs on several machines do;
this is not Granian's own `workers` option, which would run N HTTP workers around one hub.

- Logs: every child's JSON lines carry `"worker": I`; its start line names its pid and node id, and
  `/readyz` answers with both, so one can tell which process answered.
- The demo key is created (and printed) once, by whichever child creates it first.
- SIGTERM/SIGINT: sent on as SIGTERM to every child; the parent exits when they have (0 if all
  exited 0, else 1; a child still running after STOP_S is killed). The children run in their own
  process group (a terminal's Ctrl-C reaches the parent only, which forwards it once) and get
  SIGTERM if the parent dies (PR_SET_PDEATHSIG), so no hub outlives its supervisor.
- A child that exits with an error code within STARTUP_S of its start (a configuration or environment
  problem: every child would fail alike) stops everything (exit 1). Otherwise a child that ends (killed
  by a signal, e.g. the OOM killer, or exiting later) is started again after RESTART_S.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from server.config import Settings
from server.logs import configure_logging
from server.serve import check_port_free

log = logging.getLogger("market.workers")

STARTUP_S = 10.0
RESTART_S = 1.0
STOP_S = 10.0  # each hub exits within 5 s of SIGTERM (server/lifecycle.py); margin for a loaded machine
SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGCHLD}
PR_SET_PDEATHSIG = 1


@dataclass
class Child:
    worker: int
    proc: subprocess.Popen[bytes]
    started: float


def supervise(settings: Settings, argv: list[str]) -> int:
    for port in (settings.port, settings.ws_port):
        try:
            check_port_free(settings.host, port)
        except OSError as exc:
            print(f"market-server: cannot listen on {settings.host}:{port}: {exc.strerror}", file=sys.stderr)
            return 1
    configure_logging(settings.log_level)
    print(f"market-server: HTTP http://{settings.host}:{settings.port}  WebSocket ws://{settings.host}:"
          f"{settings.ws_port}/ws/quotes runtime={settings.runtime.value} feed={settings.feed} "
          f"workers={settings.workers} (pid {os.getpid()})", flush=True)
    return Supervisor(settings.workers, argv).run()


def _child_setup() -> None:
    """In the child, before exec: signals unblocked, and SIGTERM when the supervisor dies."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class Supervisor:
    def __init__(self, n: int, argv: list[str]) -> None:
        self.n = n
        self.argv = argv
        self.children: dict[int, Child] = {}

    def spawn(self, worker: int) -> None:
        cmd = [sys.executable, "-m", "server", *self.argv, "--workers", "1", "--worker-id", str(worker)]
        proc = subprocess.Popen(cmd, preexec_fn=_child_setup, process_group=0)  # no threads in the supervisor
        self.children[worker] = Child(worker, proc, time.monotonic())

    def run(self) -> int:
        signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)  # taken with sigtimedwait: no handler races
        for worker in range(1, self.n + 1):
            self.spawn(worker)
        restarts: dict[int, float] = {}  # worker -> when to start it again
        while True:
            info = signal.sigtimedwait(SIGNALS, 0.5)
            if info is not None and info.si_signo in (signal.SIGTERM, signal.SIGINT):
                log.info("stopping %d workers (%s)", len(self.children), signal.Signals(info.si_signo).name)
                return self.stop()
            now = time.monotonic()
            for worker, child in list(self.children.items()):
                code = child.proc.poll()
                if code is None:
                    continue
                del self.children[worker]
                if code > 0 and now - child.started < STARTUP_S:
                    log.error("worker %d exited with %d during start-up; stopping the others", worker, code)
                    print(f"market-server: worker {worker} exited with code {code} during start-up",
                          file=sys.stderr, flush=True)
                    self.stop()
                    return 1
                log.warning("worker %d (pid %d) exited with %d; starting it again in %.0f s",
                            worker, child.proc.pid, code, RESTART_S)
                restarts[worker] = now + RESTART_S
            for worker, when in list(restarts.items()):
                if now >= when:
                    del restarts[worker]
                    self.spawn(worker)

    def stop(self) -> int:
        """SIGTERM to every child; wait for them (bounded); 0 if every one exited 0."""
        for child in self.children.values():
            if child.proc.poll() is None:
                child.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_S
        codes: list[int] = []
        for child in self.children.values():
            try:
                codes.append(child.proc.wait(max(0.0, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                log.error("worker %d did not stop within %.0f s; killed", child.worker, STOP_S)
                child.proc.kill()
                codes.append(child.proc.wait())
        bad = [c for c in codes if c != 0]
        if bad:
            log.error("workers exited with %s", bad)
        return 1 if bad else 0
