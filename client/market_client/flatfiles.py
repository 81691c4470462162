"""Flat-file downloads (SPEC 18) that resume and verify: a closed trading day's file, written to
``<dir>/<dataset>-<date>.<format>`` (a venue's own file: ``<dir>/<venue>-<dataset>-<date>.<format>``).

    with MarketClient(key="mk_...") as api:
        for entry in api.flatfiles("ticks", start="2026-11-02", end="2026-11-06").files:
            path = api.download_flatfile(entry, "data/")

The bytes go to ``<name>.part`` as they arrive. A broken download (a dropped connection, a killed process) is
resumed from the bytes already held, with ``Range: bytes=N-`` and ``If-Range`` naming the file's sha256 (its
ETag): if the server's file is another one, it sends the whole file and the part is started over. Once all
bytes are held, their sha256 must be the listing's, else the part is deleted and ``ChecksumMismatch`` raised;
only then is the part renamed to its name. A file already held with the right sha256 is not fetched again.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

import httpx

from market_client import models as m
from market_client.errors import ChecksumMismatch, RateLimited, TransportError, problem_error, retry_after_seconds

CHUNK = 1 << 20


def target_path(entry: m.FlatFile, directory: str | os.PathLike[str]) -> Path:
    venue = f"{entry.venue}-" if entry.venue else ""
    return Path(directory) / f"{venue}{entry.dataset}-{entry.date.isoformat()}.{entry.format}"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while piece := fh.read(CHUNK):
            h.update(piece)
    return h.hexdigest()


def download(http: httpx.Client, url: str, headers: dict[str, str], entry: m.FlatFile,
             directory: str | os.PathLike[str], attempts: int = 5, max_retry_wait: float = 60.0) -> Path:
    """Fetch `entry` into `directory` (see the module docstring); `url` is the server's base URL, `headers` carry
    the key. Up to `attempts` requests, each resuming where the last one broke."""
    target = target_path(entry, directory)
    if target.exists() and target.stat().st_size == entry.bytes and sha256_of(target) == entry.sha256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    for _ in range(attempts):
        held = part.stat().st_size if part.exists() else 0
        if held > entry.bytes:  # not this file's beginning
            part.unlink()
            held = 0
        if held == entry.bytes:
            break
        ask = dict(headers)
        if held:
            ask.update({"Range": f"bytes={held}-", "If-Range": f'"{entry.sha256}"'})
        try:
            wait = _fetch(http, url + entry.url, ask, part)
        except httpx.TransportError:
            continue  # resumed by the next attempt
        if wait is not None:
            if wait > max_retry_wait:
                raise RateLimited({"code": "rate_limited", "detail": f"retry after {wait} s"}, 429)
            time.sleep(wait)
    else:
        raise TransportError(f"{entry.url}: not complete after {attempts} attempts")
    if sha256_of(part) != entry.sha256:
        part.unlink()
        raise ChecksumMismatch(f"{entry.url}: the bytes received do not have the sha256 {entry.sha256}")
    os.replace(part, target)
    return target


def _fetch(http: httpx.Client, url: str, headers: dict[str, str], part: Path) -> float | None:
    """One request: append a 206 to the part, start it over on a 200; the seconds to wait on a 429."""
    with http.stream("GET", url, headers=headers) as r:
        if r.status_code == 416:  # the part is longer than the server's file: start over
            part.unlink(missing_ok=True)
            return 0.0
        if r.status_code not in (200, 206):
            r.read()
            problem = _problem(r)
            error = problem_error(r.status_code, problem, r.headers)
            if isinstance(error, RateLimited):
                wait = retry_after_seconds(r.headers, problem)
                return 1.0 if wait is None else wait
            raise error
        with open(part, "ab" if r.status_code == 206 else "wb") as fh:
            for piece in r.iter_bytes():  # as it arrives: a broken download keeps what came
                fh.write(piece)
    return None


def _problem(r: httpx.Response) -> dict[str, Any]:
    try:
        doc = r.json()
    except ValueError:
        doc = None
    return doc if isinstance(doc, dict) else {"status": r.status_code, "detail": r.text[:200]}

