// Documents: sources with their chunk counts; open one to read its chunks.
import { get, withQuery } from "../api.js";
import { field, h, hashFor, link, replace, section, table, tr, when } from "../dom.js";

export async function docsView(main, params) {
  const scope = params.get("scope") || "";
  const source = params.get("source");
  const scoped = scope ? { scope } : {};
  const { sources } = await get(withQuery("/v1/docs/list", scoped));
  const scopeInput = h("input", { type: "text", id: "docs-scope", value: scope, placeholder: "empty: unscoped" });
  const form = h("form", { class: "row" }, field("Scope", scopeInput), h("button", { type: "submit" }, "Show"));
  form.addEventListener("submit", (e) => { e.preventDefault(); location.hash = hashFor("docs", { scope: scopeInput.value }); });
  const rows = sources.map((d) => tr(link("docs", { ...scoped, source: d.source }, d.source), d.chunks, when(d.updated_at)));
  let chunks = null;
  if (source) {
    const { results } = await get(withQuery("/v1/docs/chunks", { ...scoped, source }));
    chunks = section(`Chunks of ${source} (${results.length})`, h("ol", { class: "chunks" }, results.map((c) =>
      h("li", { class: "card" }, c.metadata.heading ? h("strong", {}, c.metadata.heading) : null,
        h("p", { class: "text" }, c.text)))));
  }
  replace(main, h("h1", {}, "Documents"), form,
    section(`Sources (${sources.length})`, sources.length ? table(["Source", "Chunks", "Written"], rows)
      : h("p", { class: "muted" }, "No documents in this scope.")),
    h("p", {}, link("why", { kind: "docs", scope }, "Why was this chunk found? Search the documents")),
    chunks);
}
