"""Running the hub on either runtime, with SIGTERM/SIGINT handled the same way on both.

The shutdown order is server/lifecycle.py's, on both runtimes; the whole sequence is bounded by 5 s.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import resource
import socket
import sys

import uvloop

from server.config import Runtime, Settings
from server.hub import Hub, ensure_demo_key
from server.lifecycle import on_signals, shutdown

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
        from server.http.robyn_app import run_robyn

        return run_robyn(settings)
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


def announce(hub: Hub) -> None:
    s = hub.settings
    secret = ensure_demo_key(hub) if s.demo_key else None  # several workers: the one that creates it prints it
    if s.worker_id:  # the supervisor printed the addresses once
        print(f"market-server[worker {s.worker_id}]: pid {os.getpid()} node {hub.engine.node}", flush=True)
    else:
        print(f"market-server: HTTP http://{s.host}:{s.port}  WebSocket ws://{s.host}:{s.ws_port}/ws/quotes "
              f"runtime={s.runtime.value} feed={s.feed}", flush=True)
    key_file = s.data_dir / "demo-key.txt"
    if secret:
        print(f"market-server: demo key (professional, shown once, saved to {key_file}):\n  {secret}", flush=True)
    elif s.demo_key and s.worker_id <= 1:  # a later start: say where the first start's key is
        where = f"is in {key_file}" if key_file.is_file() else f"was shown on the first start ({key_file} is gone)"
        print(f"market-server: the API key made on the first start {where}; more: market-server keys create "
              f"--plan professional --data-dir {s.data_dir}", flush=True)


def bench_static_body(hub: Hub) -> bytes | None:
    """With --bench-static: the quotes body as it is now, served by the runtime itself (the ceiling)."""
    if not hub.settings.bench_static:
        return None
    import orjson

    rows = list(range(len(hub.catalogue.instruments)))
    return orjson.dumps({"updated": "static", "count": len(rows), "demo": True, "quotes": hub.state.quotes(rows)})


async def _serve_granian(settings: Settings) -> int:
    from server.http.granian_rsgi import GranianRuntime

    hub = Hub(settings)
    announce(hub)
    await hub.start()
    open_files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    runtime = GranianRuntime(hub.app, settings, open_files, bench_static_body(hub))
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
    await shutdown(hub, runtime)
    if failure:
        print(f"market-server: HTTP server failed on {settings.host}:{settings.port}: {failure[0]}", file=sys.stderr)
        return 1
    return 0
