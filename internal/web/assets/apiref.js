// The API reference, rendered in the page from the served OpenAPI
// document (GET /api/v1/openapi.json, the contract the tests hold every
// answer to): every operation with its parameters and answers, and every
// schema. Nothing is fetched from elsewhere.
import { el, api, cardsTable, cell, failure } from "./util.js";

const methods = ["get", "post", "put", "patch", "delete"];

// text renders the document's Markdown-ish prose: paragraphs, "- " lists,
// `code`. Everything stays text (no HTML from the document).
function prose(md) {
  if (!md) return [];
  const out = [];
  let para = [], items = null;
  const flush = () => {
    if (para.length) out.push(el("p", {}, inline(para.join(" "))));
    if (items) out.push(el("ul", {}, items.map((i) => el("li", {}, inline(i)))));
    para = []; items = null;
  };
  for (const line of String(md).trim().split("\n")) {
    if (!line.trim()) { flush(); continue; }
    const item = line.match(/^\s*[-*] (.*)$/);
    if (item) {
      if (para.length) { out.push(el("p", {}, inline(para.join(" ")))); para = []; }
      (items = items || []).push(item[1]);
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

function inline(s) {
  return s.split(/(`[^`]+`)/).map((part) => (part.startsWith("`") && part.endsWith("`") && part.length > 1 ? el("code", {}, part.slice(1, -1)) : whole(part)));
}

// whole keeps hyphenated words on one line (a table cell would break
// "comma-separated" after its hyphen).
function whole(text) {
  return text.split(/(\S*\w-\w\S*)/).map((w, i) => (i % 2 ? el("span", { class: "nw" }, w) : w));
}

// refName is a $ref's last segment.
function refName(ref) { return ref.split("/").pop(); }

// typeOf describes a schema in a few words, linking named schemas.
function typeOf(s) {
  if (!s) return "any";
  if (s.$ref) return el("a", { href: "#/api/schema-" + refName(s.$ref) }, refName(s.$ref));
  if (s.allOf && s.allOf.length === 1) return typeOf(s.allOf[0]);
  if (s.oneOf || s.anyOf) {
    const alts = s.oneOf || s.anyOf;
    return el("span", {}, alts.map((a, i) => [i ? " or " : "", typeOf(a)]));
  }
  if (s.type === "array") return el("span", {}, "array of ", typeOf(s.items));
  let t = s.type || (s.properties ? "object" : "any");
  if (s.format) t += " (" + s.format + ")";
  if (s.enum) t += ": " + s.enum.map((v) => JSON.stringify(v)).join(", ");
  if (s.nullable) t += ", or null";
  return whole(t);
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

function resolve(doc, p) {
  return p && p.$ref ? resolve(doc, p.$ref.split("/").slice(1).reduce((o, k) => o[k], doc)) : p;
}

function params(doc, list) {
  const rows = (list || []).map((p) => resolve(doc, p)).map((p) => el("tr", { "data-param": p.name },
    cell("Name", {}, el("code", {}, p.name)), cell("In", {}, p.in), cell("Type", {}, typeOf(p.schema), constraints(p.schema) ? " (" + constraints(p.schema) + ")" : ""),
    cell("Required", {}, p.required ? "yes" : "no"), cell("Description", {}, inline((p.description || "").replace(/\s+/g, " ").trim()))));
  return rows.length ? cardsTable({ class: "params" }, [["Name"], ["In"], ["Type"], ["Required"], ["Description"]], rows) : el("p", { class: "muted" }, "No parameters.");
}

function responses(doc, rs) {
  const rows = Object.entries(rs || {}).map(([code, r]) => {
    r = resolve(doc, r);
    const content = r.content || {};
    const types = Object.entries(content).map(([ct, m]) => [el("code", {}, ct), m.schema ? [" ", typeOf(m.schema)] : ""]);
    return el("tr", { "data-status": code }, cell("Status", {}, el("code", {}, code)),
      cell("Meaning", {}, inline((r.description || "").split("\n")[0])), cell("Body", {}, types.length ? types.map((t, i) => [i ? "; " : "", t]) : "none"));
  });
  return cardsTable({ class: "responses" }, [["Status"], ["Meaning"], ["Body"]], rows);
}

function auth(op, doc) {
  const sec = op.security || doc.security || [];
  if (!sec.length || sec.every((s) => !Object.keys(s).length)) return "public: no key";
  return sec.map((s) => Object.keys(s).join(" and ")).join(", or ");
}

// groupOf is an operation's section: its path's first segment.
function groupOf(path) { return path.split("/")[1].replace(/^\./, "") || "root"; }

function operation(doc, path, method, op) {
  const id = "op-" + (op.operationId || method + path.replace(/[^a-z0-9]+/gi, "-"));
  const body = op.requestBody ? resolve(doc, op.requestBody) : null;
  return el("section", { class: "op", id, "data-operation": op.operationId || "" },
    el("h3", {}, el("span", { class: "method", "data-method": method }, method.toUpperCase()), el("code", { class: "break" }, path)),
    el("p", {}, el("strong", {}, op.summary || ""), " ", el("span", { class: "muted" }, "(" + auth(op, doc) + ")")),
    ...prose(op.description),
    el("h4", {}, "Parameters"), params(doc, op.parameters),
    body ? [el("h4", {}, "Request body"), el("p", {}, Object.entries(body.content || {}).map(([ct, m], i) => [i ? "; " : "", el("code", {}, ct), " ", typeOf(m.schema)]))] : null,
    el("h4", {}, "Answers"), responses(doc, op.responses));
}

function schema(name, s) {
  const props = Object.entries(s.properties || {});
  const req = new Set(s.required || []);
  const rows = props.map(([k, p]) => el("tr", {}, cell("Field", {}, el("code", {}, k)), cell("Type", {}, typeOf(p)),
    cell("Required", {}, req.has(k) ? "yes" : "no"), cell("Description", {}, inline(((p && p.description) || "").replace(/\s+/g, " ").trim()))));
  return el("details", { id: "schema-" + name, "data-schema": name },
    el("summary", {}, el("code", {}, name), s.description ? " " + s.description.split("\n")[0] : ""),
    props.length ? cardsTable({ class: "fields-table" }, [["Field"], ["Type"], ["Required"], ["Description"]], rows)
      : el("p", {}, "Type: ", typeOf(s), constraints(s) ? " (" + constraints(s) + ")" : "", s.pattern ? [", pattern ", el("code", { class: "break" }, s.pattern)] : ""));
}

export async function apiRefView(main, anchor) {
  main.classList.add("apiref");
  let doc;
  try { doc = await api("/openapi.json", { cache: "default" }); } catch (e) {
    main.append(el("h1", {}, "API reference"), failure(e, "the OpenAPI document"));
    return null;
  }
  const groups = new Map();
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const m of methods) {
      if (!item[m]) continue;
      const g = groupOf(path);
      if (!groups.has(g)) groups.set(g, []);
      groups.get(g).push(operation(doc, path, m, { ...item[m], parameters: [...(item.parameters || []), ...(item[m].parameters || [])] }));
    }
  }
  const base = (doc.servers && doc.servers[0] && doc.servers[0].url) || "/api/v1";
  main.append(el("h1", {}, "API reference"),
    el("p", { class: "lead" }, `${doc.info.title} ${doc.info.version}: every route under `, el("code", {}, base),
      ", rendered from the OpenAPI document this node serves (", el("a", { href: "/api/v1/openapi.json" }, "openapi.json"),
      "), the contract the test suite holds every answer to."),
    ...prose(doc.info.description),
    el("h2", {}, "Routes"),
    el("ul", { class: "toc" }, [...groups.keys()].map((g) => el("li", {}, el("a", { href: "#/api/group-" + g }, "/" + g), ` (${groups.get(g).length})`))),
    ...[...groups.entries()].map(([g, ops]) => el("section", { id: "group-" + g, "aria-labelledby": "group-h-" + g },
      el("h2", { id: "group-h-" + g }, "/" + g), ...ops)),
    el("h2", { id: "schemas" }, "Schemas"),
    ...Object.entries((doc.components && doc.components.schemas) || {}).map(([n, s]) => schema(n, s)));
  // #/api/<id>: scroll to that operation, group or schema.
  if (anchor) {
    const target = document.getElementById(anchor);
    if (target) {
      if (target.tagName === "DETAILS") target.open = true;
      target.scrollIntoView();
    }
  }
  return null;
}
