// The authenticated REST API, as the page calls it. The key lives in this tab's sessionStorage
// and is sent as the Authorization header; it never appears in a URL. Every request carries
// the X-Fourfold-Request header, which a page of another origin cannot send (see service/ui.py).

const KEY = "fourfold.apiKey";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function apiKey() {
  return sessionStorage.getItem(KEY) || "";
}

export function setApiKey(key) {
  if (key) sessionStorage.setItem(KEY, key);
  else sessionStorage.removeItem(KEY);
}

export function path(...parts) {
  return parts.map((p) => encodeURIComponent(p)).join("/");
}

export async function call(method, url, body) {
  const headers = { Accept: "application/json", "X-Fourfold-Request": "ui" };
  const key = apiKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit", cache: "no-store", redirect: "error",
  });
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!response.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(response.status, err.code || "error", err.message || `HTTP ${response.status}`);
  }
  return data;
}

export const get = (url) => call("GET", url);
export const post = (url, body) => call("POST", url, body ?? {});
export const put = (url, body) => call("PUT", url, body ?? {});
export const del = (url) => call("DELETE", url);

/** `/v1/...?scope=...` (the unscoped space when scope is empty). */
export function withQuery(url, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `${url}?${s}` : url;
}
