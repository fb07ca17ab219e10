// Helpers shared by the views: element building, API calls, constants.

// el builds an element: attributes, then children (strings become text,
// never HTML).
export function el(tag, attrs, ...children) {
  const svg = ["svg", "rect", "text", "g", "line", "title"].includes(tag);
  const e = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v == null) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) if (c != null) e.append(c instanceof Node ? c : String(c));
  return e;
}

// APIError carries the envelope's code and message.
export class APIError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}

// api calls the API; opts.csrf adds the session's CSRF token.
export async function api(path, opts = {}) {
  const headers = {};
  if (opts.body !== undefined) headers["Content-Type"] = "application/json";
  if (opts.csrf) headers["X-CSRF-Token"] = opts.csrf;
  const res = await fetch("/api/v1" + path, {
    method: opts.method || "GET", headers, credentials: "same-origin", cache: opts.cache || "no-cache",
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  if (res.status === 204) return null;
  let body = null;
  try { body = await res.json(); } catch { /* not JSON */ }
  if (!res.ok) {
    const err = (body && body.error) || {};
    throw new APIError(res.status, err.code || "HTTP_" + res.status, err.message || res.statusText);
  }
  return body;
}

export const actionTypes = ["Transaction", "Decision", "ModelInvocation", "ToolCall", "ResourceAccess", "PolicyCheck", "Custom"];
export const typeColors = ["#0b57d0", "#b3261e", "#146c2e", "#7d5260", "#8a5a00", "#006a6a", "#5b5f71"];

export function short(s, n = 10) { return s && s.length > n + 3 ? s.slice(0, n) + "…" : s; }
