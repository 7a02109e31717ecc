// Why was this recalled: run recall, similar_successes or document search, and show each
// result's score with the parts it was made of.
import { get, post } from "../api.js";
import { field, h, hashFor, link, num, replace } from "../dom.js";

const KINDS = {
  memories: { label: "Memories (recall)", url: "/v1/memories/explain" },
  episodes: { label: "Similar successes (episodes)", url: "/v1/episodes/explain" },
  docs: { label: "Documents (search)", url: "/v1/docs/explain" },
};

export async function whyView(main, params) {
  const kind = KINDS[params.get("kind")] ? params.get("kind") : "memories";
  const { scopes } = await get("/v1/scopes");
  const list = h("datalist", { id: "scope-names" }, scopes.map((s) => h("option", { value: s.scope })));
  const scope = h("input", { type: "text", id: "why-scope", list: "scope-names", value: params.get("scope") || "",
    placeholder: "customer:42 (empty: unscoped)", autocomplete: "off" });
  const query = h("input", { type: "search", id: "why-query", value: params.get("q") || "", required: true,
    autocomplete: "off" });
  const which = h("select", { id: "why-kind" },
    Object.entries(KINDS).map(([value, k]) => h("option", { value, selected: value === kind }, k.label)));
  const k = h("input", { type: "number", id: "why-k", min: 1, max: 50, value: params.get("k") || 5 });
  const results = h("div", { id: "why-results", "aria-live": "polite" });
  const form = h("form", { class: "card search", role: "search" },
    field("Search", which), field("Scope", scope), field("Query", query), field("Results", k),
    h("button", { type: "submit", class: "primary" }, "Explain"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    location.hash = hashFor("why", { kind: which.value, scope: scope.value, q: query.value, k: k.value });
  });
  replace(main, h("h1", {}, "Why was this recalled?"),
    h("p", { class: "muted" }, "Each result's score is its relevance in [0, 1]: the ranker adds the dense ",
      "similarity, the weighted lexical match and the speaker lift, takes off how close the query comes to ",
      "unrelated text (where it weighs that), and maps the sum to a relevance."),
    form, list, results);
  if (!params.get("q")) { query.focus(); return; }
  const body = { query: params.get("q"), scope: params.get("scope") || null, k: Number(params.get("k") || 5) };
  const found = await post(KINDS[kind].url, body);
  replace(results, found.results.length
    ? h("ol", { class: "results" }, found.results.map((r, i) => result(r, i, kind)))
    : h("p", {}, "Nothing found."));
}

function result(r, i, kind) {
  const parts = [
    ["dense similarity", r.dense, `cosine of query and result (its own vector: ${num(r.dense_own)})`],
    ["neighbouring context", r.context, "what the memories written around it added to the dense part"],
    ["lexical match", r.lexical, `BM25 share ${num(r.lexical_share)} × weight`],
    ["speaker", r.speaker, r.speaker_name ? `speaker: ${r.speaker_name}${r.speaker ? " (named in the query)" : ""}` : "no speaker"],
  ];
  if (r.null) parts.push(["background (subtracted)", -r.null, "how close the query comes to unrelated everyday text"]);
  if (r.typical) parts.push(["typical of its scope (subtracted)", -r.typical, "how much closer it is than its scope's average memory to the scope's others: wording many of them share"]);
  // One scale for every result: a bar's full width is one unit of evidence (a cosine of 1).
  const max = 1;
  const rows = parts.map(([name, value, note]) => h("tr", {},
    h("th", { scope: "row" }, name),
    h("td", { class: "num" }, num(value)),
    h("td", {}, h("span", { class: value < 0 ? "bar neg" : "bar", "data-w": Math.min(100, Math.round(100 * Math.abs(value) / max)) })),
    h("td", { class: "muted" }, note)));
  const words = r.words.length
    ? h("p", {}, "Matched words: ", r.words.map((w) => h("span", { class: `word ${w.source}`, title: `from its ${w.source}` },
      w.word, h("small", {}, ` ${w.source} ${num(w.points, 2)}`))))
    : h("p", { class: "muted" }, "No word of the query matched.");
  const card = h("li", { class: "card result" },
    h("div", { class: "row" }, h("span", { class: "rank" }, `#${i + 1}`),
      h("span", { class: "score", "aria-label": `score ${num(r.score)}` }, num(r.score)),
      h("span", { class: "text" }, r.text)),
    h("table", { class: "parts" }, h("caption", {}, "Parts of the score"), h("tbody", {}, rows)),
    words,
    r.date ? h("p", {}, "Its date: ", h("strong", {}, r.date), " (month, year and weekday are searchable words)") : null,
    h("p", { class: "muted" }, `Sum of the parts → relevance ${num(r.recomputed)}`,
      Math.abs(r.recomputed - r.score) > 0.001 ? ` (the search returned ${num(r.score)})` : " (as returned)"),
    kind === "memories" && r.detail.scope !== undefined
      ? link("scope", { name: r.detail.scope || "" }, "Open its scope") : null);
  for (const bar of card.querySelectorAll(".bar")) bar.style.width = `${bar.dataset.w}%`;
  return card;
}
