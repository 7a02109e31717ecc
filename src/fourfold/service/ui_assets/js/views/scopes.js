// Every scope with its counts; the filter narrows the list as you type.
import { get } from "../api.js";
import { h, link, replace, table, tr } from "../dom.js";

export async function scopesView(main) {
  const { scopes } = await get("/v1/scopes");
  const filter = h("input", { type: "search", id: "scope-filter", placeholder: "customer:", autocomplete: "off" });
  const count = h("p", { class: "muted", "aria-live": "polite" });
  const holder = h("div");
  const rows = scopes.map((s) => {
    const row = tr(link("scope", { name: s.scope }, s.scope), s.memories, s.docs, s.episodes, s.conversations);
    row.dataset.name = s.scope.toLowerCase();
    return row;
  });
  holder.append(table(["Scope", "Memories", "Document chunks", "Episodes", "Conversation"], rows));
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
    count, scopes.length ? holder : h("p", {}, "Nothing is stored yet."),
    h("p", {}, link("scope", { name: "" }, "The unscoped space")));
  apply();
}
