// Every scope with its counts; the filter narrows the list as you type. A desk may have
// thousands of customers: the rows are blocks the browser lays out only when on screen.
import { get } from "../api.js";
import { h, link, replace } from "../dom.js";

const COLUMNS = ["Scope", "Memories", "Document chunks", "Episodes", "Conversation"];

export async function scopesView(main) {
  const { scopes } = await get("/v1/scopes");
  const filter = h("input", { type: "search", id: "scope-filter", placeholder: "customer:", autocomplete: "off" });
  const count = h("p", { class: "muted", "aria-live": "polite" });
  const rows = scopes.map((s) => {
    const row = h("li", { class: "scope" }, h("span", { class: "name" }, link("scope", { name: s.scope }, s.scope)),
      ...[s.memories, s.docs, s.episodes, s.conversations].map((n, i) =>
        h("span", { class: "num", title: COLUMNS[i + 1] }, String(n))));
    row.dataset.name = s.scope.toLowerCase();
    return row;
  });
  const list = h("ul", { class: "scopes", "aria-label": "Scopes" });
  const frag = document.createDocumentFragment();
  for (const row of rows) frag.append(row);
  list.append(frag);
  const apply = () => {
    const wanted = filter.value.trim().toLowerCase();
    let shown = 0;
    for (const row of rows) {
      const keep = !wanted || row.dataset.name.includes(wanted);
      row.hidden = !keep;
      shown += keep ? 1 : 0;
    }
    replace(count, `${shown} of ${scopes.length} scopes`);
  };
  filter.addEventListener("input", apply);
  replace(main, h("h1", {}, "Scopes"),
    h("div", { class: "field" }, h("label", { for: "scope-filter" }, "Filter by name"), filter),
    count,
    scopes.length
      ? [h("div", { class: "scope head", "aria-hidden": "true" }, COLUMNS.map((c) => h("span", {}, c))), list]
      : h("p", {}, "Nothing is stored yet."),
    h("p", {}, link("scope", { name: "" }, "The unscoped space")));
  apply();
}
