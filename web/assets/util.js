// Helpers shared by the views: element building, API calls, formatting,
// copy buttons, hashing.

// el builds an element: attributes, then children (strings become text,
// never HTML).
export function el(tag, attrs, ...children) {
  const svg = ["svg", "rect", "text", "g", "line", "title", "path"].includes(tag);
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
// Colours with at least 4.5:1 contrast on white (text on badges is white).
export const typeColors = ["#0b57d0", "#b3261e", "#146c2e", "#7d5260", "#8a5a00", "#006a6a", "#5b5f71"];

export function short(s, n = 10) { return s && s.length > n + 3 ? s.slice(0, n) + "…" : s; }

const numberFormat = new Intl.NumberFormat("en-US");
// num writes a count with thousands separators (102,116).
export function num(n) { return numberFormat.format(n); }

// exact is an instant as "2026-11-21 10:00:00 UTC".
export function exact(iso) { return iso.replace("T", " ").replace("Z", " UTC"); }

// relative says how long ago (or ahead) an instant is: "5 min ago".
export function relative(iso, now = Date.now()) {
  const s = Math.round((now - Date.parse(iso)) / 1000);
  const a = Math.abs(s);
  const [n, unit] = a < 45 ? [a, "s"] : a < 3600 ? [Math.round(a / 60), "min"] : a < 86400 ? [Math.round(a / 3600), "h"]
    : a < 86400 * 45 ? [Math.round(a / 86400), "d"] : a < 86400 * 365 ? [Math.round(a / (86400 * 30)), "mo"] : [Math.round(a / (86400 * 365)), "y"];
  if (a < 10) return "just now";
  return s >= 0 ? `${n} ${unit} ago` : `in ${n} ${unit}`;
}

// when is a <time> showing the relative time, the exact one on hover and
// to assistive technology (title).
export function when(iso) {
  if (!iso) return el("span", { class: "muted" }, "never");
  return el("time", { datetime: iso, title: exact(iso), "data-rel": "" }, relative(iso));
}

// refreshTimes rewrites every relative time on the page (once a minute).
export function refreshTimes() {
  for (const t of document.querySelectorAll("time[data-rel]")) t.textContent = relative(t.getAttribute("datetime"));
}
setInterval(refreshTimes, 30_000);

// badge is an action type's coloured label.
export function badge(type) {
  const i = actionTypes.indexOf(type);
  return el("span", { class: "badge", style: null, "data-type": type, "data-color": i }, type);
}

// announce says msg through the page's polite live region.
export function announce(msg) {
  const r = document.getElementById("announcer");
  if (!r) return;
  r.textContent = "";
  setTimeout(() => { r.textContent = msg; }, 20);
}

// copyButton copies text; what names it for assistive technology
// ("Copy attestation pda"). It says "copied" through the live region.
export function copyButton(text, what) {
  const b = el("button", { type: "button", class: "copy", "aria-label": "Copy " + what, title: "Copy " + what, "data-copy": text }, "Copy");
  b.addEventListener("click", async () => {
    let ok = true;
    try { await navigator.clipboard.writeText(text); } catch { ok = copyFallback(text); }
    b.textContent = ok ? "Copied" : "Copy failed";
    announce(ok ? "Copied " + what : "Could not copy; select the text and copy it by hand");
    setTimeout(() => { b.textContent = "Copy"; }, 1500);
  });
  return b;
}

function copyFallback(text) {
  const t = el("textarea", { "aria-hidden": "true", class: "offscreen", tabindex: "-1" });
  t.value = text;
  document.body.append(t);
  t.select();
  let ok = false;
  try { ok = document.execCommand("copy"); } catch { ok = false; }
  t.remove();
  return ok;
}

// idWithCopy is an id or hash (shortened or not) with its copy button.
export function idWithCopy(value, what, opts = {}) {
  const text = opts.short ? short(value, opts.short) : value;
  const shown = opts.href ? el("a", { href: opts.href, class: "mono", title: value, "data-field": opts.field, "aria-label": opts.label })
    : el("span", { class: "mono", title: opts.short ? value : null, "data-field": opts.field });
  shown.append(text);
  return el("span", { class: "id" }, shown, " ", copyButton(value, what));
}

// sha256hex hashes bytes in the browser.
export async function sha256hex(bytes) {
  const d = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// canonicalJSON is the RFC 8785 (JCS) form of a parsed JSON value: keys
// sorted by UTF-16 code units, numbers as ECMAScript writes them, strings
// as JSON.stringify escapes them (what RFC 8785 prescribes).
export function canonicalJSON(v) {
  if (v === null || typeof v === "boolean") return JSON.stringify(v);
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new Error("a number outside what JSON holds");
    return JSON.stringify(v);
  }
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(canonicalJSON).join(",") + "]";
  const keys = Object.keys(v).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return "{" + keys.map((k) => JSON.stringify(k) + ":" + canonicalJSON(v[k])).join(",") + "}";
}
