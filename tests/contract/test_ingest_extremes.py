"""Issue 45's hardening for the routes of issue 43 (SPEC 20, docs/ingest.md): POST /api/v1/ingest, WS /ws/ingest and
the console's /api/console/instruments and /api/console/keys take extreme input on a real hub, both runtimes.

Every bad line is a rejection named by its number while the good lines of the same batch are kept (and seen in the
quote); every bad request a 4xx problem document; the hub keeps serving and logs no ERROR and no traceback. The
inputs are a fixed list (no random draw): about 300 requests a runtime, a few seconds."""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from tests.conftest import RUNTIMES, ServerProcess
from tests.contract.test_ingest import INSTRUMENT, account, get, ingest, key, problem, until

MIB = 1024 * 1024
DRAWS = int(os.environ.get("MARKET_INGEST_DRAWS") or 200)  # random batches a runtime (each over HTTP and the socket)
BIG = "9" * 4301  # one digit past CPython's int() limit for text


@pytest.fixture(scope="module", params=RUNTIMES)
def srv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data_dir = tmp_path_factory.mktemp(f"ingest-extremes-{request.param}") / "data"
    server = ServerProcess(data_dir, request.param, "--public-rate", "100000", "--trusted-proxies", "127.0.0.1",
                           "--demo-hours", "always", "--ingest-rate", "3000")
    yield server
    code = server.stop()
    assert code == 0, f"server exited with {code}:\n{server.output()}"
    log = server.output()
    assert '"level":"ERROR"' not in log and "Traceback" not in log, log[-3000:]


fresh_names = iter(f"x{n}" for n in range(1000))


def publisher(srv: ServerProcess) -> dict[str, Any]:
    """A new enterprise account with a namespace, one instrument `{ns}.x`, an ingest key and a read key, both known
    to the hub (its key refresh) when this returns."""
    ns = next(fresh_names)
    console = account(srv, f"{ns}@example.com", namespace=ns)
    assert console.post("/api/console/instruments", json={"id": f"{ns}.x", **INSTRUMENT}).status_code == 201
    out: dict[str, Any] = {"ns": ns, "id": f"{ns}.x", "console": console, "ingest": key(console, "ingest"),
                           "read": key(console)}
    assert until(lambda: ingest(srv, out["ingest"], b"").status_code == 200)
    assert until(lambda: get(srv, out["read"], "/api/v1/quotes").status_code == 200)
    return out


def quote(srv: ServerProcess, pub: dict[str, Any], volume: float) -> dict[str, Any]:
    """The instrument's quote once its volume is `volume` (with the Redis engine a batch is applied when the hub reads
    it back from the shared log: polled)."""
    path = "/api/v1/quotes/" + pub["id"]
    found = until(lambda: (r := get(srv, pub["read"], path)).status_code == 200 and r.json()["volume"] == volume
                  and r.json())
    assert found, get(srv, pub["read"], path).text
    return dict(found)


def serving(srv: ServerProcess) -> None:
    assert httpx.get(srv.base + "/readyz", timeout=10).status_code == 200


def bad_lines(iid: str, now: float) -> list[bytes]:
    """Lines each of which is one rejection."""
    tick = f'"id":"{iid}","price":80'
    lines = [b'\xff\xfe{"id":"' + iid.encode() + b'","price":80}', b'{"id":"' + iid.encode() + b'\x00","price":80}',
             b"\x00", f'{{"id":"{iid}\\u0000","price":80}}'.encode(), b"[" * 100_000, b"{" * 100_000,
             f'{{"id":"{"a" * 10_000}","price":80}}'.encode(), f'{{"id":"{iid}{"é" * 5000}","price":80}}'.encode(),
             b"[]", b'"a string"', b"42", b"null", b"true", b'{"id":"' + iid.encode() + b'","price":80}}',
             f'{{"id":"{iid}","price":80,"symbol":"X"}}'.encode()]
    for price in ("1e309", "-1e309", "-0", "0", "-0.0", "1e-400", "NaN", "Infinity", "-Infinity", BIG, f"-{BIG}",
                  "1.7e308", "1000000000000.001", str(2**64 - 1), '"80"', "true", "null", "[]", "{}", "[80]",
                  '{"v":80}', "-1", "0.001", "80.125", "1e-9"):  # the last three: finer than its 2 decimals
        lines.append(f'{{"id":"{iid}","price":{price}}}'.encode())
    for volume in ("1e308", "1000000000.5", str(2**64 - 1), "1e309", "-1", "-1e-300", "NaN", BIG, '"3"', "true", "[]",
                   "{}"):
        lines.append(f'{{{tick},"volume":{volume}}}'.encode())
    for ts in ("1e309", "-1", "0", "1e300", "-1e300", str(2**63), str(2**64 - 1), str(2**64), f"{now * 1000:.0f}",
               f"{now + 86400 * 365:.0f}", "NaN", BIG, '"garbage"', '""', '"0000-01-01"', '"0001-01-01"',
               '"0001-01-01T00:00:00+14:00"', '"9999-12-31T23:59:59-14:00"', '"10000-01-01T00:00:00Z"',
               '"+10000-01-01"', '"2026-02-30T00:00:00Z"', '"2026-11-18T10:30:00\\u0000"', "true", "[]", "{}"):
        lines.append(f'{{{tick},"ts":{ts}}}'.encode())
    for iid_value in ("1", "null", "true", "[]", "{}", f'["{iid}"]', f'{{"id":"{iid}"}}'):
        lines.append(f'{{"id":{iid_value},"price":80}}'.encode())
    lines.append(b'{"price":80}')
    lines.append(f'{{{tick},"oi":1e16}}'.encode())
    return lines


def test_every_extreme_line_is_named_and_the_good_lines_are_kept(srv: ServerProcess) -> None:
    pub = publisher(srv)
    now = time.time()
    bad = bad_lines(pub["id"], now)
    body, expected, good = [], [], 0
    for n, line in enumerate(bad):
        good += 1
        body.append(f'{{"id":"{pub["id"]}","price":{100 + good},"volume":1}}'.encode())  # ts: now
        body.append(line)
        expected.append(2 * n + 2)
    body.append(f'{{"id":"{pub["id"]}","price":99,"volume":1,"price":98,"extra":{{"a":[[1]]}}}}'.encode())
    resp = ingest(srv, pub["ingest"], b"\r\n".join(body) + b"\r\n")  # CRLF line ends
    assert resp.status_code == 200, resp.text
    answer = resp.json()
    assert [r["line"] for r in answer["rejected"]] == expected, [
        (r, bad[(r["line"] - 2) // 2][:60]) for r in answer["rejected"] if r["line"] not in expected]
    assert answer["rejectedCount"] == len(bad) and answer["accepted"] == good + 1
    assert all(isinstance(r["error"], str) and 10 < len(r["error"]) < 300 for r in answer["rejected"])
    for r in answer["rejected"]:  # the error names what is wrong with a line that is JSON
        line, error = bad[(r["line"] - 2) // 2], r["error"]
        for field in (b"volume", b"ts", b"oi"):
            if b'"%s":' % field in line and _json(line):
                assert error.startswith((field if field != b"oi" else b"board").decode()), (line, error)
        if line.endswith((b":0.001}", b":80.125}", b":1e-9}")):  # named as finer than the instrument's decimals
            assert "more decimals than this instrument's 2" in error, (line, error)
    assert quote(srv, pub, good + 1)["price"] == 98  # a repeated key: its last value (orjson's rule)
    serving(srv)


def test_the_largest_and_smallest_numbers_taken_are_served(srv: ServerProcess) -> None:
    """A price of 10^12 and 10^9 lots (the limits, docs/input-rules.md), and a price of 0.01 (the finest of its 2
    decimals): every read route of the instrument answers 200 with them (a volume past int64 used to be a 500 on
    /quotes and /kline)."""
    pub = publisher(srv)
    now = time.time()
    lines = [{"id": pub["id"], "price": 1e12, "volume": 1e9}, {"id": pub["id"], "price": 0.01, "volume": 1e9},
             {"id": pub["id"], "price": 1e12, "volume": 0}]  # ts: now (the same trading day)
    assert ingest(srv, pub["ingest"], lines).json()["accepted"] == 3
    assert quote(srv, pub, 2e9)["price"] == 1e12
    for interval in ("1m", "1h", "1d"):
        kline = get(srv, pub["read"], "/api/v1/kline/" + pub["id"], interval=interval)
        assert kline.status_code == 200 and kline.json()["series"][-1]["h"] == 1e12, kline.text
    for resolution in ("1", "D"):
        udf = get(srv, pub["read"], "/api/v1/udf/history", symbol=pub["id"], resolution=resolution,
                  **{"from": int(now) - 86400 * 5, "to": int(now) + 60})
        assert udf.status_code == 200, udf.text
    assert get(srv, pub["read"], "/api/v1/quotes").status_code == 200


def test_extreme_lines_over_the_socket_keep_the_good_ones(srv: ServerProcess) -> None:
    pub = publisher(srv)
    bad = bad_lines(pub["id"], time.time())
    texts = [line.decode() for line in bad if _utf8(line) and len(line) < 2000]  # a text frame is UTF-8 (1007)
    good = f'{{"id":"{pub["id"]}","price":70,"volume":2}}'

    async def run() -> list[dict[str, Any]]:
        async with connect(srv.ws_base + "/ws/ingest", additional_headers={"X-SERVICE-Key": pub["ingest"]}) as ws:
            answers = []
            for frame in (good + "\n" + "\n".join(texts), "\n".join(texts[::-1]) + "\r\n" + good):
                await ws.send(frame)
                answers.append(json.loads(await ws.recv()))
            return answers

    first, second = asyncio.run(run())
    assert first["accepted"] == second["accepted"] == 1
    assert [r["line"] for r in first["rejected"]] == list(range(2, len(texts) + 2))
    assert [r["line"] for r in second["rejected"]] == list(range(1, len(texts) + 1))
    assert len(texts) > 60 and quote(srv, pub, 4)


def _json(line: bytes) -> bool:
    """JSON as the hub reads it (orjson: no NaN, no number past a double)."""
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


def _utf8(line: bytes) -> bool:
    try:
        line.decode()
    except UnicodeDecodeError:
        return False
    return True


def _padded(iid: str, size: int) -> bytes:
    """One good tick line of exactly `size` bytes (a padding field the parser ignores)."""
    head = f'{{"id":"{iid}","price":81,"volume":1,"pad":"'.encode()
    return head + b"p" * (size - len(head) - 2) + b'"}'


def _chunks(body: bytes, n: int = 64 * 1024) -> Iterator[bytes]:
    for at in range(0, len(body), n):
        yield body[at:at + n]


def test_bodies_at_and_over_one_mebibyte(srv: ServerProcess) -> None:
    pub = publisher(srv)
    at = ingest(srv, pub["ingest"], _padded(pub["id"], MIB))
    assert at.status_code == 200 and at.json()["accepted"] == 1, at.text[:300]
    problem(ingest(srv, pub["ingest"], _padded(pub["id"], MIB + 1)), 413, "payload_too_large")
    problem(ingest(srv, pub["ingest"], b"\n" * (MIB + 1)), 413, "payload_too_large")
    blank = ingest(srv, pub["ingest"], b"\n" * MIB)
    assert blank.json() == {"accepted": 0, "rejected": [], "rejectedCount": 0}
    crlf = ingest(srv, pub["ingest"], b"\r\n" * (MIB // 2))
    assert crlf.json() == {"accepted": 0, "rejected": [], "rejectedCount": 0}
    one = ingest(srv, pub["ingest"], b"x" * MIB)
    assert one.json()["rejected"] == [{"line": 1, "error": one.json()["rejected"][0]["error"]}]
    many = ingest(srv, pub["ingest"], b"x\n" * (MIB // 2))
    assert many.json()["rejectedCount"] == MIB // 2 and len(many.json()["rejected"]) == 1000
    headers = {"X-SERVICE-Key": pub["ingest"], "content-type": "application/x-ndjson"}
    chunked = httpx.post(srv.base + "/api/v1/ingest", content=_chunks(_padded(pub["id"], MIB)), headers=headers,
                         timeout=30)
    assert "content-length" not in chunked.request.headers  # sent chunked
    assert chunked.status_code == 200 and chunked.json()["accepted"] == 1, chunked.text[:300]
    over = httpx.post(srv.base + "/api/v1/ingest", content=_chunks(b"\n" * (MIB + 1)), headers=headers, timeout=30)
    problem(over, 413, "payload_too_large")
    assert quote(srv, pub, 2)
    serving(srv)


@pytest.mark.parametrize("ctype", [None, "", "text/plain", "application/json", "application/x-ndjson-x",
                                   "application/x-ndjson\u00e9", ";", "application/x-ndjson," * 500])
def test_a_missing_or_odd_content_type_is_415(srv: ServerProcess, ctype: str | None) -> None:
    pub = shared_publisher(srv)
    headers: dict[str, Any] = {"X-SERVICE-Key": pub["ingest"]}
    if ctype is not None:
        headers["content-type"] = ctype.encode()
    resp = httpx.post(srv.base + "/api/v1/ingest", content=b'{"id":"%s","price":1}' % pub["id"].encode(),
                      headers=headers, timeout=10)
    problem(resp, 415, "unsupported_media_type")


@pytest.mark.parametrize("ctype", ["application/x-ndjson; charset=utf-8", "APPLICATION/X-NDJSON",
                                   "application/jsonl", "application/json-lines ; q=1"])
def test_the_json_lines_media_types_are_taken(srv: ServerProcess, ctype: str) -> None:
    pub = shared_publisher(srv)
    resp = httpx.post(srv.base + "/api/v1/ingest", content=b'{"id":"%s","price":1}' % pub["id"].encode(),
                      headers={"X-SERVICE-Key": pub["ingest"], "content-type": ctype}, timeout=10)
    assert resp.status_code == 200 and resp.json()["accepted"] == 1, resp.text


@pytest.mark.parametrize("query", ["x=1", "id=a", "%00=1", "a=%00", "&&", "=", "&=&", "x" * 4000 + "=1"])
def test_a_query_on_the_ingest_route_is_400(srv: ServerProcess, query: str) -> None:
    pub = shared_publisher(srv)
    resp = httpx.post(f"{srv.base}/api/v1/ingest?{query}", content=b'{"id":"%s","price":1}' % pub["id"].encode(),
                      headers={"X-SERVICE-Key": pub["ingest"], "content-type": "application/x-ndjson"}, timeout=10)
    if query in ("&&", "=", "&=&"):  # no parameter at all (neither a name nor a value): taken, on both runtimes
        assert resp.status_code == 200 and resp.json()["accepted"] == 1, resp.text
    else:
        assert problem(resp, 400, "unknown_parameter")["errors"][0]["field"], resp.text


_SHARED: dict[str, dict[str, Any]] = {}


def shared_publisher(srv: ServerProcess) -> dict[str, Any]:
    if srv.base not in _SHARED:
        _SHARED[srv.base] = publisher(srv)
    return _SHARED[srv.base]


async def _socket(srv: ServerProcess, secret: str, **kw: Any) -> Any:
    return await connect(srv.ws_base + "/ws/ingest", additional_headers={"X-SERVICE-Key": secret}, **kw)


def test_odd_frames_on_the_ingest_socket(srv: ServerProcess) -> None:
    """A binary frame is an error frame and the session goes on; an empty frame an empty answer; a batch sent in
    fragments one batch; a line that is not UTF-8 a rejected line (as over HTTP); a frame over 64 KiB closes with
    1009, nothing of it kept; a session closed mid-batch (its last fragment never sent) keeps nothing of that batch."""
    pub = publisher(srv)
    tick = f'{{"id":"{pub["id"]}","price":75,"volume":1}}'

    async def run() -> list[Any]:
        out: list[Any] = []
        async with await _socket(srv, pub["ingest"]) as ws:
            await ws.send(tick.encode())  # binary
            out.append(json.loads(await ws.recv()))
            for frame in ("", "\n", "\r\n" * 1000, " " * 65536):
                await ws.send(frame)
                out.append(json.loads(await ws.recv()))
            await ws.send([tick[:10], tick[10:] + "\n", tick, "\nnope"])  # fragments of one text message
            out.append(json.loads(await ws.recv()))
            await ws.send(b"\xff" + tick.encode() + b"\n" + tick.encode(), text=True)  # a line that is not UTF-8
            out.append(json.loads(await ws.recv()))
        async with await _socket(srv, pub["ingest"]) as ws:
            await ws.send(tick + "\n" + " " * 65536)
            with pytest.raises(ConnectionClosed) as closed:
                await ws.recv()
            out.append(closed.value.rcvd.code if closed.value.rcvd else None)
        ws = await _socket(srv, pub["ingest"])
        fragments = _never_ending(tick)
        sent = asyncio.ensure_future(ws.send(fragments))
        await asyncio.sleep(0)  # let the first fragments go out (no event to await: the send never completes)
        ws.transport.abort()
        sent.cancel()
        return out

    out = asyncio.run(run())
    assert out[0]["type"] == "error" and out[0]["code"] == "unsupported_binary"
    assert out[1:5] == [{"accepted": 0, "rejected": [], "rejectedCount": 0}] * 4
    assert out[5]["accepted"] == 2 and out[5]["rejected"][0]["line"] == 3
    assert out[6]["accepted"] == 1 and out[6]["rejected"] == [{"line": 1, "error": out[6]["rejected"][0]["error"]}]
    assert out[7] == CloseCode.MESSAGE_TOO_BIG
    assert ingest(srv, pub["ingest"], [tick]).json()["accepted"] == 1  # after the aborted batch, on the same loop
    assert quote(srv, pub, 4)
    serving(srv)


async def _never_ending(tick: str) -> Any:
    yield tick + "\n"
    yield tick
    await asyncio.Event().wait()


def test_a_flood_of_batches_is_answered_batch_by_batch(srv: ServerProcess) -> None:
    """600 frames of 20 ticks each, sent without waiting (a reader takes the answers as they come): every frame gets
    its answer, in order; past the account's bucket (--ingest-rate 3000) they are 429 with retryAfter and nothing of
    them is kept, and the quote's volume is exactly the sum of the accepted ones."""
    pub = publisher(srv)
    frames = ["\n".join(f'{{"id":"{pub["id"]}","price":{50 + k % 7},"volume":1}}'
                        for k in range(n * 20, n * 20 + 20)) for n in range(600)]

    async def run() -> list[dict[str, Any]]:
        async with await _socket(srv, pub["ingest"]) as ws:
            async def read() -> list[dict[str, Any]]:
                return [json.loads(await ws.recv()) for _ in frames]
            reader = asyncio.ensure_future(read())
            for frame in frames:
                await ws.send(frame)
            return await reader

    answers = asyncio.run(run())
    accepted = sum(a.get("accepted", 0) for a in answers)
    refused = [a["error"] for a in answers if "error" in a]
    assert all(a == {"accepted": 20, "rejected": [], "rejectedCount": 0} for a in answers if "error" not in a)
    assert refused and all(e["status"] == 429 and e["retryAfter"] >= 1 for e in refused)
    assert accepted >= 3000 and accepted + 20 * len(refused) == 12000
    assert quote(srv, pub, accepted)
    serving(srv)


def test_a_client_that_floods_without_reading(srv: ServerProcess) -> None:
    """A client that sends empty batches and never reads their answers: the hub closes it as a slow consumer
    (4008) once its unread answers pass the hard cap, or answers them all; either way it keeps serving and the
    ticks of the batches it answered are kept."""
    pub = shared_publisher(srv)

    async def run() -> tuple[int | None, int]:
        ws = await _socket(srv, pub["ingest"], max_queue=1)
        answered = 0
        try:
            for _ in range(20000):
                await ws.send("\n")
            await ws.send(f'{{"id":"{pub["id"]}","price":76}}')
            for _ in range(20001):
                answered += bool(await ws.recv())
            return None, answered
        except ConnectionClosed as exc:
            return (exc.rcvd.code if exc.rcvd else None), answered
        finally:
            await ws.close()

    code, answered = asyncio.run(asyncio.wait_for(run(), 60))
    assert code == 4008 or (code is None and answered == 20001), (code, answered)
    serving(srv)


VALUES = ["1", "80.25", "-0", "0", "1e12", "1e13", "1e9", "1e-9", "1e309", "NaN", "-1", BIG, "true", "null", '""',
          '"x"', "[]", "{}", '"1971-01-01T00:00:00+08:00"', '"2026-W48-1"', '"9999-12-31T23:59:59Z"', str(2**64),
          '"\\u0000"', '"' + "é" * 300 + '"']


def _random_line(rng: random.Random, iid: str) -> bytes:
    """A line of random fields (each maybe left out) drawn from VALUES, or raw noise."""
    if rng.random() < 0.1:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))).replace(b"\n", b"")
    fields = {"id": rng.choice([json.dumps(iid), *VALUES]), "price": rng.choice(VALUES), "volume": rng.choice(VALUES),
              "ts": rng.choice(VALUES), "oi": rng.choice(VALUES)}
    kept = [f'"{k}":{v}' for k, v in fields.items() if k in ("id", "price") or rng.random() < 0.4]
    return ("{" + ",".join(kept) + "}").encode()


def test_random_batches_are_answered_line_by_line(srv: ServerProcess) -> None:
    """DRAWS batches of 1-30 random lines (seeded), each over HTTP and then over the socket: every answer counts each
    non-blank line once (accepted + rejectedCount), names the rejected lines by number, and the quote's volume is the
    sum of the accepted lines' volumes (those without one: 0)."""
    pub, rng = publisher(srv), random.Random(45)
    lines_sent, accepted, volume = 0, 0, 0.0
    http_answers, batches = [], []
    for _ in range(DRAWS):
        batch = [_random_line(rng, pub["id"]) for _ in range(rng.randrange(1, 31))]
        batches.append(batch)
        resp = ingest(srv, pub["ingest"], b"\n".join(batch))
        assert resp.status_code == 200, resp.text
        http_answers.append(resp.json())

    async def over_socket() -> list[dict[str, Any]]:
        async with await _socket(srv, pub["ingest"]) as ws:
            answers = []
            for batch in batches:
                await ws.send(b"\n".join(batch).decode(errors="replace"))
                answers.append(json.loads(await ws.recv()))
            return answers

    for batch, answer in zip(batches * 2, http_answers + asyncio.run(over_socket()), strict=True):
        assert "error" not in answer, answer
        blank = sum(1 for line in batch if not line.strip())
        assert answer["accepted"] + answer["rejectedCount"] == len(batch) - blank, (batch, answer)
        assert all(1 <= r["line"] <= len(batch) for r in answer["rejected"])
        taken = set(range(1, len(batch) + 1)) - {r["line"] for r in answer["rejected"]}
        lines_sent += len(batch)
        accepted += answer["accepted"]
        volume += sum(orjson.loads(batch[n - 1]).get("volume", 0) for n in taken if batch[n - 1].strip())
    assert accepted > 0 and accepted < lines_sent  # the draw hit both kinds
    quote(srv, pub, volume)
    serving(srv)
