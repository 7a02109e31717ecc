// One scope: its memories (with versions where they exist), episodes and conversation thread,
// and the actions on them: edit or forget a memory, delete an episode, erase the scope.
import { ApiError, del, get, path, post, withQuery } from "../api.js";
import { button, confirmDialog, flash, h, link, pre, replace, section, status, when } from "../dom.js";

export async function scopeView(main, params, ctx) {
  const scope = params.get("name") || "";
  const scoped = scope ? { scope } : {};
  const [profile, memories, episodes, thread, features] = await Promise.all([
    scope ? get(withQuery("/v1/profile", scoped)) : Promise.resolve(null),
    get(withQuery("/v1/memories", scoped)),
    get(withQuery("/v1/episodes", scoped)),
    scope ? get(`/v1/conversations/${path(scope)}`) : Promise.resolve(null),
    get("/v1/inspector/features"),
  ]);
  const customer = scope.startsWith("customer:") ? scope.slice("customer:".length) : "";
  const title = scope || "(unscoped)";
  const erase = scope ? button("Erase this scope…", async () => {
    const ok = await confirmDialog(
      `Erase everything stored under ${scope}: memories, episodes, the conversation and the shared cases made from it. This cannot be undone.`,
      { action: "Erase scope", typed: scope });
    if (!ok) return;
    const counts = await del(`/v1/scopes/${path(scope)}`);
    location.hash = "#/";
    flash(`Erased ${scope}: ${counts.memories} memories, ${counts.episodes} episodes, ${counts.cases} cases, ${counts.conversations} conversation.`);
  }, { kind: "danger", id: "erase-scope" }) : null;
  replace(main,
    h("h1", {}, h("span", { class: "muted" }, "Scope "), title),
    h("p", { class: "row" },
      link("why", { scope }, "Why was this recalled? Search this scope"),
      customer ? link("replay", { customer }, "Replay a turn (dry run)") : null, erase),
    profile ? profileSection(profile.results) : null,
    memoriesSection(memories.results, features, ctx),
    episodesSection(episodes.results.filter((e) => (e.scope || "") === scope), ctx),
    thread ? threadSection(thread) : null);
}

// What every prompt for this scope carries, whatever the question: its current keyed memories.
function profileSection(entries) {
  const rows = entries.map((m) => h("tr", { "data-id": m.id },
    h("th", { scope: "row" }, m.key ? h("code", {}, m.key) : h("span", { class: "muted" }, m.kind)), h("td", {}, m.text),
    h("td", { class: "muted" }, when(m.valid_from))));
  return section(`Profile (${entries.length})`, entries.length
    ? h("table", { class: "profile", "aria-label": "Profile: current keyed memories" },
      h("thead", {}, h("tr", {}, h("th", {}, "Key"), h("th", {}, "Value"), h("th", {}, "Set"))), h("tbody", {}, rows))
    : h("p", { class: "muted" }, "No keyed memories or preferences: nothing is in every prompt."));
}

// A scope may hold thousands of memories: each is a block whose layout the browser skips while
// it is off screen (content-visibility), which a table's rows cannot do.
const COLUMNS = ["Text", "Kind", "Key", "Written", "Valid", "Metadata", ""];

// The first rows are built before the view is shown; the rest follow in chunks, one task each,
// so the page paints at once and stays responsive while a large scope fills in. The list's
// `data-complete` says when every row is there.
const FIRST_ROWS = 100;
const CHUNK_ROWS = 300;

function memoriesSection(memories, features, ctx) {
  const list = h("ul", { class: "memories", "aria-label": "Memories, current versions, oldest first" });
  const build = (from, to) => {
    const frag = document.createDocumentFragment();
    for (const m of memories.slice(from, to)) frag.append(memoryItem(m, features, ctx));
    list.append(frag);
    if (to >= memories.length) list.dataset.complete = "1";
    else setTimeout(() => build(to, to + CHUNK_ROWS));
  };
  build(0, FIRST_ROWS);
  return section(`Memories (${memories.length})`, memories.length
    ? [h("div", { class: "memory head", "aria-hidden": "true" }, COLUMNS.map((c) => h("span", {}, c))), list]
    : h("p", { class: "muted" }, "No memories."));
}

function memoryItem(m, features, ctx) {
  const valid = m.valid_from !== undefined
    ? `${when(m.valid_from)} → ${m.valid_to ? when(m.valid_to) : "now"}` : "";
  const meta = Object.keys(m.metadata || {}).length ? h("code", { class: "meta" }, JSON.stringify(m.metadata)) : "";
  const text = h("div", { class: "text" }, m.text);
  const actions = h("div", { class: "actions" });
  const item = h("li", { class: "memory", "data-id": m.id }, text,
    h("span", { class: "kind", title: "kind" }, m.kind), h("span", { class: "key", title: "key" }, m.key || ""),
    h("span", { title: "written" }, when(m.created_at)), h("span", { title: "valid" }, valid), h("span", {}, meta),
    actions);
  const forget = button("Forget", async () => {
    if (!(await confirmDialog(`Forget this memory (and every version of it)? "${short(m.text)}"`, { action: "Forget" }))) return;
    await del(`/v1/memories/${path(m.id)}`);
    status("Memory forgotten.");
    await ctx.refresh();
  }, { kind: "danger", "aria-label": `Forget: ${short(m.text)}` });
  if (features.versions) {
    const edit = button("Edit", () => editInline(text, m, ctx), { "aria-label": `Edit: ${short(m.text)}` });
    const history = button("History", () => showHistory(item, history, m), { "aria-expanded": "false",
      "aria-label": `History: ${short(m.text)}` });
    actions.append(edit, history);
  }
  actions.append(forget);
  return item;
}

function editInline(cell, m, ctx) {
  const area = h("textarea", { rows: 3, "aria-label": "New text of the memory" }, m.text);
  const save = h("button", { type: "submit", class: "primary" }, "Save as a new version");
  const cancel = button("Cancel", () => ctx.refresh());
  const form = h("form", { class: "edit" }, area, h("div", { class: "row" }, save, cancel));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await post(`/v1/memories/${path(m.id)}/versions`, { text: area.value });
      status("Saved: a new version replaces the old one (see History).");
      await ctx.refresh();
    } catch (err) {
      status(err instanceof ApiError ? err.message : String(err), "error");
    }
  });
  replace(cell, form);
  area.focus();
}

async function showHistory(item, toggle, m) {
  const shown = item.querySelector(".versions");
  toggle.setAttribute("aria-expanded", String(!shown));
  if (shown) { shown.remove(); return; }
  const { results } = await get(`/v1/memories/${path(m.id)}/versions`);
  item.append(h("ol", { class: "versions", "aria-label": "Versions, oldest first" }, results.map((v) =>
    h("li", { class: v.valid_to ? "superseded" : "current" },
      h("span", { class: "text" }, v.text), " ",
      h("span", { class: "muted" }, `${when(v.valid_from)} → ${v.valid_to ? when(v.valid_to) : "now"}`), " ",
      v.valid_to ? h("span", { class: "badge" }, "superseded") : h("span", { class: "badge ok" }, "current")))));
}

function episodesSection(episodes, ctx) {
  const items = episodes.map((e) => h("li", { class: "episode card" },
    h("div", { class: "row" }, h("span", { class: e.success ? "badge ok" : "badge bad" }, e.success ? "success" : "failed"),
      h("strong", {}, e.goal), h("span", { class: "muted" }, when(e.ts))),
    e.actions.length ? h("ol", { class: "actions-list" }, e.actions.map((a) => h("li", {}, a))) : null,
    h("p", {}, h("span", { class: "muted" }, "Outcome: "), e.outcome),
    button("Delete episode", async () => {
      if (!(await confirmDialog(`Delete this episode? "${short(e.goal)}"`, { action: "Delete" }))) return;
      await del(`/v1/episodes/${path(e.id)}`);
      status("Episode deleted.");
      await ctx.refresh();
    }, { kind: "danger" })));
  return section(`Episodes (${episodes.length})`,
    episodes.length ? h("ul", { class: "plain" }, items) : h("p", { class: "muted" }, "No episodes."));
}

function threadSection(thread) {
  const items = thread.messages.map((m) => h("li", { class: `message ${m.role}${m.summary ? " summary" : ""}` },
    h("div", { class: "row" }, h("strong", {}, m.role), m.summary ? h("span", { class: "badge" }, "summary") : null),
    blocks(m.content)));
  return section(`Conversation (${thread.messages.length} messages, as last sent)`,
    thread.ticket_goal ? h("p", {}, h("span", { class: "muted" }, "Open ticket: "), thread.ticket_goal) : null,
    thread.messages.length ? h("ol", { class: "thread" }, items) : h("p", { class: "muted" }, "No conversation."));
}

function blocks(content) {
  if (typeof content === "string") return h("p", { class: "text" }, content);
  return (content || []).map((b) => (b.type === "text" ? h("p", { class: "text" }, b.text)
    : h("div", { class: "block" }, h("span", { class: "badge" }, b.type), pre(b))));
}

function short(text) {
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}
