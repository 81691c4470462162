// Each venue's status (SPEC 16): open, break or closed (or stale, SPEC 20: open with its feed silent), and when it next opens or closes, in the viewer's own
// time. Loaded from /api/v1/venues with the session's key; a `status` frame of the stream updates a venue at
// once (and the next load brings its next open/close).

import { el, replaceChildren } from "./dom.js";
import { viewerStamp } from "./quotes.js";

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

  render() {
    const body = document.getElementById("venues-body");
    if (!body || !this.venues) return;
    const { i18n } = this.ctx;
    replaceChildren(body, this.venues.map((v) => {
      const open = v.status === "open" || v.status === "stale"; // stale (SPEC 20): in session, its feed silent
      const when = viewerStamp(open ? v.nextClose : v.nextOpen);
      return el("tr", { dataset: { venue: v.id, status: v.status } },
        el("td", {}, v.name?.[i18n.lang] ?? v.name?.en ?? v.id),
        el("td", {}, el("span", { class: `venue-status ${v.status}` }, i18n.t(`venue_${v.status}`))),
        el("td", { class: "next" }, when ? i18n.t(open ? "venueCloses" : "venueOpens", { t: when }) : "—"));
    }));
  }
}
