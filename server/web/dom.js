// Tiny DOM helpers. Data goes in as text nodes only (never HTML), so nothing from the API can inject markup.

/** el("td", {class: "num", dataset: {id}}, "text", child...) */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replace a node's children. */
export function replaceChildren(node, ...children) {
  node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
}

/** Up/down/flat class for a signed value. */
export function signClass(value) {
  if (!value) return "flat";
  return value > 0 ? "up" : "down";
}

const flashes = new WeakMap();
const FLASH = { duration: 900, easing: "ease-out" };

/**
 * Flash a cell's background up or down (the colours follow the cell's --up-bg/--down-bg). A Web Animation
 * restarts without the forced layout that restarting a CSS animation class needs: at 100+ ticks a second
 * a reflow per tick kept the page's main thread busy most of the time.
 */
export function flash(node, dir) {
  flashes.get(node)?.cancel();
  if (!dir) return;
  const from = `var(${dir > 0 ? "--up-bg" : "--down-bg"})`;
  flashes.set(node, node.animate([{ backgroundColor: from }, { backgroundColor: "transparent" }], FLASH));
}

/** An API time (ISO 8601 with +08:00) as the console shows it: "YYYY-MM-DD hh:mm UTC+8"; "" for none. */
export function when(iso) {
  return iso ? `${iso.slice(0, 16).replace("T", " ")} UTC+8` : "";
}
