// Shared cases: the de-identified cases every customer's turn may read, and, when the
// operator turned review on, those waiting for approval.
import { get, path, post } from "../api.js";
import { button, h, replace, section, status, when } from "../dom.js";

export async function casesView(main, _params, ctx) {
  const { review, shared, pending } = await get("/v1/cases");
  const decide = (c, approve) => async () => {
    await post(`/v1/cases/${path(c.id)}/review`, { approve });
    status(approve ? "Case shared with every customer." : "Case rejected and erased.");
    await ctx.refresh();
  };
  const card = (c, actions) => h("li", { class: "card case" },
    h("p", {}, h("span", { class: "muted" }, "Problem: "), c.goal),
    c.actions.length ? h("ol", { class: "actions-list" }, c.actions.map((a) => h("li", {}, a))) : null,
    h("p", {}, h("span", { class: "muted" }, "Fix: "), c.outcome),
    h("p", { class: "muted" }, `${when(c.ts)} · ${c.tags.join(", ")}`), actions);
  replace(main, h("h1", {}, "Shared cases"),
    h("p", {}, review
      ? "Review is on: a new case waits here until you approve it; no customer sees it before."
      : "Review is off: a successful ticket's de-identified case is shared at once (start the service with --review-cases to review them first)."),
    section(`Waiting for review (${pending.length})`, pending.length
      ? h("ul", { class: "plain" }, pending.map((c) => card(c, h("div", { class: "row" },
        button("Approve", decide(c, true), { kind: "primary" }), button("Reject", decide(c, false), { kind: "danger" })))))
      : h("p", { class: "muted" }, "Nothing waits.")),
    section(`Shared with every customer (${shared.length})`, shared.length
      ? h("ul", { class: "plain" }, shared.map((c) => card(c, null))) : h("p", { class: "muted" }, "No shared cases yet.")));
}
