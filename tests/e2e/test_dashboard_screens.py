"""The dashboard as a trader sees it on a laptop (1440x900) and a phone (390x844), in English and Chinese, with the
browser in UTC (issue 14): every time labelled with its zone, every table readable at 390 px, spreads named with
units and the import-parity formula, the chart's legend, volume scale and Chinese axis, the Markets cards on the
live prices, a stopped server named as such. Screenshots go to test-artifacts/dashboard-screen-*.png.

Each viewport is one page load (the key from local storage), switched between languages in place; the tests of
this module share those two pages and set the language they need.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess
from tests.e2e.conftest import ARTIFACTS, needs_chromium

pytest.importorskip("playwright.sync_api", reason="the playwright package (dev extra) is not installed")

pytestmark = needs_chromium
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
ZONE = re.compile(r"(UTC[+-]\d|北京时间)")
CJK = re.compile(r"[\u4e00-\u9fff]")

# what can be checked in the page itself (clipped, past the viewport, unlabelled, untranslated): a list of problems
AUDIT = "\n".join(line for line in Path(__file__).with_name("audit.js").read_text().splitlines()
                  if not line.startswith("//"))


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data_dir = tmp_path_factory.mktemp("screens") / "data"
    server = ServerProcess(data_dir, "granian", "--tick-interval-ms", "100", "--public-rate", "100000")
    yield server
    assert server.stop() == 0, server.output()


class Screen:
    """One page per viewport, the browser in UTC, the key already in local storage."""

    def __init__(self, browser: Any, srv: ServerProcess, viewport: dict[str, int], key: str) -> None:
        self.viewport = viewport
        self.context = browser.new_context(viewport=viewport, base_url=srv.base, timezone_id="UTC", locale="en-GB")
        self.context.add_init_script(f"if (!sessionStorage.getItem('seeded')) {{ sessionStorage.setItem('seeded', '1');"
                                     f" localStorage.setItem('market.apiKey', '{key}');"
                                     f" localStorage.setItem('market.lang', 'en'); }}")
        self.page = self.context.new_page()
        self.page.set_default_timeout(15000)  # generous: the suite shares 2 cores
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.goto("/")
        self.page.wait_for_selector("[data-testid=conn-status][data-mode=live]")
        self.page.wait_for_selector("#chart[data-candles]")
        self.page.wait_for_selector("[data-testid=spreads] tbody tr[data-pair]")
        self.page.wait_for_selector("[data-testid=inventory] tbody tr[data-id]")
        self.page.wait_for_selector("[data-testid=news] li[data-id]")
        self.page.wait_for_selector("[data-testid=research] li[data-id]")

    def lang(self, lang: str) -> Any:
        if self.page.evaluate("document.documentElement.lang") != ("zh-CN" if lang == "zh" else "en"):
            self.page.click("[data-testid=lang-toggle]")
        return self.page

    def audit(self, lang: str) -> list[str]:
        return self.page.evaluate(AUDIT, lang)

    def shot(self, name: str) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"dashboard-screen-{name}.png"), full_page=True)


@pytest.fixture(scope="module")
def desk(browser: Any, srv: ServerProcess) -> Iterator[Screen]:
    screen = Screen(browser, srv, DESKTOP, srv.demo_key)
    yield screen
    screen.context.close()


@pytest.fixture(scope="module")
def phone(browser: Any, srv: ServerProcess) -> Iterator[Screen]:
    screen = Screen(browser, srv, PHONE, srv.demo_key)
    yield screen
    screen.context.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_desktop_screen_has_nothing_clipped_overlapping_unlabelled_or_untranslated(desk: Screen, lang: str) -> None:
    desk.lang(lang)
    desk.page.wait_for_function("() => document.querySelector('#chart').dataset.axisLabels")
    assert desk.audit(lang) == []
    assert desk.page.is_hidden("[data-testid=scroll-cue]")  # all 11 spread columns fit at 1440 px
    assert desk.page.is_hidden("[data-testid=key-help]")  # shown only to those without a key
    desk.shot(f"1440-{lang}")
    assert desk.errors == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_phone_screen_keeps_units_times_and_whole_numbers_at_390px(phone: Screen, lang: str) -> None:
    page = phone.lang(lang)
    assert phone.audit(lang) == []
    # the unit and time columns give way to a line under the name: the unit is still beside every price
    assert page.is_hidden("#live-body tr[data-id=brent] td.unit")
    sub = page.inner_text("#live-body tr[data-id=brent] .sub")
    assert ("USD/bbl" if lang == "en" else "美元/桶") in sub and ZONE.search(sub), sub
    # inventory week on week: the whole number and its percentage, nothing cut
    wow = page.inner_text("[data-testid=inventory] tbody tr:first-child td.wow")
    assert re.search(r"[+-]\d+\.\d\s*\([+-]\d+\.\d\d%\)", wow), wow
    # the spreads scroll sideways and say so; the product column stays put
    cue = page.locator("[data-testid=scroll-cue]")
    assert cue.is_visible() and ("11" in cue.inner_text())
    assert page.get_attribute("#spreads-wrap", "data-more") == "right"
    page.eval_on_selector("#spreads-scroll",
                          "b => { b.scrollLeft = b.scrollWidth; b.dispatchEvent(new Event('scroll')); }")
    assert page.get_attribute("#spreads-wrap", "data-more") == "left"
    assert page.eval_on_selector("#spreads-body tr td.name", "td => td.getBoundingClientRect().left") >= 0
    page.eval_on_selector("#spreads-scroll", "b => { b.scrollLeft = 0; b.dispatchEvent(new Event('scroll')); }")
    phone.shot(f"390-{lang}")
    assert phone.errors == []


def test_the_viewers_time_is_written_the_same_at_every_hour_of_the_day(desk: Screen) -> None:
    """Fixed instants, not the clock: hours 0-9 were written with one digit ("0:48:35", sv-SE's defaults with
    only timeZoneName set, in Chromium), so the tooltip's format depended on when the test ran."""
    page = desk.lang("en")
    out = page.evaluate("""async () => {
        const { viewerTime } = await import('/static/quotes.js');
        const i18n = { t: (key, vars) => `${key}|${vars.t}` };
        return ['2026-11-27T08:48:35+08:00', '2026-11-27T00:00:00Z', '2026-11-26T23:59:59.999Z',
                '2026-03-01T09:05:07+08:00', '2026-11-27T17:05:09+08:00', '2026-07-04T12:00:00Z', 'not a time',
                null]
            .map((iso) => viewerTime(iso, i18n));
    }""")
    assert out == ["localTime|2026-11-27 00:48:35 UTC", "localTime|2026-11-27 00:00:00 UTC",
                   "localTime|2026-11-26 23:59:59 UTC", "localTime|2026-03-01 01:05:07 UTC",
                   "localTime|2026-11-27 09:05:09 UTC", "localTime|2026-07-04 12:00:00 UTC", "", ""]


def test_times_carry_their_zone_and_the_viewers_time_on_hover_in_a_utc_browser(desk: Screen) -> None:
    page = desk.lang("en")
    assert page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone") == "UTC"
    assert page.inner_text(".quotes th:last-child") == "Time (UTC+8)"
    cell = page.eval_on_selector("#live-body tr[data-id=brent] td.time", "td => [td.textContent, td.title]")
    clock, title = cell
    local = re.fullmatch(r"Your time: \d{4}-\d\d-\d\d (\d\d):(\d\d):(\d\d) UTC", title)
    assert local, title
    hh, mm, ss = (int(x) for x in clock.split(":"))
    assert (int(local.group(1)), int(local.group(2)), int(local.group(3))) == ((hh - 8) % 24, mm, ss)
    news_time = page.eval_on_selector("[data-testid=news] time", "t => [t.textContent, t.title]")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC\+8", news_time[0]), news_time
    assert re.fullmatch(r"Your time: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", news_time[1]), news_time
    # the trading-day rule where the candles are
    rule = page.inner_text("[data-testid=trading-day]")
    assert "own venue" in rule and "holidays" in rule and "Friday night toward Monday" in rule
    page = desk.lang("zh")
    assert page.inner_text(".quotes th:last-child") == "时间（UTC+8）"  # one zone label in both languages
    assert page.inner_text("[data-testid=news] time").endswith(" UTC+8")
    assert "周五夜盘计入下周一" in page.inner_text("[data-testid=trading-day]")


def test_spreads_name_the_markets_with_units_and_the_parity_formula(desk: Screen, srv: ServerProcess) -> None:
    page = desk.lang("en")
    spreads = httpx.get(srv.base + "/api/v1/spreads", headers={"X-SERVICE-Key": srv.demo_key}).json()["spreads"]
    heads = page.locator("[data-testid=spreads] thead th").all_inner_texts()
    heads = [" ".join(h.split()) for h in heads]
    assert heads[:4] == ["Product", "Futures CNY/t", "East China spot CNY/t", "CFR China USD/t"], heads
    assert heads[7:10] == ["Port fee CNY/t", "Import parity CNY/t", "Basis CNY/t"], heads
    assert "Domestic" not in " ".join(heads)
    assert page.get_attribute("#parity-head", "title").startswith("Import parity = CFR China (USD/t) × USD/CNY")
    for s in spreads:
        row = f"#spreads-body tr[data-pair={s['pair']}]"
        contract = page.inner_text(f"{row} .contract")  # e.g. "ZCE MA": the same market the API's note names
        assert f"shfe = {contract} main contract futures" in s["note"], (contract, s["note"])
        assert "not a Shanghai Futures Exchange price" in s["note"]
        spot_title = page.get_attribute(f"{row} td:nth-child(3)", "title")
        assert f"dce = {spot_title}" in s["note"], (spot_title, s["note"])
        # the formula with this row's own numbers (the page may hold an older copy than this request's)
        cells = page.locator(f"{row} td").all_inner_texts()
        parity = page.get_attribute(f"{row} td.parity", "title")
        assert parity == (f"Import parity = {cells[3]} USD/t × {cells[4]} × (1 + {cells[5]}) × (1 + {cells[6]}) "
                          f"+ {cells[7]} CNY/t = {cells[8]} CNY/t"), (parity, cells)
        assert cells[5] == f"{s['tariff'] * 100:.1f}%" and cells[7] == f"{s['portFee']:.0f}"
    page = desk.lang("zh")
    assert " ".join(page.inner_text("[data-testid=spreads] thead th:nth-child(2)").split()) == "期货 元/吨"
    assert page.get_attribute("#spreads-body tr[data-pair=PP] td.parity", "title").startswith("进口成本 = ")
    assert page.inner_text("#spreads-body tr[data-pair=PP] .contract") == "大商所 PP"


def test_chart_shows_ohlc_and_volume_on_hover_with_its_own_volume_scale(desk: Screen, srv: ServerProcess) -> None:
    page = desk.lang("en")
    page.select_option("[data-testid=chart-select]", "methanol")
    page.wait_for_selector("#chart[data-instrument=methanol]")
    series = httpx.get(srv.base + "/api/v1/kline/methanol",
                       headers={"X-SERVICE-Key": srv.demo_key}).json()["series"]
    bars = {c["t"]: c for c in series}
    # volume has a pane of its own (candles, separator, volume, time axis): its price scale has labels
    assert page.eval_on_selector("#chart", "c => c.querySelectorAll('table tr').length") >= 4
    box = page.locator("#chart").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.4, box["y"] + box["height"] * 0.3)
    page.wait_for_selector("#chart-legend[data-hover=true]")
    legend = page.inner_text("#chart-legend")
    day = page.get_attribute("#chart-legend", "data-time")
    bar = bars[day]
    assert legend.split() == [day, "O", f"{bar['o']:,.2f}", "H", f"{bar['h']:,.2f}", "L", f"{bar['l']:,.2f}",
                              "C", f"{bar['c']:,.2f}", "Vol", f"{bar['v']:,.0f}"], legend
    page.mouse.move(0, 0)  # away: the legend shows the live (last) candle
    page.wait_for_selector("#chart-legend[data-hover=false]")
    assert page.get_attribute("#chart-legend", "data-time") == series[-1]["t"]
    page = desk.lang("zh")
    assert page.inner_text("#chart-legend").split()[1] == "开"
    labels = page.get_attribute("#chart", "data-axis-labels").split("|")
    assert any(label.endswith("月") for label in labels), labels
    assert not {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"} & set(labels)
    desk.page.locator(".chart-panel").screenshot(path=str(ARTIFACTS / "dashboard-screen-chart-zh.png"))


def test_markets_cards_show_the_same_prices_as_the_live_table(desk: Screen) -> None:
    page = desk.lang("en")
    assert page.get_attribute("#markets-note", "data-source") == "live"
    assert page.inner_text("#markets-note").startswith("Prices follow your live feed")
    page.wait_for_function("() => document.querySelector('#categories tr[data-id=brent]').dataset.live === 'true'")
    # read in one task: both are written by the same tick handler
    pairs = page.evaluate("""() => [...document.querySelectorAll('#live-body tr[data-id]')].map(r => {
        const card = document.querySelector(`#categories tr[data-id="${r.dataset.id}"] td.price`);
        return [r.dataset.id, r.cells[1].textContent, card ? card.firstChild.textContent : null];
    }).filter(([, , card]) => card !== null)""")
    assert len(pairs) >= 40
    assert [(i, live) for i, live, _ in pairs] == [(i, card) for i, _, card in pairs]
    assert page.inner_text("#categories tr[data-id=brent] td.price .unit") == "USD/bbl"
    page = desk.lang("zh")
    assert page.inner_text("#categories tr[data-id=brent] td.price .unit") == "美元/桶"
    assert page.inner_text("#markets-note").startswith("价格随您的实时行情更新")
    tags = page.locator("[data-testid=news] .tag").all_inner_texts()
    assert tags and all(CJK.search(t) or t.isupper() for t in tags), tags
    assert set(page.locator("[data-testid=news] .source").all_inner_texts()) == {"市场快讯（演示）"}


def test_no_key_page_says_where_keys_come_from(browser: Any, srv: ServerProcess) -> None:
    context = browser.new_context(viewport=PHONE, base_url=srv.base)
    try:
        page = context.new_page()
        page.set_default_timeout(15000)
        page.goto("/")
        page.wait_for_selector("[data-testid=category]")
        help_text = page.inner_text("[data-testid=key-help]")
        assert page.get_attribute("[data-testid=trial-link]", "href") == "/console"  # the CLI hint is in /docs
        assert "Get a free trial key" in help_text
        assert all(plan in help_text for plan in ("free", "professional", "enterprise"))
        # the public snapshot says what it is, in the page's units
        note = page.inner_text("#markets-note")
        assert note.startswith("Public snapshot, refreshed every 60 s") and ZONE.search(note), note
        assert page.get_attribute("#markets-note", "data-source") == "snapshot"
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator(".keybar").screenshot(path=str(ARTIFACTS / "dashboard-screen-no-key-390.png"))
    finally:
        context.close()


def test_a_stopped_server_is_named_unreachable_and_prices_are_dimmed(browser: Any,
                                                                     tmp_path_factory: pytest.TempPathFactory) -> None:
    server = ServerProcess(tmp_path_factory.mktemp("down") / "data", "granian", "--tick-interval-ms", "200")
    context = browser.new_context(viewport=DESKTOP, base_url=server.base, timezone_id="UTC")
    try:
        page = context.new_page()
        page.set_default_timeout(15000)
        page.goto("/")
        page.fill("[data-testid=key-input]", server.demo_key)
        page.click("[data-testid=key-submit]")
        page.wait_for_selector("[data-testid=conn-status][data-mode=live]", timeout=15000)
        assert page.get_attribute(".quotes-panel", "data-stale") == "false"
        assert server.stop() == 0, server.output()
        # the socket drops, two reconnects fail, then a poll finds no server at all: "offline", not "fallback"
        page.wait_for_selector("[data-testid=conn-status][data-mode=offline]", timeout=20000)
        page.wait_for_selector("[data-testid=error] p[data-status='0']")
        banner = page.inner_text("[data-testid=error]")
        assert page.locator("[data-testid=error] p").count() == 1, banner  # said once, not per part of the page
        status = page.inner_text("[data-testid=status]")
        assert "Cannot reach the server: no answer" in banner, banner
        conn = page.inner_text("[data-testid=conn-status]")  # the markets' state is beside it, on its own
        assert conn.startswith("Server unreachable · retrying in"), status
        assert "not a refusal" in page.inner_text("[data-testid=mode-hint]")
        for text in (banner, status):
            assert "403" not in text and "429" not in text and "refus" not in text.replace("not a refusal", "")
        assert page.get_attribute(".quotes-panel", "data-stale") == "true"
        page.wait_for_function("() => parseFloat(getComputedStyle(document.querySelector('#live-body')).opacity) < 0.8")
        assert page.get_attribute("#categories", "data-live-stale") == "true"  # the cards showed the same prices
        assert page.eval_on_selector("#categories tr[data-id=brent]", "r => getComputedStyle(r).opacity") == "0.5"
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "dashboard-screen-server-down.png"))
    finally:
        context.close()
        server.kill()
