// Each venue's status (SPEC 16): open, break or closed (or stale, SPEC 20: open with its feed
// silent), and when it next opens or closes, in exchange time (UTC+8,
// the API's offset: "Mon 09:00 UTC+8"). Loaded from /api/v1/venues with the session's key; a `status` frame of the
// stream updates a venue at once (and the next load brings its next open/close). The market state of the quotes
// shown (all shut or not, the earliest next open) is read from here: it is not the connection's state.

import { el, replaceChildren } from "./dom.js";

/** "Mon 09:00 UTC+8" / "周一 09:00 UTC+8" of an ISO time with its offset (the exchange's wall clock). */
export function exchangeStamp(iso, i18n) {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(iso ?? "");
  if (!m) return "";
  const weekday = new Date(`${m[1]}T00:00:00Z`).getUTCDay();
  return `${i18n.t(`weekday_${weekday}`)} ${m[2]} ${i18n.t("tzShanghai")}`;
}

export class VenuePanel {
  /** ctx: {i18n} */
  constructor(ctx) {
    this.ctx = ctx;
    this.venues = null;
  }

  set(venues) {
    this.venues = venues;
    this.render();
  }

  /** A stream `status` frame: {venue, status, ts}. */
  update(msg) {
    const venue = this.venues?.find((v) => v.id === msg.venue);
    if (!venue) return;
    venue.status = msg.status;
    this.render();
  }

  /** A venue's status now ("open", "stale", "break", "closed"), or null while unknown. */
  statusOf(id) {
    return this.venues?.find((v) => v.id === id)?.status ?? null;
  }

  /** The market state of these venues: null while unknown, else {open, nextOpen} (nextOpen: the earliest, when
   * none is open). */
  stateOf(ids) {
    const shown = this.venues?.filter((v) => ids.includes(v.id)) ?? [];
    if (!shown.length) return null;
    if (shown.some((v) => v.status === "open" || v.status === "stale")) return { open: true, nextOpen: null };
    const opens = shown.map((v) => v.nextOpen).filter(Boolean).sort();
    return { open: false, nextOpen: opens[0] ?? null };
  }

  /** The venues of the quotes in `book` (each quote names its venue). */
  static venuesOf(book) {
    return [...new Set(book.list().map((row) => row.quote.venue).filter(Boolean))];
  }

  /** The market indicator of the top bar and each quote row's venue state (beside, never instead of, the
   * connection's state). Answers whether every venue shown is shut (polling slows down then). */
  renderMarket(book) {
    const { i18n } = this.ctx;
    const state = this.stateOf(VenuePanel.venuesOf(book));
    const node = document.getElementById("market-state");
    node.dataset.state = state === null ? "" : state.open ? "open" : "closed";
    node.textContent = state === null ? "" : state.open ? i18n.t("marketsOpen")
      : state.nextOpen ? i18n.t("marketsClosedNext", { t: exchangeStamp(state.nextOpen, i18n) })
        : i18n.t("marketsClosed");
    for (const tag of document.querySelectorAll("#live-body .mkt")) {
      const status = this.statusOf(tag.dataset.venue);
      tag.dataset.status = status ?? "";
      tag.textContent = status ? i18n.t(`venue_${status}`) : "";
    }
    return state !== null && !state.open;
  }

  render() {
    const body = document.getElementById("venues-body");
    if (!body || !this.venues) return;
    const { i18n } = this.ctx;
    replaceChildren(body, this.venues.map((v) => {
      const open = v.status === "open" || v.status === "stale"; // stale (SPEC 20): in session, its feed silent
      const next = open ? v.nextClose : v.nextOpen;
      const when = exchangeStamp(next, i18n);
      return el("tr", { dataset: { venue: v.id, status: v.status } },
        el("td", {}, v.name?.[i18n.lang] ?? v.name?.en ?? v.id),
        el("td", {}, el("span", { class: `venue-status ${v.status}` }, i18n.t(`venue_${v.status}`))),
        el("td", { class: "next", title: next ?? "" }, when
          ? el("span", { class: "stamp" }, i18n.t(open ? "venueCloses" : "venueOpens", { t: when }))
          : "—"));
    }));
  }
}
