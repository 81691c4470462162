"""A userspace netem for the simulated network (tests/netsim/net.py): this kernel has no `sch_netem`, so
the router namespace queues every forwarded packet (nftables `queue num 0 bypass`) to this process, which
holds each one for its link's delay +/- jitter (uniform) and drops it with the link's loss probability,
then gives the kernel its verdict. The link is the interface the packet came in on: each host's egress,
as netem on the host's eth0 would be.

NFQUEUE over a raw netlink socket (no library): bind the queue, ask for metadata only (no payload copy),
read packet ids and in-interfaces, answer NF_ACCEPT / NF_DROP by id (verdicts may come in any order).
It writes its counters to <ready>/../shaper.stats.json every half second.

    python -m tests.netsim.shaper --queue 0 --links '{"nsimab12r1": [2, 1, 0.005]}' --ready FILE
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import select
import socket
import struct
import time
from pathlib import Path

NETLINK_NETFILTER = 12
SOL_NETLINK = 270
NETLINK_NO_ENOBUFS = 5
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
NFNL_SUBSYS_QUEUE = 3
MSG_PACKET, MSG_VERDICT, MSG_CONFIG = (NFNL_SUBSYS_QUEUE << 8) | 0, (NFNL_SUBSYS_QUEUE << 8) | 1, \
    (NFNL_SUBSYS_QUEUE << 8) | 2
CFG_CMD, CFG_PARAMS, CFG_QUEUE_MAXLEN = 1, 2, 3
CMD_BIND = 1
COPY_META = 1
ATTR_PACKET_HDR, ATTR_VERDICT_HDR, ATTR_INDEV = 1, 2, 5
NF_DROP, NF_ACCEPT = 0, 1
STATS_EVERY_S = 0.5


def _attr(kind: int, payload: bytes) -> bytes:
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * ((4 - length % 4) % 4)


def _message(kind: int, flags: int, seq: int, queue: int, attrs: bytes) -> bytes:
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(queue)) + attrs
    return struct.pack("=IHHII", 16 + len(body), kind, flags, seq, 0) + body


def _attrs(data: bytes, offset: int, end: int) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    while offset + 4 <= end:
        length, kind = struct.unpack_from("=HH", data, offset)
        if length < 4:
            break
        out[kind & 0x3FFF] = data[offset + 4:offset + length]
        offset += (length + 3) & ~3
    return out


class Shaper:
    def __init__(self, queue: int, links: dict[str, list[float]]) -> None:
        self.queue = queue
        self.links = {socket.if_nametoindex(name): spec for name, spec in links.items()}
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        self.sock.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE (root)
        self.sock.setsockopt(SOL_NETLINK, NETLINK_NO_ENOBUFS, 1)
        self.sock.bind((0, 0))
        self.seq = 0
        self.held: list[tuple[float, int]] = []  # (due, packet id)
        self.passed = self.dropped = 0
        self.delays: list[float] = []  # a sample of the delays applied (ms)

    def _config(self, attrs: bytes) -> None:
        self.seq += 1
        self.sock.send(_message(MSG_CONFIG, NLM_F_REQUEST | NLM_F_ACK, self.seq, self.queue, attrs))
        reply = self.sock.recv(65536)
        if struct.unpack_from("=H", reply, 4)[0] == NLMSG_ERROR:
            error = struct.unpack_from("=i", reply, 16)[0]
            if error != 0:
                raise OSError(-error, f"nfqueue config: {os.strerror(-error)}")

    def bind(self) -> None:
        self._config(_attr(CFG_CMD, struct.pack("=BBH", CMD_BIND, 0, socket.htons(socket.AF_INET))))
        self._config(_attr(CFG_PARAMS, struct.pack("!IB", 0, COPY_META)))
        self._config(_attr(CFG_QUEUE_MAXLEN, struct.pack("!I", 65536)))

    def _verdicts(self, pairs: list[tuple[int, int]]) -> None:
        out = bytearray()
        for packet_id, verdict in pairs:
            self.seq += 1
            out += _message(MSG_VERDICT, NLM_F_REQUEST, self.seq, self.queue,
                            _attr(ATTR_VERDICT_HDR, struct.pack("!II", verdict, packet_id)))
            if len(out) > 60000:
                self.sock.send(bytes(out))
                out.clear()
        if out:
            self.sock.send(bytes(out))

    def _receive(self, now: float, drops: list[tuple[int, int]]) -> None:
        while True:
            try:
                data = self.sock.recv(1 << 20, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            offset = 0
            while offset + 16 <= len(data):
                length, kind = struct.unpack_from("=IH", data, offset)
                if length < 16:
                    break
                if kind == MSG_PACKET:
                    attrs = _attrs(data, offset + 20, offset + length)
                    packet_id = struct.unpack("!I", attrs[ATTR_PACKET_HDR][:4])[0]
                    indev = struct.unpack("!I", attrs[ATTR_INDEV])[0] if ATTR_INDEV in attrs else 0
                    delay, jitter, loss = self.links.get(indev, (0.0, 0.0, 0.0))
                    if loss and random.random() < loss:
                        drops.append((packet_id, NF_DROP))
                        self.dropped += 1
                    else:
                        wait = max(0.0, delay + random.uniform(-jitter, jitter)) if jitter else delay
                        if len(self.delays) < 20_000:
                            self.delays.append(wait)
                        heapq.heappush(self.held, (now + wait / 1000, packet_id))
                offset += (length + 3) & ~3

    def loop(self, stats: Path) -> None:
        written = 0.0
        while True:
            now = time.monotonic()
            if now - written >= STATS_EVERY_S:
                self._write_stats(stats)
                written = now
            timeout = min(STATS_EVERY_S, max(0.0, self.held[0][0] - now)) if self.held else STATS_EVERY_S
            try:
                readable, _, _ = select.select([self.sock], [], [], timeout)
            except InterruptedError:
                continue
            now = time.monotonic()
            verdicts: list[tuple[int, int]] = []
            if readable:
                self._receive(now, verdicts)
            while self.held and self.held[0][0] <= now:
                verdicts.append((heapq.heappop(self.held)[1], NF_ACCEPT))
                self.passed += 1
            if verdicts:
                self._verdicts(verdicts)

    def _write_stats(self, path: Path) -> None:
        ordered = sorted(self.delays)
        pick = (lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]) if ordered else (lambda q: 0.0)
        data = {"at": time.monotonic(), "passed": self.passed, "dropped": self.dropped,
                "delay_ms_p50": pick(0.5), "delay_ms_p99": pick(0.99)}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queue", type=int, default=0)
    parser.add_argument("--links", required=True, help="JSON: interface -> [delay ms, jitter ms, loss]")
    parser.add_argument("--ready", required=True, type=Path)
    args = parser.parse_args()
    shaper = Shaper(args.queue, json.loads(args.links))
    shaper.bind()
    args.ready.write_text("ready")
    shaper.loop(args.ready.parent / "shaper.stats.json")


if __name__ == "__main__":
    main()
