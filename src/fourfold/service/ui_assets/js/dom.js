// Building the page: every piece of data becomes a text node or an attribute value, never
// HTML. Stored text is untrusted (a memory may hold "<script>"), so nothing here parses it.

/** An element with attributes (strings only; `on*` are listeners) and children (nodes or text). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") el.addEventListener(name.slice(2), value);
    else if (name === "class") el.className = value;
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

/** Append nodes or text (null, undefined and false are skipped; arrays are flattened). */
export function append(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replace an element's children. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** A link inside the page: the route is built from encoded parts, never taken from data as is. */
export function link(route, params, ...children) {
  return h("a", { href: hashFor(route, params) }, ...children);
}

export function hashFor(route, params = {}) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") query.set(k, String(v));
  const q = query.toString();
  return `#/${route}${q ? `?${q}` : ""}`;
}

export function when(seconds) {
  if (seconds === null || seconds === undefined || seconds === 0) return "";
  const d = new Date(seconds * 1000);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString().replace("T", " ").slice(0, 16);
}

export function json(value) {
  return JSON.stringify(value, null, 2);
}

/** A <pre> of JSON (text, never markup). */
export function pre(value, cls = "json") {
  return h("pre", { class: cls }, typeof value === "string" ? value : json(value));
}

export function num(x, digits = 3) {
  return typeof x === "number" && Number.isFinite(x) ? x.toFixed(digits) : "";
}

export function table(headers, rows, { caption } = {}) {
  const body = h("tbody");
  const frag = document.createDocumentFragment();
  for (const row of rows) frag.append(row);
  body.append(frag);
  return h("table", {}, caption ? h("caption", {}, caption) : null,
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", { scope: "col" }, x)))), body);
}

export function tr(...cells) {
  return h("tr", {}, cells.map((c) => (c instanceof Node && c.tagName === "TD" ? c : h("td", {}, c))));
}

export function field(label, input) {
  const id = input.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  input.id = id;
  return h("div", { class: "field" }, h("label", { for: id }, label), input);
}

export function button(label, onclick, { kind = "", type = "button", ...attrs } = {}) {
  return h("button", { type, class: kind, onclick, ...attrs }, label);
}

export function section(title, ...children) {
  return h("section", {}, h("h2", {}, title), ...children);
}

/** A modal that asks before something that cannot be undone; resolves to true when confirmed.
 * With `typed`, the user must type that text first (erasing a scope asks for its name). */
export function confirmDialog(message, { action = "Confirm", typed = null } = {}) {
  return new Promise((resolve) => {
    const input = typed === null ? null : h("input", { type: "text", autocomplete: "off", spellcheck: "false" });
    const ok = h("button", { type: "submit", class: "danger", disabled: typed !== null }, action);
    const cancel = h("button", { type: "button" }, "Cancel");
    const form = h("form", { method: "dialog" }, h("p", {}, message),
      input ? field(["Type ", h("code", {}, typed), " to confirm"], input) : null,
      h("div", { class: "row" }, ok, cancel));
    const dialog = h("dialog", { class: "confirm", "aria-label": action }, form);
    let answer = false;
    if (input) input.addEventListener("input", () => { ok.disabled = input.value !== typed; });
    form.addEventListener("submit", (e) => { e.preventDefault(); answer = input ? input.value === typed : true; dialog.close(); });
    cancel.addEventListener("click", () => dialog.close());
    dialog.addEventListener("close", () => { dialog.remove(); resolve(answer); });
    document.body.append(dialog);
    dialog.showModal();
    (input || cancel).focus();
  });
}

export function status(message, kind = "info") {
  const el = document.getElementById("status");
  replace(el, message ? h("span", { class: kind }, message) : null);
}

/** Show or hide a row under `row` (a history), built by `build()` when shown; the row's
 * `button[aria-expanded]` says which. */
export async function toggleDetails(row, colspan, build) {
  const toggle = row.querySelector("button[aria-expanded]");
  const next = row.nextElementSibling;
  if (next && next.classList.contains("history")) {
    next.remove();
    toggle.setAttribute("aria-expanded", "false");
    return;
  }
  const content = await build();
  row.after(h("tr", { class: "history" }, h("td", { colspan }, content)));
  toggle.setAttribute("aria-expanded", "true");
}

let flashed = "";

/** A status line to show after the next view has rendered (e.g. after leaving an erased scope). */
export function flash(message) {
  flashed = message;
}

/** The flashed message, once. */
export function takeFlash() {
  const message = flashed;
  flashed = "";
  return message;
}
