// Agent turn replay: run a support turn for a customer as a dry run (the model is called,
// nothing is saved) and show the system prompt, the messages sent, the tool calls and the report.
import { ApiError, post } from "../api.js";
import { field, h, hashFor, pre, replace, section, status, table, tr } from "../dom.js";

export async function replayView(main, params) {
  const customer = h("input", { type: "text", id: "replay-customer", value: params.get("customer") || "", required: true,
    autocomplete: "off" });
  const message = h("textarea", { id: "replay-message", rows: 3, required: true }, params.get("message") || "");
  const out = h("div", { id: "replay-out", "aria-live": "polite" });
  const form = h("form", { class: "card" }, field("Customer id (scope customer:…)", customer), field("Message", message),
    h("button", { type: "submit", class: "primary" }, "Run a dry turn"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    history.replaceState(null, "", hashFor("replay", { customer: customer.value }));
    replace(out, h("p", { class: "muted" }, "Running…"));
    try {
      show(out, await post("/v1/agent/replay", { customer_id: customer.value, message: message.value }));
    } catch (err) {
      replace(out);
      status(err instanceof ApiError ? err.message : String(err), "error");
    }
  });
  replace(main, h("h1", {}, "Turn replay"),
    h("p", { class: "muted" }, "A dry run: the agent retrieves, builds its prompt and calls the model and its tools, ",
      "but nothing is written to the conversation or any store."), form, out);
  (customer.value ? message : customer).focus();
}

function show(out, r) {
  const rep = r.report;
  const used = (title, items, text) => section(`${title} (${items.length})`,
    items.length ? h("ul", {}, items.map((x) => h("li", {}, text(x)))) : h("p", { class: "muted" }, "None."));
  replace(out,
    h("p", {}, h("span", { class: "badge" }, "dry run"), " nothing was saved"),
    section("Reply", h("p", { class: "text reply" }, r.text)),
    section("Report", table(["Model", "Model calls", "Messages sent", "Input tokens", "Output tokens"],
      [tr(rep.model, rep.model_calls, rep.messages_sent, rep.input_tokens, rep.output_tokens)])),
    section(`Tool calls (${rep.tool_uses.length})`, rep.tool_uses.length
      ? table(["Tool", "Input", "Result"], rep.tool_uses.map((t) => tr(t.name, h("code", {}, JSON.stringify(t.input)), t.result)))
      : h("p", { class: "muted" }, "None.")),
    used("Memories in the prompt", rep.memories, (m) => `${m.text} (${m.score.toFixed(3)})`),
    used("Own episodes", rep.episodes, (e) => `${e.goal} → ${e.outcome}`),
    used("Shared cases", rep.cases, (e) => `${e.goal} → ${e.outcome}`),
    used("Documents", rep.docs, (d) => `${d.source}#${d.position}: ${d.text}`),
    section("System prompt", pre(r.system_prompt, "prompt")),
    section(`The first request's messages (${r.messages.length}), as sent`, pre(r.messages)));
}
