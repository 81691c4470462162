// The futures curve under the candle chart (SPEC 19): GET /api/v1/curve/{product} drawn as a small SVG line of the
// listed contracts' prices by delivery month, the main contract marked, open interest as bars underneath.

import { el } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 640;
const H = 180;
const PAD = { left: 56, right: 30, top: 14, bottom: 34 };

function svg(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== null) node.textContent = text;
  return node;
}

/** Draw `curve` (the route's answer) into `box`; `t(key, vars)` gives the page's words. */
export function renderCurve(box, curve, t) {
  const points = curve.contracts.filter((p) => p.price !== null);
  box.replaceChildren();
  box.dataset.product = curve.id; // whose curve this is (the previous product's stays drawn until this one lands)
  box.hidden = points.length < 2;
  if (box.hidden) return;
  const prices = points.map((p) => p.price);
  const lo = Math.min(...prices);
  const hi = Math.max(...prices);
  const span = hi - lo || Math.abs(hi) * 0.01 || 1;
  const oiMax = Math.max(1, ...points.map((p) => p.openInterest ?? 0));
  const x = (i) => PAD.left + (i * (W - PAD.left - PAD.right)) / (points.length - 1);
  const y = (v) => PAD.top + ((hi + span * 0.05 - v) * (H - PAD.top - PAD.bottom)) / (span * 1.1);
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "curve-svg",
                            "aria-label": t("curveLabel", { main: curve.main ?? "" }) });
  points.forEach((p, i) => {
    const h = ((p.openInterest ?? 0) / oiMax) * 40;
    root.append(svg("rect", { x: x(i) - 4, y: H - PAD.bottom - h, width: 8, height: h, class: "curve-oi" }));
    root.append(svg("text", { x: x(i), y: H - PAD.bottom + 14, "text-anchor": "middle", class: "curve-axis" },
                    p.symbol));
  });
  const line = points.map((p, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(p.price).toFixed(1)}`).join(" ");
  root.append(svg("path", { d: line, class: "curve-line", fill: "none" }));
  points.forEach((p, i) => {
    const main = p.id === curve.main;
    const dot = svg("circle", { cx: x(i), cy: y(p.price), r: main ? 5 : 3, class: main ? "curve-main" : "curve-dot" });
    dot.append(svg("title", {}, t("curvePoint", { symbol: p.symbol, price: p.price, spread: p.spread ?? "",
                                                  oi: p.openInterest ?? "" })));
    root.append(dot);
  });
  for (const v of [lo, hi]) {
    root.append(svg("text", { x: PAD.left - 6, y: y(v) + 4, "text-anchor": "end", class: "curve-axis" }, String(v)));
  }
  const main = points.find((p) => p.id === curve.main);
  box.append(el("h3", { class: "curve-title" }, t("curveTitle", { main: main ? main.symbol : "—" })), root);
}
