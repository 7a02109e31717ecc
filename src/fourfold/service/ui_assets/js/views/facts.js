// Facts: the table with each value's history, a form to set one, and the lookup_policy schema
// exactly as the model sees it.
import { ApiError, get, path, put } from "../api.js";
import { button, field, h, pre, replace, section, status, table, toggleDetails, tr, when } from "../dom.js";

export async function factsView(main, _params, ctx) {
  const [{ facts }, schema] = await Promise.all([get("/v1/facts"), get("/v1/facts/tool-schema")]);
  const rows = facts.map((f) => {
    const row = tr(h("code", {}, f.key), h("code", { class: "value" }, JSON.stringify(f.value)), f.description,
      when(f.updated_at), h("td", {}, button("History", () => history(row, f), { "aria-expanded": "false" }),
        button("Edit", () => fill(f))));
    row.dataset.key = f.key;
    return row;
  });
  const key = h("input", { type: "text", id: "fact-key", required: true, autocomplete: "off" });
  const value = h("textarea", { id: "fact-value", rows: 2, required: true });
  const asText = h("input", { type: "checkbox", id: "fact-as-text" });
  const description = h("input", { type: "text", id: "fact-description", autocomplete: "off" });
  const fill = (f) => {
    key.value = f.key;
    value.value = JSON.stringify(f.value);
    asText.checked = false;
    description.value = f.description;
    value.focus();
  };
  const form = h("form", { class: "card", "aria-labelledby": "set-fact" }, h("h2", { id: "set-fact" }, "Set a fact"),
    field("Key", key), field("Value (JSON: 30, true, \"text\", {…})", value),
    h("div", { class: "field inline" }, asText, h("label", { for: "fact-as-text" }, "Store the value as plain text")),
    field("Description (shown to the model)", description),
    h("button", { type: "submit", class: "primary" }, "Set fact"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    let parsed = value.value;
    if (!asText.checked) {
      try { parsed = JSON.parse(value.value); } catch {
        status("The value is not valid JSON: tick \"plain text\" to store it as text.", "error");
        value.focus();
        return;
      }
    }
    try {
      await put(`/v1/facts/${path(key.value.trim())}`, { value: parsed, description: description.value });
      status(`Set ${key.value.trim()}.`);
      await ctx.refresh();
    } catch (err) {
      status(err instanceof ApiError ? err.message : String(err), "error");
    }
  });
  replace(main, h("h1", {}, "Facts"),
    section(`Facts (${facts.length})`, facts.length
      ? table(["Key", "Value", "Description", "Updated", ""], rows) : h("p", { class: "muted" }, "No facts.")),
    form,
    section("The lookup_policy tool, as the model sees it", pre(schema)));
}

function history(row, f) {
  return toggleDetails(row, 5, async () => {
    const { history: past } = await get(`/v1/facts/${path(f.key)}/history`);
    const items = past.map((p) => h("li", { class: "superseded" }, h("code", {}, JSON.stringify(p.value)),
      h("span", { class: "muted" }, ` replaced ${when(p.replaced_at)}`)));
    items.push(h("li", { class: "current" }, h("code", {}, JSON.stringify(f.value)), " ", h("span", { class: "badge ok" }, "current")));
    return h("ol", { class: "versions" }, items);
  });
}
