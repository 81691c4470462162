"""A TCP relay the tests can cut: stands between the client and the server's WebSocket port, as a proxy or
a flaky network does, and drops every open connection on `cut()` (no close frame, no FIN: RST). `pause()` holds
what the server sends on the connections open now (a silent stream: no close, no error, nothing), while
connections opened later flow."""

from __future__ import annotations

import asyncio
import contextlib


class CuttableProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._flows: set[asyncio.Event] = set()  # one per open connection's server-to-client direction
        self._paused: set[asyncio.Event] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def cut(self) -> int:
        """Abort every relayed connection on both sides; returns how many sockets were cut."""
        writers, self._writers = self._writers, set()
        for w in writers:
            w.transport.abort()
        return len(writers)

    def pause(self) -> int:
        """Stop relaying the server's bytes on every open connection (they stay open); returns how many."""
        flows, self._flows = self._flows, set()
        for flow in flows:
            flow.clear()
        self._paused |= flows
        return len(flows)

    async def close(self) -> None:
        self.cut()
        for flow in self._paused:  # let the held pipes run into their aborted sockets and end
            flow.set()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self.connections += 1
        self._writers |= {writer, up_writer}
        downstream = asyncio.Event()
        downstream.set()
        self._flows.add(downstream)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer, downstream))
        self._flows.discard(downstream)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    flow: asyncio.Event | None = None) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                if flow is not None:
                    await flow.wait()
                writer.write(data)
                await writer.drain()
        self._writers.discard(writer)
        writer.transport.abort()
