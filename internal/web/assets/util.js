// Helpers shared by the views: element building, API calls (and what a
// refusal of the rate limit does to the page), formatting, copy buttons,
// hashing, base58.

// el builds an element: attributes, then children (strings become text,
// never HTML).
export function el(tag, attrs, ...children) {
  const svg = ["svg", "rect", "text", "g", "line", "title", "path", "pattern", "defs", "circle"].includes(tag);
  const e = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v == null) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) if (c != null && c !== false) e.append(c instanceof Node ? c : String(c));
  return e;
}

// APIError carries the envelope's code and message; retryAfter (seconds)
// when the API asked to wait (429, 503).
export class APIError extends Error {
  constructor(status, code, message, retryAfter = 0) { super(message); this.status = status; this.code = code; this.retryAfter = retryAfter; }
}

// The API's per-IP limit: when it refuses a call, every view says so and
// the page tries again once the time the API gave has passed.
export const limits = { until: 0 };

// api calls the API; opts.csrf adds the session's CSRF token. A 429 sets
// limits.until and dispatches "attestd:limited" (the router shows when the
// page will try again); its error says so in words, never the raw body.
export async function api(path, opts = {}) {
  const headers = {};
  if (opts.body !== undefined) headers["Content-Type"] = "application/json";
  if (opts.csrf) headers["X-CSRF-Token"] = opts.csrf;
  let res;
  try {
    res = await fetch("/api/v1" + path, {
      method: opts.method || "GET", headers, credentials: "same-origin", cache: opts.cache || "no-cache",
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
  } catch (e) {
    throw new APIError(0, "NETWORK", "the API cannot be reached (" + e.message + ")");
  }
  if (res.status === 204) return null;
  let body = null;
  try { body = await res.json(); } catch { /* not JSON */ }
  if (!res.ok) {
    const err = (body && body.error) || {};
    const retry = Math.max(1, Math.min(3600, parseInt(res.headers.get("Retry-After") || "0", 10) || 0));
    if (res.status === 429) {
      limits.until = Math.max(limits.until, Date.now() + retry * 1000);
      window.dispatchEvent(new CustomEvent("attestd:limited", { detail: { until: limits.until } }));
      throw new APIError(429, err.code || "RATE_LIMITED",
        "too many requests from your address (the API allows " + (res.headers.get("RateLimit-Limit") || "100") + " a minute)", retry);
    }
    throw new APIError(res.status, err.code || "HTTP_" + res.status, err.message || res.statusText || "HTTP " + res.status,
      res.status === 503 ? retry : 0);
  }
  return body;
}

// secondsLeft is how long the page still waits for the rate limit.
export function secondsLeft() { return Math.max(0, Math.ceil((limits.until - Date.now()) / 1000)); }

// failure is what a part of a page shows when its data could not be
// loaded: why, in words, and for a rate limit when the page tries again
// (a countdown). what names the missing part ("the newest attestations").
export function failure(e, what) {
  const p = el("p", { class: "error", role: "status", "data-failure": e instanceof APIError ? e.code : "ERROR" });
  if (e instanceof APIError && e.status === 429) {
    let shown = false; // once on the page, the countdown stops when it leaves it
    const tick = () => {
      if (p.isConnected) shown = true; else if (shown) return;
      const s = secondsLeft();
      p.textContent = `Could not load ${what}: ${e.message}. ` + (s > 0 ? `This page tries again in ${s} s.` : "Trying again…");
      if (s > 0) setTimeout(tick, 1000);
    };
    tick();
  } else {
    p.textContent = `Could not load ${what}: ${e.message}.`;
  }
  return p;
}

export const actionTypes = ["Transaction", "Decision", "ModelInvocation", "ToolCall", "ResourceAccess", "PolicyCheck", "Custom"];
// Colours with at least 4.5:1 contrast on white (text on badges is white).
export const typeColors = ["#0b57d0", "#b3261e", "#146c2e", "#7d5260", "#8a5a00", "#006a6a", "#5b5f71"];

export function short(s, n = 10) { return s && s.length > n + 3 ? s.slice(0, n) + "…" : s; }

const numberFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });
// num writes a number with thousands separators (102,116; 446.8): every
// figure the pages show goes through it.
export function num(n) { return numberFormat.format(n); }

// plural writes a count and its noun: "1 slot", "2,234 attestations"
// (many defaults to one + "s"). A unit (min, h, %) is kept with its number
// by a no-break space; a noun need not be.
export function plural(n, one, many = one + "s") { return num(n) + " " + (n === 1 ? one : many); }

// nw is a span that never breaks inside (a number with its unit, a code
// word, a short id): class "nw", which the browser tests hold to one line.
export function nw(...children) { return el("span", { class: "nw" }, ...children); }

// blob shows a long id, hash or key in full, in monospace, with a line
// break allowed only between groups of eight characters (<wbr>: the text
// selected or copied is the value itself).
export function blob(value, attrs = {}, tag = "span") {
  const s = String(value), parts = [];
  for (let i = 0; i < s.length; i += 8) parts.push(i ? el("wbr", {}) : null, s.slice(i, i + 8));
  return el(tag, { ...attrs, class: "mono blob" + (attrs.class ? " " + attrs.class : "") }, parts);
}

// bytes writes a size in binary units: "512 B", "96.5 KiB", "12 MiB" (a
// no-break space keeps the number with its unit).
export function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  for (; n >= 1024 && i < units.length - 1; i++) n /= 1024;
  return (i ? n.toFixed(n < 100 ? 1 : 0) : String(n)) + "\u00a0" + units[i];
}

// exact is an instant as "2026-11-21 10:00:00 UTC".
export function exact(iso) { return iso.replace("T", " ").replace("Z", " UTC"); }

// relative says how long ago (or ahead) an instant is: "5 min ago".
export function relative(iso, now = Date.now()) {
  const s = Math.round((now - Date.parse(iso)) / 1000);
  const a = Math.abs(s);
  const [n, unit] = a < 45 ? [a, "s"] : a < 3600 ? [Math.round(a / 60), "min"] : a < 86400 ? [Math.round(a / 3600), "h"]
    : a < 86400 * 45 ? [Math.round(a / 86400), "d"] : a < 86400 * 365 ? [Math.round(a / (86400 * 30)), "mo"] : [Math.round(a / (86400 * 365)), "y"];
  if (a < 10) return "just now";
  return s >= 0 ? `${n}\u00a0${unit} ago` : `in ${n}\u00a0${unit}`;
}

// duration writes seconds as "42 s", "5 min", "3 h", "2 d" (a no-break
// space keeps the number with its unit).
export function duration(s) {
  s = Math.max(0, Math.round(s));
  const [n, unit] = s < 90 ? [s, "s"] : s < 5400 ? [Math.round(s / 60), "min"] : s < 172800 ? [Math.round(s / 3600), "h"] : [Math.round(s / 86400), "d"];
  return num(n) + "\u00a0" + unit;
}

// span writes a length of time in words: "1 minute", "5 hours", "3 days".
export function span(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  const [n, unit] = s < 90 ? [s, "second"] : s < 5400 ? [Math.round(s / 60), "minute"] : s < 172800 ? [Math.round(s / 3600), "hour"] : [Math.round(s / 86400), "day"];
  return num(n) + "\u00a0" + unit + (n === 1 ? "" : "s");
}

// when is a <time> showing the relative time, the exact one on hover and
// to assistive technology (title).
export function when(iso, never = "never") {
  if (!iso) return el("span", { class: "muted" }, never);
  return el("time", { datetime: iso, title: exact(iso), "data-rel": "" }, relative(iso));
}

// refreshTimes rewrites every relative time on the page.
export function refreshTimes() {
  for (const t of document.querySelectorAll("time[data-rel]")) t.textContent = relative(t.getAttribute("datetime"));
}
setInterval(refreshTimes, 30_000);

// badge is an action type's coloured label.
export function badge(type) {
  const i = actionTypes.indexOf(type);
  return el("span", { class: "badge", "data-type": type, "data-color": i }, type);
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
export function copyButton(text, what, attrs = {}) {
  const b = el("button", { type: "button", class: "copy", "aria-label": "Copy " + what, title: "Copy " + what, "data-copy": text, ...attrs }, "Copy");
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

// idWithCopy is an id or hash with its copy button: shortened (opts.short
// characters, one line) or in full (a blob, broken only between groups).
export function idWithCopy(value, what, opts = {}) {
  const attrs = { href: opts.href, title: opts.short || opts.href ? value : null, "data-field": opts.field, "aria-label": opts.label };
  const shown = opts.short ? el(opts.href ? "a" : "span", { ...attrs, class: "mono nw" }, short(value, opts.short))
    : blob(value, attrs, opts.href ? "a" : "span");
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

// payloadHashes hashes a payload's bytes and, when they are JSON, its
// RFC 8785 form: {raw, canonical (null when not JSON), why}.
export async function payloadHashes(bytes) {
  const raw = await sha256hex(bytes);
  let canonical = null, why = "not JSON";
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    canonical = await sha256hex(new TextEncoder().encode(canonicalJSON(JSON.parse(text))));
  } catch (e) { why = e instanceof SyntaxError || e instanceof TypeError ? "not JSON" : e.message; }
  return { raw, canonical, why };
}

const B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

// base58decode decodes base58 (Bitcoin alphabet) to bytes; null when the
// text is not base58.
export function base58decode(s) {
  if (!s || s.length > 128) return null;
  let n = 0n;
  for (const c of s) {
    const d = B58.indexOf(c);
    if (d < 0) return null;
    n = n * 58n + BigInt(d);
  }
  const out = [];
  while (n > 0n) { out.unshift(Number(n % 256n)); n /= 256n; }
  for (const c of s) { if (c !== "1") break; out.unshift(0); }
  return new Uint8Array(out);
}

// cardsTable is a table that turns into one card per row on a narrow
// screen: headers [[label, opts]], each row's cells labelled with them.
export function cardsTable(attrs, headers, rows, empty) {
  const tbody = el("tbody", { id: attrs.bodyId });
  tbody.append(...rows);
  if (!rows.length && empty) tbody.append(el("tr", {}, el("td", { colspan: headers.length, class: "empty", "data-label": "" }, empty)));
  const { bodyId, caption, ...rest } = attrs;
  return el("table", { ...rest, class: "cards-narrow" + (rest.class ? " " + rest.class : "") },
    caption ? el("caption", { class: "muted" }, caption) : null,
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", { scope: "col", class: h[1] && h[1].num ? "num" : null },
      h[1] && h[1].hidden ? el("span", { class: "offscreen" }, h[0]) : h[0])))), tbody);
}

// cell is a table cell labelled for the card layout.
export function cell(label, attrs, ...children) {
  return el("td", { "data-label": label, ...attrs }, ...children);
}
