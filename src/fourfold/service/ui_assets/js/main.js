// The inspector's shell: who you are, the key form, and the router (routes live in the hash,
// e.g. #/scope?name=customer%3A42; the API key never does).
import { ApiError, get, setApiKey, apiKey } from "./api.js";
import { button, h, replace, status, takeFlash } from "./dom.js";
import { scopesView } from "./views/scopes.js";
import { scopeView } from "./views/scope.js";
import { whyView } from "./views/why.js";
import { factsView } from "./views/facts.js";
import { docsView } from "./views/docs.js";
import { casesView } from "./views/cases.js";
import { replayView } from "./views/replay.js";

const views = {
  "": scopesView, scope: scopeView, why: whyView, facts: factsView, docs: docsView, cases: casesView,
  replay: replayView,
};
const main = document.getElementById("main");
let whoami = null;

function route() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [name, query = ""] = raw.split("?", 2);
  return { name: decodeURIComponent(name), params: new URLSearchParams(query) };
}

async function identify() {
  try {
    whoami = await get("/v1/whoami");
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      whoami = null;
      return false;
    }
    throw err;
  }
  const who = document.getElementById("who");
  replace(who, h("span", {}, "tenant ", h("strong", {}, whoami.tenant), whoami.auth === "key" ? " (key)" : " (no key)"),
    apiKey() ? button("Forget key", () => { setApiKey(""); whoami = null; render(); }) : null);
  return true;
}

function keyForm(message) {
  const input = h("input", { type: "password", id: "api-key", autocomplete: "off", required: true });
  const form = h("form", { class: "card narrow", "aria-labelledby": "key-title" },
    h("h1", { id: "key-title" }, "API key"),
    h("p", {}, "This service has API keys: give one to see its tenant. It stays in this tab only ",
      "(sessionStorage) and is sent as a header, never in a URL."),
    message ? h("p", { class: "error", role: "alert" }, message) : null,
    h("div", { class: "field" }, h("label", { for: "api-key" }, "Key"), input),
    h("button", { type: "submit", class: "primary" }, "Use this key"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    setApiKey(input.value.trim());
    await render();
  });
  replace(main, form);
  replace(document.getElementById("who"));
  input.focus();
}

export async function render() {
  const { name, params } = route();
  for (const a of document.querySelectorAll("nav a")) {
    if (a.dataset.view === (name || "scopes")) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  status(takeFlash());
  try {
    // The view starts at once, beside the identity check (one round trip less); it renders
    // into a detached element that replaces the page only once the caller is known.
    const view = views[name] || scopesView;
    const target = h("main");
    const started = performance.now();
    const [known, shown] = await Promise.allSettled([identify(), view(target, params, { refresh: render })]);
    if (known.status === "rejected") throw known.reason;
    if (!known.value) {
      keyForm(apiKey() ? "That key is unknown or revoked." : "");
      return;
    }
    if (shown.status === "rejected") throw shown.reason;
    main.replaceChildren(...target.childNodes);
    main.dataset.renderMs = String(Math.round(performance.now() - started));
    // Ready once the browser has laid out and painted the view (a task after the next frame):
    // `shownAt` is then the time since navigation started (benchmarks/inspector.py reads it).
    await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve)));
    main.dataset.shownAt = String(Math.round(performance.now()));
    main.dataset.ready = "1";
  } catch (err) {
    replace(main, h("div", { class: "card" }, h("h1", {}, "Something went wrong"),
      h("p", { class: "error", role: "alert" }, err instanceof ApiError ? `${err.code}: ${err.message}` : String(err))));
  }
}

// `fourfold ui` on a keyless data dir opens `/ui/#key=<this run's secret>`: the secret is kept
// like a typed key (this tab only) and leaves the address bar at once. A fragment is never sent
// to the server, so it is in no log.
function takeKeyFromAddress() {
  const given = /^#key=([A-Za-z0-9_-]+)$/.exec(location.hash);
  if (!given) return;
  setApiKey(given[1]);
  history.replaceState(null, "", `${location.pathname}${location.search}#/`);
}

takeKeyFromAddress();
window.addEventListener("hashchange", async () => {
  await render();
  const heading = main.querySelector("h1");
  if (heading) { heading.tabIndex = -1; heading.focus(); }
});
render();
