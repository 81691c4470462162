"""server/store/history/threads.py: the hub's view of the history (ticks submitted on the loop, candles written and read
on storage threads), on SQLite."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from server.store.history.archive import TickArchive
from server.store.history.candle_store import CandleStore, Page
from server.store.history.threads import History
from server.store.sql.storage import StorageClosed

T0 = 1_790_000_040_000


def test_history_round_trip(tmp_path: Path) -> None:
    h = History.sqlite(tmp_path, interval_s=0.02)
    loop_thread = threading.get_ident()

    async def main() -> tuple[Page, int | None, dict[str, int]]:
        assert h.submit_ticks([("brent", T0 + k, k + 1, 80.0, 1.0) for k in range(100)])
        await h.put_closed("1m", [("brent", T0 + k * 60_000, 1, 2, 0.5, 1.5, 3) for k in range(5)])

        def page(candles: CandleStore, archive: TickArchive) -> Page:
            assert threading.get_ident() != loop_thread
            return candles.range("1m", "brent", T0, T0 + 10**9, 3)

        got = await h.read(page)
        assert h.writer.flush(5.0)
        first = await h.read(lambda c, a: a.earliest("brent"))
        pruned = await h.prune(T0 / 1000 + 400 * 86_400)
        return got, first, pruned

    page, first, pruned = asyncio.run(main())
    assert [r[1] for r in page.rows] == [T0, T0 + 60_000, T0 + 120_000] and page.next == T0 + 180_000
    assert first == T0 and pruned["ticks"] == 100 and pruned["1m"] == 5
    assert h.stats().committed == 100 and h.writable
    assert h.close() and h.close()
    with pytest.raises(StorageClosed):
        h.read_blocking(lambda c, a: None)


def test_history_close_commits_submitted(tmp_path: Path) -> None:
    h = History.sqlite(tmp_path, interval_s=10.0)
    h.submit_ticks([("wti", T0, 1, 70.0, 1.0)])
    assert h.close()
    h2 = History.sqlite(tmp_path)
    assert h2.read_blocking(lambda c, a: a.last()) == (T0, 1)
    h2.write_blocking(lambda c, a: c.put_closed("1d", [("wti", T0, 1, 1, 1, 1, 1)]))
    assert h2.read_blocking(lambda c, a: c.earliest("1d", "wti")) == T0
    h2.close()
