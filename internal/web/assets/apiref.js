// The API reference (#/api), drawn in the page from the OpenAPI document
// this node serves (GET /api/v1/openapi.json, the contract the tests hold
// every answer to). Nothing is fetched from elsewhere.
//
// Why our own renderer and not a packaged one: four maintained renderers
// from npm were tried under this page's Content-Security-Policy (no
// 'unsafe-inline', no 'unsafe-eval') in Chromium. Redoc 2.5.4 (1.1 MB)
// does not render at all (styled-components needs inline <style>, and it
// evaluates strings); RapiDoc 9.3.8 (863 KB) shows unstyled, with 85
// violations and fonts fetched from Google; Scalar 1.46.4 (3.5 MB)
// unstyled, 74 violations, 'unsafe-eval', and calls to scalar.com; Stoplight
// Elements 9.0.25 (2.1 MB of JS and 296 KB of CSS, 14 times this whole
// application) renders with no violation once a shim turns off its icon
// library's <style>, but fails axe-core (serious contrast, a critical
// unnamed button), breaks code words at 390 px, fights the app's hash
// router and has no search. This file is 33 KB (11 KB gzipped) and meets every
// point: groups by purpose, a jump list and a search, collapsed
// operations each with its parameters, a curl call and an example answer
// built from the document, short conventions and errors with links, and
// code words that never break inside.
//
// Groups: an operation's first OpenAPI tag (the document's `tags` give the
// order, names (x-displayName) and descriptions); an operation without
// tags is grouped by its path (purposeOf), so the page is grouped before
// the document has tags and the same once it has them.
import { el, api, cardsTable, cell as tableCell, failure, copyButton } from "./util.js";

const methods = ["get", "post", "put", "patch", "delete"];

// The purposes, in the order the page shows them: tag name, title, what
// the group is for. A document tag of the same name takes their place.
const purposes = [
  ["Attestations", "Attestations, agents and stats", "The public index: attestations, agents, their activity and the counts. No key needed."],
  ["Stream", "The stream", "New attestations as they land, finality changes and fork removals, as server-sent events."],
  ["Premium", "Premium and payments", "Full histories, forensic reports and bulk verification, for an API key or an x402 payment per call; what is for sale, and the keys that sign receipts."],
  ["Webhooks", "Webhooks", "Events pushed to your URL, with their delivery log, retries and recovery."],
  ["Keys", "Keys and sign-in", "Your account's API keys, and the web console's Sign-In-With-Solana session."],
  ["Log", "The log", "The transparency log: checkpoints, inclusion and consistency proofs, tiles."],
  ["Dataset", "The daily dataset", "Every finalized attestation, one Parquet file per UTC day, with its manifest."],
  ["Service", "Service", "Health, this document, and the MCP endpoint."],
];

// purposeOf is the group of an operation without tags, by its path.
function purposeOf(path) {
  if (path === "/attestations/stream") return "Stream";
  if (path.startsWith("/log/") || /\/proof$/.test(path)) return "Log";
  if (/^\/(premium\/|\.well-known\/|llms\.txt$|auth\/payments$)/.test(path)) return "Premium";
  if (path.startsWith("/webhooks")) return "Webhooks";
  if (/^\/(keys|auth)(\/|$)/.test(path)) return "Keys";
  if (path.startsWith("/dataset/")) return "Dataset";
  if (/^\/(attestations|agents|stats|samples)(\/|$)/.test(path)) return "Attestations";
  return "Service";
}

// pathOrder orders a group's operations (the served JSON has its paths
// sorted by name): the longest entry a path starts with gives its rank;
// then by path, then by method.
const pathOrder = ["/attestations", "/attestations/{id}", "/agents", "/stats", "/samples", "/premium/full-history", "/premium/forensic-report",
  "/premium/bulk-verify", "/.well-known/x402", "/llms.txt", "/auth/payments", "/webhooks", "/keys", "/auth/nonce", "/auth/signin", "/auth/session",
  "/auth/signout", "/log/checkpoint", "/log/key", "/attestations/{id}/proof", "/log/consistency", "/log/tile", "/dataset/index.json",
  "/dataset/{day}.json", "/health", "/openapi.json"];

function rank(path) {
  let best = -1, at = pathOrder.length;
  pathOrder.forEach((p, i) => { if (path.startsWith(p) && p.length > best) { best = p.length; at = i; } });
  return at;
}

// The conventions (the bullets of info.description), each under a short
// title in one of four sections. A bullet no rule names keeps its first
// words as its title.
const sections = [["errors", "Errors"], ["limits", "Limits"], ["access", "Keys and payments"], ["formats", "Formats"]];
const conventionRules = [
  [/non-2xx/i, "envelope", "errors", "The error envelope"],
  [/^Routes and methods not in this document/, "unknown-routes", "errors", "Unknown routes and bad HTTP"],
  [/^Unknown or repeated query/, "query", "errors", "Unknown query parameters"],
  [/^Rate limit/, "rate-limit", "limits", "Rate limit"],
  [/^Request bodies/, "bodies", "limits", "Request bodies"],
  [/API key in the `x-api-key`/, "keys", "access", "API keys"],
  [/paid per request/, "x402", "access", "Paying per request (x402)"],
  [/signed-in session/, "session", "access", "Web console sessions"],
  [/Model Context Protocol/, "mcp", "access", "MCP tools"],
  [/^Timestamps/, "timestamps", "formats", "Timestamps"],
  [/^Time bounds/, "time-bounds", "formats", "Time bounds (from, to)"],
  [/^Lists answer/, "lists", "formats", "Lists and pagination"],
  [/^Caching/, "caching", "formats", "Caching and ETags"],
  [/gzip-compressed/, "compression", "formats", "Compression"],
  [/X-Request-ID/, "request-id", "formats", "Request IDs"],
];

// What each security scheme is called on the page, and where it is told.
const schemeNames = { ApiKey: ["API key", "conv-keys"], X402: ["x402 payment", "conv-x402"], Session: ["signed-in session", "conv-session"], McpBearer: ["API key as Bearer", "conv-keys"] };

// blocks splits the document's Markdown-ish prose into paragraphs and
// "- " lists (an indented line continues its item).
function blocks(md) {
  const out = [];
  let para = [], items = null;
  const flush = () => {
    if (para.length) out.push({ p: para.join(" ") });
    if (items) out.push({ ul: items });
    para = []; items = null;
  };
  for (const line of String(md || "").trim().split("\n")) {
    if (!line.trim()) { flush(); continue; }
    const item = line.match(/^\s*[-*] (.*)$/);
    if (item) {
      if (para.length) { out.push({ p: para.join(" ") }); para = []; }
      (items = items || []).push(item[1].trim());
    } else if (items && /^\s{2,}\S/.test(line)) {
      items[items.length - 1] += " " + line.trim();
    } else {
      if (items) flush();
      para.push(line.trim());
    }
  }
  flush();
  return out;
}

function prose(md) {
  return blocks(md).map((b) => (b.p != null ? el("p", {}, inline(b.p)) : el("ul", {}, b.ul.map((i) => el("li", {}, inline(i))))));
}

// inline renders `code` spans and text (never HTML); error codes and
// variables in the text (RATE_LIMITED, ATTESTD_PUBLIC_URL) are code too.
// Code words never break inside: each run without spaces is kept whole
// (.nw), and a long code span wraps only at its spaces.
function inline(s) {
  return String(s || "").split(/(`[^`]+`)/).map((part) => (part.length > 2 && part.startsWith("`") && part.endsWith("`") ? code(part.slice(1, -1))
    : part.split(/\b([A-Z][A-Z0-9]+(?:_[A-Z0-9]+)+)\b/).map((w, i) => (i % 2 ? code(w) : whole(w)))));
}

function code(text, attrs = {}) {
  return el("code", attrs, String(text).split(/(\s+)/).map((w, i) => (i % 2 || !w ? w : kept(w))));
}

// kept is a run without spaces, kept on one line. One too long for a
// phone's line (a pattern, a URL) scrolls in its own box instead.
function kept(w) {
  return w.length > 34 ? el("span", { class: "nw long", tabindex: "0" }, w) : el("span", { class: "nw" }, w);
}

// whole keeps words with a hyphen, a slash or a digit group (on-chain,
// 2026-11-21T10:00:00Z, /api/v1, 1-128) on one line.
function whole(text) {
  return text.split(/(\S*[\w)]([-/.:])[\w(]\S*)/).flatMap((w, i) => (i % 3 === 1 ? [kept(w)] : i % 3 === 2 ? [] : [w]));
}

// firstSentence is the start of a description, up to its first full stop.
function firstSentence(s) {
  const t = String(s || "").replace(/\s+/g, " ").trim();
  const m = t.match(/^(.+?[.!?])(\s|$)/);
  return m ? m[1] : t;
}

// cell is a table cell whose content is one piece (a card on a narrow
// screen lays out a cell's pieces side by side).
function cell(label, attrs, ...children) { return tableCell(label, attrs, el("span", { class: "v" }, children)); }

function slug(s) { return String(s).toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, ""); }

function refName(ref) { return ref.split("/").pop(); }

function resolve(doc, p) {
  for (let i = 0; p && p.$ref && i < 16; i++) p = p.$ref.split("/").slice(1).reduce((o, k) => (o ? o[decodeURIComponent(k.replace(/~1/g, "/").replace(/~0/g, "~"))] : o), doc);
  return p;
}

// typeOf describes a schema in a few words, linking named schemas.
function typeOf(s) {
  if (!s) return "any";
  if (s.$ref) return el("a", { href: "#/api/schema-" + refName(s.$ref) }, refName(s.$ref));
  if (s.allOf && s.allOf.length === 1) return typeOf(s.allOf[0]);
  if (s.oneOf || s.anyOf) return el("span", {}, (s.oneOf || s.anyOf).map((a, i) => [i ? " or " : "", typeOf(a)]));
  if (s.type === "array") return el("span", {}, "array of ", typeOf(s.items));
  let t = s.type || (s.properties ? "object" : "any");
  if (s.format) t += " (" + s.format + ")";
  const out = [whole(t)];
  if (s.enum) out.push(": ", s.enum.map((v, i) => [i ? ", " : "", code(JSON.stringify(v))]));
  if (s.nullable) out.push(", or null");
  return el("span", {}, out);
}

function constraints(s) {
  if (!s) return "";
  const c = [];
  if (s.minimum != null) c.push("≥ " + s.minimum);
  if (s.maximum != null) c.push("≤ " + s.maximum);
  if (s.maxLength != null) c.push("at most " + s.maxLength + " characters");
  if (s.maxItems != null) c.push("at most " + s.maxItems + " items");
  if (s.default != null) c.push("default " + JSON.stringify(s.default));
  return c.join(", ");
}

// ---- Examples, from the document: its examples where it has them, made
// from the schema (formats, patterns, enums, bounds) where it has not.

const sampleStrings = ["2026-11-21T10:00:00Z", "2026-11-21", "INVALID_PARAM", "atst_" + "7Np41oeYqPefeNQEHSv1UDhYrehxin3N"];

// fromPattern makes a string a simple pattern (^[class]{m,n}$) accepts.
function fromPattern(pattern) {
  let re;
  try { re = new RegExp(pattern); } catch { return null; }
  for (const s of sampleStrings) if (re.test(s)) return s;
  const m = pattern.match(/^\^\[([^\]]+)\](?:\{(\d+)(?:,(\d+))?\}|(\+))\$$/);
  if (!m) return null;
  const chars = [];
  for (let i = 0; i < m[1].length; i++) {
    if (m[1][i + 1] === "-" && i + 2 < m[1].length) {
      for (let c = m[1].charCodeAt(i); c <= m[1].charCodeAt(i + 2); c++) chars.push(String.fromCharCode(c));
      i += 2;
    } else chars.push(m[1][i]);
  }
  const min = m[4] ? 8 : +m[2], max = m[3] ? +m[3] : min;
  const n = max <= 88 ? max : min;
  let x = pattern.length * 7919 + n, out = "";
  for (let i = 0; i < n; i++) { x = (x * 1103515245 + 12345) % 2147483648; out += chars[(x >>> 16) % chars.length]; }
  return re.test(out) ? out : null;
}

function sample(doc, s, depth = 0, seen = []) {
  if (!s || depth > 8) return null;
  if (s.$ref) {
    const name = refName(s.$ref);
    if (seen.includes(name)) return null;
    return sample(doc, resolve(doc, s), depth, [...seen, name]);
  }
  if (s.example !== undefined) return s.example;
  if (s.allOf) {
    const parts = s.allOf.map((x) => sample(doc, x, depth, seen));
    return parts.every((p) => p && typeof p === "object" && !Array.isArray(p)) ? Object.assign({}, ...parts) : parts[0];
  }
  if (s.oneOf || s.anyOf) return sample(doc, (s.oneOf || s.anyOf).find((x) => x.type !== "null") || {}, depth, seen);
  if (s.enum) return s.enum[0];
  if (s.default !== undefined) return s.default;
  const type = s.type || (s.properties ? "object" : s.items ? "array" : "");
  if (type === "object") {
    const o = {};
    for (const [k, p] of Object.entries(s.properties || {})) o[k] = sample(doc, p, depth + 1, seen);
    if (!s.properties && s.additionalProperties && typeof s.additionalProperties === "object") o.key = sample(doc, s.additionalProperties, depth + 1, seen);
    return o;
  }
  if (type === "array") return s.items ? [sample(doc, s.items, depth + 1, seen)] : [];
  if (type === "integer" || type === "number") return s.minimum != null ? Math.max(s.minimum, Math.min(s.maximum ?? 1, 1)) : 1;
  if (type === "boolean") return false;
  if (type === "string") {
    const f = { "date-time": "2026-11-21T10:00:00Z", date: "2026-11-21", uri: "https://example.com/hooks/attestd", url: "https://example.com/hooks/attestd",
      email: "dev@example.com", uuid: "3f2a9c1d-0b7e-4c1a-9d2e-5f6a7b8c9d0e", byte: "YXR0ZXN0ZA==", binary: "…" }[s.format];
    return f || (s.pattern && fromPattern(s.pattern)) || (s.minLength ? "x".repeat(s.minLength) : "string");
  }
  return null;
}

// exampleOf is a media type's example: its own, its first named one, or
// one made from its schema.
function exampleOf(doc, media) {
  if (!media) return undefined;
  if (media.example !== undefined) return media.example;
  if (media.examples) {
    const first = resolve(doc, Object.values(media.examples)[0]);
    if (first && first.value !== undefined) return first.value;
  }
  return media.schema ? sample(doc, media.schema) : undefined;
}

function jsonMedia(content) {
  const entries = Object.entries(content || {});
  return entries.find(([ct]) => /json/.test(ct)) || entries[0] || [null, null];
}

function shown(v) { return typeof v === "string" ? v : JSON.stringify(v, null, 2); }

// paramValue is the example value of a parameter.
function paramValue(doc, p) {
  if (p.example !== undefined) return p.example;
  const v = sample(doc, p.schema || {});
  return v == null ? p.name : v;
}

// curlOf is the call as curl makes it: the operation's server, its path
// with example values, required query parameters and headers, the key or
// session it needs, and an example body.
function curlOf(doc, op) {
  const server = ((op.servers || op.pathServers || doc.servers || [])[0] || { url: "/" }).url;
  const base = (/^https?:/.test(server) ? server : location.origin + server).replace(/\/$/, "");
  let path = op.path;
  const query = [], headers = [];
  for (const p of op.parameters) {
    if (p.in === "path") path = path.replace("{" + p.name + "}", encodeURIComponent(String(paramValue(doc, p))));
    else if (p.required && p.in === "query") query.push(encodeURIComponent(p.name) + "=" + encodeURIComponent(String(paramValue(doc, p))));
    else if (p.required && p.in === "header") headers.push(p.name + ": " + paramValue(doc, p));
  }
  const sec = op.security || doc.security || [];
  const open = !sec.length || sec.some((s) => !Object.keys(s).length);
  const schemes = sec.flatMap((s) => Object.keys(s));
  if (!open && (schemes.includes("ApiKey") || schemes.includes("McpBearer"))) headers.push("x-api-key: $ATTESTD_API_KEY");
  else if (!open && schemes.includes("Session")) headers.push("Cookie: attestd_session=$SESSION");
  if (!open && !schemes.includes("ApiKey") && schemes.includes("Session") && op.method !== "get") headers.push("X-CSRF-Token: $CSRF_TOKEN");
  const lines = ["curl -s" + (op.method === "get" ? "" : " -X " + op.method.toUpperCase()) + " '" + base + path + (query.length ? "?" + query.join("&") : "") + "'"];
  const ok = Object.entries(op.responses || {}).find(([c]) => /^2/.test(c));
  const okContent = ok ? Object.keys(resolve(doc, ok[1]).content || {}) : [];
  if (okContent.includes("text/event-stream")) lines[0] = lines[0].replace("curl -s", "curl -sN");
  const binary = okContent.find((ct) => /parquet|octet-stream/.test(ct));
  for (const h of headers) lines.push(h.includes("$") ? '-H "' + h + '"' : "-H '" + h + "'"); // "$ATTESTD_API_KEY" expands
  if (op.requestBody) {
    const body = resolve(doc, op.requestBody);
    const [ct, media] = jsonMedia(body.content);
    const ex = exampleOf(doc, media);
    if (ct) lines.push("-H 'Content-Type: " + ct + "'");
    if (ex !== undefined) lines.push("-d '" + shown(ex).replace(/'/g, "'\\''") + "'");
  }
  if (binary) lines.push("-o " + (path.split("/").pop() || "answer"));
  return lines.join(" \\\n  ");
}

// answerOf is the first success's example: [status, media type, text].
function answerOf(doc, op) {
  const ok = Object.entries(op.responses || {}).find(([c]) => /^2/.test(c));
  if (!ok) return null;
  const r = resolve(doc, ok[1]);
  const [ct, media] = jsonMedia(r.content);
  if (!ct) return [ok[0], null, "No body."];
  if (/parquet|octet-stream/.test(ct) && !(media && media.example)) return [ok[0], ct, "Binary (" + ct + ")."];
  const ex = exampleOf(doc, media);
  return [ok[0], ct, ex === undefined || ex === null ? "(no example)" : shown(ex)];
}

// ---- The page's parts.

function auth(doc, op) {
  const sec = op.security || doc.security || [];
  const open = !sec.length || sec.some((s) => !Object.keys(s).length);
  const named = sec.filter((s) => Object.keys(s).length).map((s) => Object.keys(s).map((k) => {
    const [name, id] = schemeNames[k] || [k, "conventions"];
    return el("a", { href: "#/api/" + id }, name);
  }));
  if (!named.length) return ["Public: no key."];
  const list = named.map((n, i) => [i ? (i === named.length - 1 ? " or " : ", ") : "", n]);
  return open ? ["Public; optionally ", list, "."] : ["Needs an ", list, "."];
}

// tagOf is the short mark of a protected operation in its summary line.
function tagOf(doc, op) {
  const sec = op.security || doc.security || [];
  if (!sec.length || sec.some((s) => !Object.keys(s).length)) return null;
  const schemes = sec.flatMap((s) => Object.keys(s));
  const t = schemes.includes("X402") ? "key or payment" : schemes.includes("ApiKey") ? "key" : schemes.includes("Session") ? "session" : schemes[0];
  return el("span", { class: "tag" }, t);
}

// pathCode shows a path whole; between its segments (after a slash) it may
// wrap on a narrow screen, never inside one.
function pathCode(base, path) {
  const segs = path.split(/(?=\/)/);
  return el("code", { class: "path" }, base && base !== "/" ? el("span", { class: "base" }, base.replace(/\/$/, "")) : null,
    segs.map((s, i) => [i ? el("wbr") : null, el("span", { class: "nw" }, s)]));
}

function params(doc, list) {
  const rows = list.map((p) => el("tr", { "data-param": p.name },
    cell("Name", {}, code(p.name)), cell("In", {}, p.in), cell("Type", {}, typeOf(p.schema), constraints(p.schema) ? " (" + constraints(p.schema) + ")" : ""),
    cell("Required", {}, p.required ? "required" : "optional"), cell("Description", {}, inline((p.description || "").replace(/\s+/g, " ").trim()))));
  return rows.length ? cardsTable({ class: "params cards-wide" }, [["Name"], ["In"], ["Type"], ["Required"], ["Description"]], rows) : el("p", { class: "muted" }, "No parameters.");
}

function fieldsTable(doc, s) {
  s = resolve(doc, s);
  const props = Object.entries((s && s.properties) || {});
  if (!props.length) return null;
  const req = new Set(s.required || []);
  return cardsTable({ class: "fields-table cards-wide" }, [["Field"], ["Type"], ["Required"], ["Description"]], props.map(([k, p]) => el("tr", {},
    cell("Field", {}, code(k)), cell("Type", {}, typeOf(p)), cell("Required", {}, req.has(k) ? "required" : "optional"),
    cell("Description", {}, inline(((p && p.description) || "").replace(/\s+/g, " ").trim())))));
}

// answers: the operation's own answers in a table; the shared error
// answers (components.responses) as links to the Errors section.
function answers(doc, op) {
  const own = [], shared = [];
  for (const [status, raw] of Object.entries(op.responses || {})) {
    if (raw.$ref && /^[45]/.test(status)) { shared.push([status, refName(raw.$ref)]); continue; }
    const r = resolve(doc, raw);
    const types = Object.entries(r.content || {}).map(([ct, m]) => [code(ct), m.schema ? [" ", typeOf(m.schema)] : ""]);
    own.push(el("tr", { "data-status": status }, cell("Status", {}, code(status)), cell("Meaning", {}, inline(firstSentence(r.description))),
      cell("Body", {}, types.length ? types.map((t, i) => [i ? "; " : "", t]) : "none")));
  }
  return [cardsTable({ class: "responses cards-wide" }, [["Status"], ["Meaning"], ["Body"]], own),
    shared.length ? el("p", { class: "errors-line" }, "Errors: ", shared.map(([status, name], i) => [i ? ", " : "",
      el("a", { href: "#/api/err-" + name, title: name }, el("span", { class: "nw" }, status + " " + name))]), ".") : null];
}

function codeBlock(text, what, label) {
  return el("div", { class: "example" },
    el("div", { class: "example-head" }, el("span", {}, label), copyButton(text, what)),
    el("pre", { tabindex: "0", "aria-label": what }, el("code", {}, text)));
}

// description is an operation's description: its first paragraph, and
// the rest, when it is long, behind "More about" (the examples and the
// parameters come first).
function description(op) {
  const parts = prose(op.description);
  if (parts.length < 2 || String(op.description).length < 700) return parts;
  return [parts[0], el("details", { class: "more" }, el("summary", {}, "More about ", code(op.method.toUpperCase() + " " + op.path)), parts.slice(1))];
}

function operation(doc, op) {
  const id = "op-" + (op.operationId || op.method + op.path.replace(/[^a-z0-9]+/gi, "-"));
  const server = ((op.servers || op.pathServers || doc.servers || [])[0] || { url: "/" }).url;
  const body = op.requestBody ? resolve(doc, op.requestBody) : null;
  const answer = answerOf(doc, op);
  const name = op.method.toUpperCase() + " " + op.path;
  const d = el("details", { class: "op", id, "data-operation": op.operationId || "" },
    el("summary", {},
      el("span", { class: "method", "data-method": op.method }, op.method.toUpperCase()), " ",
      pathCode(server, op.path), " ",
      el("span", { class: "what" }, inline(op.summary || "")), " ", tagOf(doc, op)),
    el("div", { class: "op-body" },
      el("p", { class: "auth" }, auth(doc, op), op.operationId ? [" Operation ", code(op.operationId), "."] : ""),
      description(op),
      el("div", { class: "examples" },
        codeBlock(curlOf(doc, op), "curl call of " + name, "Call"),
        answer ? codeBlock(answer[2], "example answer of " + name, ["Example answer: ", code(answer[0]), answer[1] ? [" ", code(answer[1])] : ""]) : null),
      el("h4", {}, "Parameters"), params(doc, op.parameters),
      body ? [el("h4", {}, "Request body"),
        el("p", {}, Object.entries(body.content || {}).map(([ct, m], i) => [i ? "; " : "", code(ct), " ", typeOf(m.schema)]),
          body.description ? [": ", inline(firstSentence(body.description))] : ""),
        fieldsTable(doc, jsonMedia(body.content)[1] && jsonMedia(body.content)[1].schema)] : null,
      el("h4", {}, "Answers"), answers(doc, op)));
  d.dataset.search = [op.method, server.replace(/\/$/, "") + op.path, op.summary, op.operationId, op.group.title, op.group.name,
    op.parameters.map((p) => p.name).join(" "), Object.keys(op.responses || {}).join(" ")].join(" ").toLowerCase();
  return d;
}

function schema(doc, name, s) {
  const table = fieldsTable(doc, s);
  return el("details", { id: "schema-" + name, "data-schema": name },
    el("summary", {}, code(name), s.description ? [" ", el("span", { class: "muted" }, inline(firstSentence(s.description)))] : ""),
    table || el("p", {}, "Type: ", typeOf(s), constraints(s) ? " (" + constraints(s) + ")" : "", s.pattern ? [", pattern ", code(s.pattern)] : ""));
}

// conventions: the description's bullets as short, titled, collapsed
// items in four sections; the Errors section ends with every shared error
// answer.
function conventions(doc, bullets, statusOf) {
  const by = new Map(sections.map(([k]) => [k, []]));
  for (const b of bullets) {
    const rule = conventionRules.find(([re]) => re.test(b));
    const [, id, sec, title] = rule || [null, slug(b.split(/\s+/).slice(0, 4).join(" ")), "formats", b.split(/\s+/).slice(0, 4).join(" ").replace(/[`.,:;]/g, "") + "…"];
    by.get(sec).push(el("details", { class: "conv", id: "conv-" + id }, el("summary", {}, title), el("div", {}, inline(b))));
  }
  const errs = Object.entries((doc.components && doc.components.responses) || {})
    .filter(([name]) => /^[45]/.test(statusOf[name] || ""))
    .sort((a, b) => statusOf[a[0]].localeCompare(statusOf[b[0]]))
    .map(([name, r]) => el("tr", { id: "err-" + name, "data-error": name }, cell("Status", {}, code(statusOf[name])),
      cell("When", {}, inline((r.description || "").replace(/\s+/g, " ").trim()))));
  by.get("errors").push(el("details", { class: "conv", id: "errors-all" }, el("summary", {}, `Every error answer (${errs.length})`),
    cardsTable({ class: "errors cards-wide" }, [["Status"], ["When"]], errs)));
  return el("div", { class: "conventions" }, sections.map(([k, title]) => el("section", { id: "conv-" + k, "aria-labelledby": "conv-h-" + k },
    el("h3", { id: "conv-h-" + k }, title), by.get(k))));
}

// collect reads the document's operations, each with its group.
function collect(doc) {
  const ops = [];
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const method of methods) {
      const o = item[method];
      if (!o) continue;
      const own = new Set((o.parameters || []).map((p) => { const r = resolve(doc, p); return r.in + " " + r.name; }));
      const parameters = [...(item.parameters || []).map((p) => resolve(doc, p)).filter((p) => !own.has(p.in + " " + p.name)), ...(o.parameters || []).map((p) => resolve(doc, p))];
      ops.push({ ...o, path, method, parameters, pathServers: item.servers, tag: (o.tags && o.tags[0]) || purposeOf(path) });
    }
  }
  // The groups: the document's tags in its order, then the purposes.
  const groups = new Map();
  const tagGroups = (doc["x-tagGroups"] || []).flatMap((g) => g.tags || []);
  const docTags = new Map((doc.tags || []).map((t) => [t.name, t]));
  for (const name of [...tagGroups, ...docTags.keys(), ...purposes.map((p) => p[0])]) {
    if (groups.has(name)) continue;
    const t = docTags.get(name), p = purposes.find((x) => x[0] === name);
    groups.set(name, { name, id: "group-" + slug(name), title: (t && (t["x-displayName"] || t.name)) || (p && p[1]) || name,
      about: (t && t.description) || (p && p[2]) || "", ops: [] });
  }
  for (const op of ops) {
    if (!groups.has(op.tag)) groups.set(op.tag, { name: op.tag, id: "group-" + slug(op.tag), title: op.tag, about: "", ops: [] });
    op.group = groups.get(op.tag);
    op.group.ops.push(op);
  }
  for (const g of groups.values()) {
    g.ops.sort((a, b) => rank(a.path) - rank(b.path) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0) || methods.indexOf(a.method) - methods.indexOf(b.method));
  }
  return { ops, groups: [...groups.values()].filter((g) => g.ops.length) };
}

export async function apiRefView(main, anchor) {
  main.classList.add("apiref");
  // The router sets the page's title (app.js), as for every page.
  const restore = () => {};
  let doc;
  try { doc = await api("/openapi.json", { cache: "default" }); } catch (e) {
    main.append(el("h1", {}, "API reference"), failure(e, "the OpenAPI document"));
    return restore;
  }
  const { ops, groups } = collect(doc);
  const statusOf = {}; // a shared answer's status, from the operations using it
  for (const op of ops) for (const [status, r] of Object.entries(op.responses || {})) if (r.$ref) statusOf[refName(r.$ref)] = statusOf[refName(r.$ref)] || status;
  const desc = blocks(doc.info && doc.info.description);
  const intro = desc.filter((b) => b.p != null && !/:$/.test(b.p)).slice(0, 1);
  const bullets = desc.flatMap((b) => b.ul || []);
  const base = ((doc.servers && doc.servers[0]) || { url: "/" }).url;
  const schemas = Object.entries((doc.components && doc.components.schemas) || {});

  const box = el("input", { id: "api-q", type: "search", autocomplete: "off", spellcheck: "false", placeholder: "e.g. webhooks, proof, 402, agentPda" });
  const count = el("span", { id: "api-q-count", class: "muted", role: "status" });
  const cards = groups.map((g) => el("li", { "data-group": g.name },
    el("a", { href: "#/api/" + g.id }, el("span", { class: "name" }, whole(g.title)), " ", el("span", { class: "n" }, `${g.ops.length} operation${g.ops.length === 1 ? "" : "s"}`)),
    g.about ? el("span", { class: "about" }, inline(firstSentence(g.about))) : null));
  const opEls = new Map(ops.map((op) => [op, operation(doc, op)]));
  const groupEls = groups.map((g) => el("section", { class: "group", id: g.id, "aria-labelledby": g.id + "-h", "data-group": g.name },
    el("h2", { id: g.id + "-h" }, g.title, " ", el("span", { class: "muted n" }, `(${g.ops.length})`)),
    g.about ? el("p", { class: "about" }, inline(g.about)) : null,
    g.ops.map((op) => opEls.get(op))));

  main.append(
    el("h1", {}, "API reference"),
    el("p", { class: "lead" }, `${ops.length} operations of ${doc.info.title} ${doc.info.version} under `, code(base),
      ", from the ", el("a", { href: "/api/v1/openapi.json" }, "OpenAPI document"), " this node serves."),
    el("form", { class: "api-find", role: "search", "aria-label": "Operations", onsubmit: (e) => { e.preventDefault(); openFirst(); } },
      el("label", { for: "api-q" }, "Find an operation"), el("div", { class: "row" }, box, count)),
    // A navigation landmark, but no <nav>: the header's rules for "nav ul" (its menu) must not apply.
    el("div", { class: "groups", role: "navigation", "aria-label": "Groups of operations" }, el("ul", {}, cards)),
    ...intro.map((b) => el("p", { class: "intro" }, inline(b.p))),
    el("h2", { id: "conventions" }, "Conventions"),
    conventions(doc, bullets, statusOf),
    ...groupEls,
    el("h2", { id: "schemas-h" }, "Schemas"),
    el("details", { id: "schemas", class: "schemas" }, el("summary", {}, `All ${schemas.length} named types`), schemas.map(([n, s]) => schema(doc, n, s))));

  // The search: every word must match an operation's method, path,
  // summary, id, group or parameter names. Enter opens the first match.
  const filter = () => {
    const words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    let shownN = 0;
    for (const g of groups) {
      let n = 0;
      for (const op of g.ops) {
        const d = opEls.get(op), hit = words.every((w) => d.dataset.search.includes(w));
        d.hidden = !hit;
        if (hit) n++;
      }
      shownN += n;
      main.querySelector(`section.group[data-group="${CSS.escape(g.name)}"]`).hidden = n === 0;
      const card = main.querySelector(`.groups li[data-group="${CSS.escape(g.name)}"]`);
      card.hidden = n === 0;
      card.querySelector(".n").textContent = words.length ? `${n} of ${g.ops.length}` : `${g.ops.length} operation${g.ops.length === 1 ? "" : "s"}`;
    }
    count.textContent = words.length ? (shownN ? `${shownN} of ${ops.length} operations match` : "No operation matches") : "";
  };
  const openFirst = () => {
    const d = [...opEls.values()].find((x) => !x.hidden);
    if (d) go(d.id, true);
  };
  box.addEventListener("input", filter);
  box.addEventListener("keydown", (e) => { if (e.key === "Escape") { box.value = ""; filter(); } });

  // go shows a part of the page (an operation, group, convention, error
  // or schema): opens what holds it, scrolls to it, and names it in the URL.
  const go = (id, push) => {
    const target = document.getElementById(id) || (id.startsWith("conv-") ? document.getElementById("conventions") : null);
    if (!target || !main.contains(target)) return;
    if (target.closest(".op[hidden], section.group[hidden]")) { box.value = ""; filter(); }
    for (let p = target; p && p !== main; p = p.parentElement) if (p.tagName === "DETAILS") p.open = true;
    target.scrollIntoView({ block: "start" });
    if (!push) return; // a link opened from elsewhere: the router focuses the page
    const focusable = target.tagName === "DETAILS" ? target.querySelector("summary") : target;
    if (focusable === target && !target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
    focusable.focus({ preventScroll: true });
    history.pushState(null, "", "#/api/" + id);
  };
  main.addEventListener("click", (e) => {
    const a = e.target.closest("a[href^='#/api/']");
    if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button) return;
    e.preventDefault();
    go(a.getAttribute("href").slice("#/api/".length), true);
  });
  // An operation opened by hand names itself in the URL (a link to share).
  for (const d of opEls.values()) {
    d.addEventListener("toggle", () => {
      if (d.open && location.hash !== "#/api/" + d.id) history.replaceState(null, "", "#/api/" + d.id);
    });
  }
  if (anchor) go(anchor, false);
  return restore;
}
