"""Running the hub on either runtime, with SIGTERM/SIGINT handled the same way on both.

Both runtimes start the hub with `server.root` (`start_up`; Robyn: `build`, then `start_built` on its loop) and stop
it with `server.root.shut_down` (server/lifecycle.py's order, bounded by its SHUTDOWN_BUDGET_S); this module is the
entry of both adapters and the checks before either runs.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import resource
import socket
import sys

import uvloop

from server.config import HttpSettings, Runtime, Settings
from server.lifecycle import HttpRuntime, on_signals
from server.root import bench_static_body, build, shut_down, start_built, start_up

log = logging.getLogger("market.serve")
MAX_OPEN_FILES = 1 << 20


def run(settings: Settings) -> int:
    for port in () if settings.worker_id else (settings.port, settings.ws_port):  # workers: the supervisor did
        try:
            check_port_free(settings.host, port)
        except OSError as exc:
            print(f"market-server: cannot listen on {settings.host}:{port}: {exc.strerror}", file=sys.stderr)
            return 1
    raise_open_files_limit()
    if settings.runtime is Runtime.ROBYN:
        return _serve_robyn(settings)
    return uvloop.run(_serve_granian(settings))


def raise_open_files_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit (every connection holds a descriptor); returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = MAX_OPEN_FILES if hard == resource.RLIM_INFINITY else min(hard, MAX_OPEN_FILES)
    if soft == resource.RLIM_INFINITY or soft >= target:
        return min(soft, MAX_OPEN_FILES)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):  # e.g. above fs.nr_open: keep what we have
        return soft
    return target


def check_port_free(host: str, port: int) -> None:
    """Both runtimes bind with SO_REUSEPORT, so a second server would silently share a busy port."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise OSError(errno.EADDRINUSE, "address already in use") from exc
            raise


def _serve_robyn(settings: Settings) -> int:
    """Robyn's routes are fixed before it starts: the hub is built first (its router names the remembered routes)
    and started on Robyn's loop by the startup handler."""
    from server.http.robyn_app import Hub, run_robyn

    node = build(settings)

    async def stop(http: HttpRuntime) -> None:
        await shut_down(node, http)

    return run_robyn(settings, Hub(node.app, lambda: start_built(node), stop, lambda: bench_static_body(node),
                                   on_signals))


async def _serve_granian(settings: Settings) -> int:
    from server.http.granian_rsgi import GranianRuntime

    node = await start_up(settings)
    open_files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    runtime = GranianRuntime(node.app, settings.group(HttpSettings), open_files, bench_static_body(node))
    stop = asyncio.Event()
    failure: list[BaseException | None] = []

    def http_exited(exc: BaseException | None) -> None:
        reason = str(exc).splitlines()[0] if exc else "exited"  # Granian appends a Rust backtrace
        log.error("HTTP server on %s:%s stopped: %s", settings.host, settings.port, reason)
        failure.append(RuntimeError(reason))
        stop.set()

    await runtime.start(http_exited)
    on_signals(asyncio.get_running_loop(), stop.set)
    await stop.wait()
    await shut_down(node, runtime)
    if failure:
        print(f"market-server: HTTP server failed on {settings.host}:{settings.port}: {failure[0]}", file=sys.stderr)
        return 1
    return 0
