"""Venues as data: time zones, session templates, trading-day closes and calendar sources.

Pure data plus validation; ``server.market.venues.clock`` turns a venue and a session
template into trading days, sessions and statuses. Sources for every number here are
listed in docs/venues.md.

A session template is a list of windows relative to a trading day D. A window is
``(start_offset_days, "HH:MM", end_offset_days, "HH:MM")`` in the venue's zone:

- ``day`` windows are anchored on D itself (CME's ``(-1, "17:00", 0, "16:00")`` opens
  on the calendar day before D, whatever that day is);
- ``night`` windows are anchored on the previous trading day P (a Chinese night session
  on the evening of P, Friday for a Monday) and are held only when the calendar days
  strictly between P and D are none or exactly a Saturday and a Sunday (SPEC 16).

The tables are read-only mappings (``MappingProxyType``): data, not state.

Invariant: the windows of one template, laid out for one trading day, are ordered and do
not overlap, and every window ends at or before the trading-day close plus the grace.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

Localised = dict[str, str]
WindowSpec = tuple[int, str, int, str]


class Publication(StrEnum):
    CONTINUOUS = "continuous"
    DAILY = "daily"
    MONTHLY = "monthly"


class CalendarKind(StrEnum):
    PRC = "prc"  # chinese-calendar: PRC statutory holidays, weekends closed
    PRC_WORKDAYS = "prc-workdays"  # chinese-calendar, make-up weekend workdays open (CFETS)
    FINANCIAL = "financial"  # holidays.financial_holidays(code)
    WEEKDAYS = "weekdays"  # Monday to Friday, no holidays (global FX)
    MONTH_FIRSTS = "month-firsts"  # the first calendar day of every month (monthly prices)


@dataclass(frozen=True, slots=True)
class SessionTemplate:
    id: str
    day: tuple[WindowSpec, ...]
    night: tuple[WindowSpec, ...] = ()
    monday: tuple[WindowSpec, ...] = ()  # replaces ``day`` on Mondays when given (ICE's Sunday-evening open)


@dataclass(frozen=True, slots=True)
class VenueSpec:
    id: str
    name: Localised
    zone: str
    publication: Publication
    calendar: CalendarKind
    close: tuple[int, str]  # (day offset from D, "HH:MM"): the trading day's close
    session: str  # default session template id
    calendar_code: str = ""  # FINANCIAL: the holidays package's market code
    rules_known_until: str = ""  # FINANCIAL/WEEKDAYS: ISO date the venue's rules are trusted to
    assessment: str = ""  # DAILY/MONTHLY: "HH:MM" the print is published (a window's end)
    sources: tuple[str, ...] = field(default=())


def _l(zh: str, en: str) -> Localised:
    return {"zh": zh, "en": en}


_CN_DAY: tuple[WindowSpec, ...] = ((0, "09:00", 0, "10:15"), (0, "10:30", 0, "11:30"), (0, "13:30", 0, "15:00"))

SESSIONS: Mapping[str, SessionTemplate] = MappingProxyType({t.id: t for t in (
    # Chinese commodity futures: day session only (ZCE urea)
    SessionTemplate("cn-day", _CN_DAY),
    # most energy and chemical products on SHFE, INE, DCE and ZCE: night 21:00-23:00
    SessionTemplate("cn-night-2300", _CN_DAY, ((0, "21:00", 0, "23:00"),)),
    # INE crude oil (SC): night 21:00-02:30 the next calendar day
    SessionTemplate("cn-night-0230", _CN_DAY, ((0, "21:00", 1, "02:30"),)),
    # ICE Futures Europe Brent: 01:00-23:00 London, opening at 23:00 on Sundays
    SessionTemplate("ice-eu", ((0, "01:00", 0, "23:00"),), monday=((-1, "23:00", 0, "23:00"),)),
    # CME Globex energy: 17:00 the day before to 16:00 Chicago, a 60-minute halt each day
    SessionTemplate("cme-globex", ((-1, "17:00", 0, "16:00"),)),
    # ICE Endex Dutch TTF: 08:00-18:00 Amsterdam
    SessionTemplate("ice-endex", ((0, "08:00", 0, "18:00"),)),
    # price assessments: the market-on-close window ending at the assessment time
    SessionTemplate("moc-sg", ((0, "16:00", 0, "16:30"),)),
    SessionTemplate("assess-cn", ((0, "16:30", 0, "17:00"),)),
    # Saudi CP: announced on the last day of the month before the month it prices
    SessionTemplate("monthly-cp", ((-1, "15:00", -1, "15:30"),)),
    # global FX: 17:00 New York the day before to 17:00 New York
    SessionTemplate("fx-24x5", ((-1, "17:00", 0, "17:00"),)),
    # CFETS onshore RMB FX: 09:30 to 03:00 the next calendar day
    SessionTemplate("cfets", ((0, "09:30", 1, "03:00"),)),
)})

_CN_HOURS = "docs/venues.md#chinese-futures-exchanges"

VENUES: Mapping[str, VenueSpec] = MappingProxyType({v.id: v for v in (
    VenueSpec("shfe", _l("上海期货交易所", "Shanghai Futures Exchange"), "Asia/Shanghai",
              Publication.CONTINUOUS, CalendarKind.PRC, (0, "15:00"), "cn-night-2300", sources=(_CN_HOURS,)),
    VenueSpec("ine", _l("上海国际能源交易中心", "Shanghai International Energy Exchange"), "Asia/Shanghai",
              Publication.CONTINUOUS, CalendarKind.PRC, (0, "15:00"), "cn-night-0230", sources=(_CN_HOURS,)),
    VenueSpec("dce", _l("大连商品交易所", "Dalian Commodity Exchange"), "Asia/Shanghai",
              Publication.CONTINUOUS, CalendarKind.PRC, (0, "15:00"), "cn-night-2300", sources=(_CN_HOURS,)),
    VenueSpec("zce", _l("郑州商品交易所", "Zhengzhou Commodity Exchange"), "Asia/Shanghai",
              Publication.CONTINUOUS, CalendarKind.PRC, (0, "15:00"), "cn-night-2300", sources=(_CN_HOURS,)),
    VenueSpec("ice-eu", _l("ICE欧洲期货", "ICE Futures Europe"), "Europe/London",
              Publication.CONTINUOUS, CalendarKind.FINANCIAL, (0, "23:00"), "ice-eu",
              calendar_code="IFEU", rules_known_until="2027-12-31"),
    VenueSpec("cme", _l("芝商所 Globex (NYMEX)", "CME Globex (NYMEX)"), "America/Chicago",
              Publication.CONTINUOUS, CalendarKind.FINANCIAL, (0, "16:00"), "cme-globex",
              calendar_code="XCME", rules_known_until="2027-12-31"),
    VenueSpec("ice-endex", _l("ICE Endex", "ICE Endex"), "Europe/Amsterdam",
              Publication.CONTINUOUS, CalendarKind.FINANCIAL, (0, "18:00"), "ice-endex",
              calendar_code="IFEU", rules_known_until="2027-12-31"),
    VenueSpec("gme", _l("海湾商品交易所(原迪拜商品交易所)", "GME (formerly DME)"), "America/Chicago",
              Publication.CONTINUOUS, CalendarKind.FINANCIAL, (0, "16:00"), "cme-globex",
              calendar_code="XCME", rules_known_until="2027-12-31"),
    VenueSpec("spot-sg", _l("新加坡现货估价", "Singapore spot assessments"), "Asia/Singapore",
              Publication.DAILY, CalendarKind.FINANCIAL, (0, "16:30"), "moc-sg",
              calendar_code="XSES", rules_known_until="2027-12-31", assessment="16:30"),
    VenueSpec("spot-me", _l("中东现货估价", "Middle East spot assessments"), "Asia/Singapore",
              Publication.DAILY, CalendarKind.FINANCIAL, (0, "16:30"), "moc-sg",
              calendar_code="XSES", rules_known_until="2027-12-31", assessment="16:30"),
    VenueSpec("spot-nea-lng", _l("东北亚LNG现货估价", "North-east Asia LNG assessments"), "Asia/Singapore",
              Publication.DAILY, CalendarKind.FINANCIAL, (0, "16:30"), "moc-sg",
              calendar_code="XSES", rules_known_until="2027-12-31", assessment="16:30"),
    VenueSpec("spot-ec", _l("华东现货估价", "East China spot assessments"), "Asia/Shanghai",
              Publication.DAILY, CalendarKind.PRC, (0, "17:00"), "assess-cn", assessment="17:00"),
    VenueSpec("spot-cfr-cn", _l("CFR中国进口估价", "CFR China import assessments"), "Asia/Shanghai",
              Publication.DAILY, CalendarKind.PRC, (0, "17:00"), "assess-cn", assessment="17:00"),
    VenueSpec("saudi-cp", _l("沙特合同价", "Saudi Aramco contract price"), "Asia/Riyadh",
              Publication.MONTHLY, CalendarKind.MONTH_FIRSTS, (1, "00:00"), "monthly-cp",
              rules_known_until="9999-12-31", assessment="15:30"),
    VenueSpec("fx", _l("国际外汇市场", "Global FX (interbank)"), "America/New_York",
              Publication.CONTINUOUS, CalendarKind.WEEKDAYS, (0, "17:00"), "fx-24x5",
              rules_known_until="9999-12-31"),
    VenueSpec("cfets", _l("中国外汇交易中心", "CFETS onshore FX"), "Asia/Shanghai",
              Publication.CONTINUOUS, CalendarKind.PRC_WORKDAYS, (1, "03:00"), "cfets"),
)})

# instrument id -> (venue id, session template id when it differs from the venue's default)
INSTRUMENT_VENUES: Mapping[str, tuple[str, str]] = MappingProxyType({
    "brent": ("ice-eu", ""), "wti": ("cme", ""), "sc": ("ine", ""), "dubai": ("spot-me", ""),
    "oman": ("gme", ""), "fu": ("shfe", ""), "fo380-sg": ("spot-sg", ""), "lu": ("ine", "cn-night-2300"),
    "gasoil-sg": ("spot-sg", ""), "rbob": ("cme", ""), "naphtha-cfrj": ("spot-sg", ""),
    "jet-sg": ("spot-sg", ""), "bitumen": ("shfe", ""), "cp-propane": ("saudi-cp", ""),
    "lpg": ("dce", ""), "jkm": ("spot-nea-lng", ""), "henry-hub": ("cme", ""), "ttf": ("ice-endex", ""),
    "methanol": ("zce", ""), "methanol-ec": ("spot-ec", ""), "methanol-cfr": ("spot-cfr-cn", ""),
    "pp": ("dce", ""), "pp-ec": ("spot-ec", ""), "pp-cfr": ("spot-cfr-cn", ""), "lldpe": ("dce", ""),
    "pe-ec": ("spot-ec", ""), "pe-cfr": ("spot-cfr-cn", ""), "hdpe": ("spot-ec", ""), "styrene": ("dce", ""),
    "px": ("zce", ""), "pta": ("zce", ""), "pta-ec": ("spot-ec", ""), "pta-cfr": ("spot-cfr-cn", ""),
    "meg": ("dce", ""), "benzene": ("dce", ""), "pvc": ("dce", ""), "pvc-ec": ("spot-ec", ""),
    "pvc-cfr": ("spot-cfr-cn", ""), "caustic-soda": ("zce", ""), "soda-ash": ("zce", ""),
    "urea": ("zce", "cn-day"), "usdcny": ("cfets", ""), "usdcnh": ("fx", ""), "eurcny": ("cfets", ""),
    "usdjpy": ("fx", ""), "jpycny": ("cfets", ""), "gbpcny": ("cfets", ""), "eurusd": ("fx", ""),
    "hkdcny": ("cfets", ""),
})


_CONTRACT_ID = re.compile(r"(.+)-[0-9]{6}")


def placed_as(instrument_id: str) -> str:
    """The id whose venue and session an instrument has: itself, or for a futures contract (`methanol-202605`,
    SPEC 19) its product's."""
    if instrument_id in INSTRUMENT_VENUES:
        return instrument_id
    m = _CONTRACT_ID.fullmatch(instrument_id)
    return m[1] if m and m[1] in INSTRUMENT_VENUES else instrument_id


def venue_entry(instrument_id: str) -> tuple[str, str]:
    """(venue id, session template id or "") of an instrument or a futures contract; KeyError for an unknown id."""
    return INSTRUMENT_VENUES[placed_as(instrument_id)]


def session_of(instrument_id: str) -> str:
    """The session template id an instrument (or a product's contract) trades on."""
    venue_id, session = venue_entry(instrument_id)
    return session or VENUES[venue_id].session


def validate() -> None:
    """Raise ValueError when the data above is inconsistent (run by the tests and at start)."""
    for venue in VENUES.values():
        if venue.session not in SESSIONS:
            raise ValueError(f"venue {venue.id}: unknown session template {venue.session!r}")
        if venue.calendar is CalendarKind.FINANCIAL and not venue.calendar_code:
            raise ValueError(f"venue {venue.id}: a financial calendar needs calendar_code")
        if venue.publication is not Publication.CONTINUOUS and not venue.assessment:
            raise ValueError(f"venue {venue.id}: a {venue.publication.value} venue needs its assessment time")
    for iid, (venue_id, session) in INSTRUMENT_VENUES.items():
        if venue_id not in VENUES:
            raise ValueError(f"instrument {iid}: unknown venue {venue_id!r}")
        if session and session not in SESSIONS:
            raise ValueError(f"instrument {iid}: unknown session template {session!r}")
