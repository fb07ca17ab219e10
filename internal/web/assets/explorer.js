// The public explorer: the live list (server-sent events, no polling) with
// filters and cursor paging in the URL, attestation, agent and agents
// pages, the payload check, global stats with activity over time.
import { el, api, APIError, actionTypes, typeColors, short, num, plural, nw, span, blob, when, badge, idWithCopy, copyButton, sha256hex, canonicalJSON, exact, failure, cardsTable, cell } from "./util.js";
import { barChart, timeline, legend, stepMs } from "./chart.js";
import { liveStream } from "./live.js";
import { renderLogProof } from "./logproof.js";

const PAGE = 25;

// The list's URL parameters and the API's names for them. hash and tx are
// the lookups (an action hash, a transaction signature): shown as chips.
const filterNames = [["agent", "agentPda"], ["type", "actionType"], ["from", "from"], ["to", "to"], ["hash", "actionHash"], ["tx", "txSignature"]];

// listParams are the URL parameters that make a list page.
export const listParams = ["agent", "type", "from", "to", "cursor", "back", "hash", "tx"];

// pager is the Newer/Older navigation of a list paged by cursor: the
// cursors of the pages before this one ride in the URL ("back").
function pager(base, params, nextCursor, label) {
  const nav = el("nav", { class: "pager", "aria-label": label + " pages" });
  const back = (params.get("back") || "").split(",").filter(Boolean);
  const href = (cursor, stack) => {
    const q = new URLSearchParams(params);
    q.delete("cursor"); q.delete("back");
    if (cursor) { q.set("cursor", cursor); if (stack.length) q.set("back", stack.join(",")); }
    const s = q.toString();
    return base + (s ? "?" + s : "");
  };
  if (params.get("cursor")) {
    nav.append(el("a", { href: href("", []), id: "page-newest" }, "« Newest"), " ");
    nav.append(el("a", { href: href(back[back.length - 1] || "", back.slice(0, -1)), id: "page-newer", rel: "prev" }, "‹ Newer"), " ");
  }
  if (nextCursor) {
    const stack = params.get("cursor") ? [...back, params.get("cursor")] : [];
    nav.append(el("a", { href: href(nextCursor, stack.slice(-20)), id: "page-older", rel: "next" }, "Older ›"));
  }
  return nav;
}

// attestationRow is a row of an attestations table. On a phone it is a
// compact block of three lines (table.compact): the type, time and
// finality; the attestation and its agent; the action hash (data-short
// is a cell's label there).
export function attestationRow(a, fresh) {
  return el("tr", { "data-pda": a.pda, class: fresh ? "new" : null },
    el("td", { "data-label": "Time", "data-short": "" }, when(a.timestamp)),
    el("td", { "data-label": "Agent", "data-short": "by" }, el("a", { href: "#/agent/" + a.agentPda, class: "mono nw", title: a.agentPda }, short(a.agentPda, 12))),
    el("td", { "data-label": "Action type", "data-short": "" }, badge(a.actionType)),
    el("td", { "data-label": "Action hash", "data-short": "hash" }, el("span", { class: "mono nw", title: a.actionHash }, short(a.actionHash, 16)), " ", copyButton(a.actionHash, "action hash")),
    el("td", { "data-label": "Finality", "data-short": "", "data-commitment": a.commitment }, a.commitment),
    el("td", { "data-label": "Attestation", "data-short": "" }, el("a", { href: "#/attestation/" + a.pda, class: "mono nw", title: a.pda }, short(a.pda, 12)), " ",
      copyButton(a.pda, "attestation pda")));
}

// attestationsTable is the list's table with its rows (an empty list
// says so).
export function attestationsTable(id, bodyId, caption, rows, empty) {
  return cardsTable({ id, bodyId, caption, class: "compact att-list" }, [["Time"], ["Agent"], ["Action type"], ["Action hash"], ["Finality"], ["Attestation"]], rows, empty);
}

export async function listView(main, params) {
  const status = el("p", { class: "status muted", role: "status", id: "live-status" });
  const form = el("form", { class: "filters", role: "search", "aria-label": "Filter attestations" },
    field("Agent (pda)", el("input", { id: "f-agent", name: "agent", spellcheck: "false", autocomplete: "off", value: params.get("agent") || "" })),
    field("Action type", el("select", { id: "f-type", name: "type" }, el("option", { value: "" }, "Any"),
      actionTypes.map((t) => el("option", { value: t, selected: params.get("type") === t }, t)))),
    field("From", el("input", { id: "f-from", name: "from", placeholder: "2026-11-01", value: params.get("from") || "" })),
    field("To (exclusive)", el("input", { id: "f-to", name: "to", placeholder: "2026-11-21T10:00:00Z", value: params.get("to") || "" })),
    el("div", { class: "actions" }, el("button", { type: "submit" }, "Apply"), " ", el("a", { href: "#/attestations" }, "Clear filters")));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const q = new URLSearchParams();
    for (const [name] of filterNames) {
      const input = form.elements[name];
      const v = input ? input.value.trim() : (params.get(name) || ""); // the lookups ride along
      if (v) q.set(name, v);
    }
    const s = q.toString();
    location.hash = "#/attestations" + (s ? "?" + s : "");
  });
  // The lookups (from the search): a chip each, with a way out.
  const chips = el("div", { class: "chips" });
  for (const [name, label] of [["hash", "Action hash"], ["tx", "Transaction"]]) {
    const v = params.get(name);
    if (!v) continue;
    const rest = new URLSearchParams(params);
    rest.delete(name); rest.delete("cursor"); rest.delete("back");
    chips.append(el("span", { class: "chip", "data-chip": name }, label + " ", el("span", { class: "mono", title: v }, short(v, 16)), " ",
      el("a", { href: "#/attestations" + (rest.toString() ? "?" + rest : ""), "aria-label": "Remove the " + label.toLowerCase() + " filter" }, "×")));
  }
  const cursor = params.get("cursor");
  const live = !cursor && !params.get("to");
  const table = attestationsTable("att-table", "att-rows", live ? "Newest first; new attestations appear by themselves." : "Newest first.", []);
  const tbody = table.tBodies[0];
  // The filters fold behind one control (open on a wide screen): on a
  // phone the list is the first screen.
  const active = [params.get("type"), params.get("agent") && "agent " + short(params.get("agent"), 6),
    params.get("from") && "from " + params.get("from"), params.get("to") && "to " + params.get("to")].filter(Boolean);
  const filterBox = el("details", { class: "filters-box", id: "filters", open: window.matchMedia("(min-width: 721px)").matches },
    el("summary", {}, "Filters", active.length ? el("span", { class: "muted" }, ": ", active.map((x, i) => [i ? ", " : "", nw(x)])) : el("span", { class: "muted" }, " (none)")), form);
  main.append(el("h1", {}, cursor ? "Attestations" : "Newest attestations"), filterBox, chips, status, table);

  const query = new URLSearchParams({ limit: String(PAGE) });
  for (const [name, apiName] of filterNames) if (params.get(name)) query.set(apiName, params.get(name));
  if (cursor) query.set("cursor", cursor);
  let page;
  try {
    page = await api("/attestations?" + query.toString());
  } catch (e) {
    if (e instanceof APIError && e.status === 400) {
      status.textContent = "The filters are not valid: " + e.message;
      status.classList.add("error");
    } else {
      status.replaceWith(failure(e, "the attestations"));
    }
    return null;
  }
  tbody.replaceChildren(...page.data.map((a) => attestationRow(a, false)));
  if (!page.data.length) tbody.append(el("tr", {}, el("td", { colspan: 6, class: "empty", "data-label": "" }, "No attestation matches these filters.")));
  performance.mark("attestd:list-rendered"); // time to a rendered list, for measurements
  let total = page.pagination.total;
  const say = (extra) => { status.textContent = plural(total, "attestation") + (extra ? "; " + extra : ""); };
  say("");
  main.append(pager("#/attestations", params, page.pagination.nextCursor, "Attestation"));
  if (!live) return null;

  // Live: the stream's events keep the first page exact.
  const filters = new URLSearchParams();
  for (const [name, apiName] of filterNames) if (name !== "from" && name !== "to" && params.get(name)) filters.set(apiName, params.get(name));
  const from = params.get("from");
  return liveStream(filters, {
    attestation(a) {
      if (tbody.querySelector(`tr[data-pda="${CSS.escape(a.pda)}"]`)) return;
      if (from && Date.parse(a.timestamp) < Date.parse(from)) return;
      const empty = tbody.querySelector("tr:not([data-pda])");
      if (empty) empty.remove();
      tbody.prepend(attestationRow(a, true));
      while (tbody.rows.length > PAGE) tbody.rows[tbody.rows.length - 1].remove();
      total++;
      say("live");
    },
    commitment(a) {
      const td = tbody.querySelector(`tr[data-pda="${CSS.escape(a.pda)}"] td[data-commitment]`);
      if (td) { td.textContent = a.commitment; td.dataset.commitment = a.commitment; }
    },
    removed(r) {
      const tr = tbody.querySelector(`tr[data-pda="${CSS.escape(r.pda)}"]`);
      if (tr) { tr.remove(); total = Math.max(0, total - 1); say("live"); }
    },
    state(s) { say(s); },
  }, page.data.length ? cursorOf(page.data[0]) : "");
}

// cursorOf is an attestation's list cursor (what the API's nextCursor and
// the stream's event ids are): base64url of "unix.slot.pda".
export function cursorOf(a) {
  return btoa(`${Math.floor(Date.parse(a.timestamp) / 1000)}.${a.slot}.${a.pda}`).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function field(label, input) {
  return el("div", { class: "field" }, el("label", { for: input.id }, label), input);
}

function notFound(main, what, e) {
  if (e instanceof APIError && (e.status === 404 || e.status === 400)) {
    main.append(el("h1", {}, what + " not found"), el("p", {}, e.message));
    return true;
  }
  main.append(el("h1", {}, what), failure(e, "this " + what.toLowerCase()));
  return false;
}

export async function attestationView(main, id) {
  let a;
  try { a = (await api("/attestations/" + encodeURIComponent(id))).data; } catch (e) { notFound(main, "Attestation", e); return null; }
  const dl = el("dl", { class: "fields" });
  const add = (label, ...value) => dl.append(el("div", {}, el("dt", {}, label), el("dd", {}, ...value)));
  add("Attestation (pda)", idWithCopy(a.pda, "attestation pda", { field: "pda" }));
  add("Agent (pda)", idWithCopy(a.agentPda, "agent pda", { field: "agentPda", href: "#/agent/" + a.agentPda }));
  add("Agent key", idWithCopy(a.agentId, "agent key", { field: "agentId" }));
  add("Action type", el("span", { "data-field": "actionType", hidden: true }, a.actionType), badge(a.actionType));
  add("Action hash (SHA-256 of the payload)", idWithCopy(a.actionHash, "action hash", { field: "actionHash" }));
  add("Transaction signature", idWithCopy(a.txSignature, "transaction signature", { field: "txSignature" }));
  add("Slot", el("span", { class: "nw", "data-field": "slot", "data-value": a.slot }, num(a.slot)));
  add("Time", el("span", { "data-field": "timestamp", class: "mono nw" }, a.timestamp), " (", when(a.timestamp), ")");
  add("Privacy mode", el("span", { "data-field": "privacyMode" }, a.privacyMode ? "yes" : "no"));
  add("Agent signature (Ed25519 over the hash)", idWithCopy(a.agentSignature, "agent signature", { field: "agentSignature" }));
  add("Finality", el("span", { "data-field": "commitment" }, a.commitment), el("span", { class: "muted" },
    a.commitment === "finalized" ? " (final: cannot be rolled back)" : " (confirmed: a fork can still drop it)"));

  const payload = el("textarea", { id: "payload", spellcheck: "false", "aria-describedby": "payload-help", rows: 5 });
  const result = el("output", { id: "verify-result", for: "payload", role: "status", "aria-live": "polite" });
  const sample = el("p", { id: "sample" });
  const form = el("form", { id: "verify-form", novalidate: true },
    el("label", { for: "payload" }, "Payload"),
    el("p", { id: "payload-help", class: "muted" }, "Paste the action payload. It is hashed in your browser (nothing is sent): its UTF-8 bytes as given, ",
      "and, when it is JSON, its RFC 8785 canonical form too, as the MCP verify tool does."),
    payload, sample, el("p", {}, el("button", { type: "submit" }, "Verify")), result);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    result.replaceChildren(...await verify(payload.value, a.actionHash));
  });
  const logProof = el("section", { id: "log-proof", "aria-live": "polite" });
  // The lookups: the same payload attested elsewhere, the rest of its transaction.
  const related = el("p", { id: "related" }, el("a", { href: "#/attestations?hash=" + a.actionHash }, "Every attestation of this payload hash"), " · ",
    el("a", { href: "#/attestations?tx=" + encodeURIComponent(a.txSignature) }, "Every attestation of this transaction"));
  main.append(el("h1", {}, "Attestation"), dl, related, logProof, el("h2", {}, "Verify a payload"), form);
  // The displayed attestation itself is what the proof's leaf must match.
  renderLogProof(logProof, a.pda, a, { el, num, plural, blob });
  // A published sample payload (demo data): offer it.
  api("/samples?actionHash=" + a.actionHash).then((s) => {
    if (!s.data.length) return;
    const b = el("button", { type: "button", class: "secondary", id: "try-sample" }, "Try the sample payload");
    b.addEventListener("click", () => { payload.value = s.data[0].payload; payload.focus(); });
    sample.replaceChildren(b, el("span", { class: "muted" }, " This attestation's payload is published with the demo data."));
  }).catch(() => {});
  return null;
}

// verify hashes text both ways and says which form matched.
async function verify(text, want) {
  if (text.length === 0) {
    return [el("span", { class: "result-mismatch", "data-result": "empty" }, "Paste a payload first: an empty box has nothing to check.")];
  }
  const raw = await sha256hex(new TextEncoder().encode(text));
  let canon = null, why = "not JSON";
  try { canon = await sha256hex(new TextEncoder().encode(canonicalJSON(JSON.parse(text)))); } catch (e) { why = e instanceof SyntaxError ? "not JSON" : e.message; }
  const line = (name, h) => el("li", {}, name + ": ", blob(h), h === want ? el("strong", {}, " (matches)") : null);
  const details = el("ul", { class: "hashes" }, line("SHA-256 of the bytes", raw),
    canon ? line("SHA-256 of the RFC 8785 form", canon) : el("li", {}, "RFC 8785 form: none (" + why + ")"));
  if (raw === want) return [el("span", { class: "result-match", "data-result": "match", "data-form": "raw" }, "Match: the payload's bytes are the ones attested."), details];
  if (canon === want) return [el("span", { class: "result-match", "data-result": "match", "data-form": "canonical" }, "Match: the payload's RFC 8785 canonical form is the one attested."), details];
  return [el("span", { class: "result-mismatch", "data-result": "mismatch" }, "Mismatch: neither form hashes to " + short(want, 16) + "."), details];
}

// The activity charts' ranges: "life" fits the data (from the first
// attestation to now, by hour when that is at most 3 days, else by day;
// at least the last 6 hours, so that a young agent's hour in progress is
// one bar of several, not the whole chart), the others are fixed windows.
const ranges = [["life", "Whole life"], ["24h", "24 h"], ["7d", "7 days"], ["30d", "30 days"]];

// MIN_HOURS is the fewest hourly buckets a whole-life chart shows.
const MIN_HOURS = 6;

function hourFloor(ms) { return new Date(Math.floor(ms / 3600e3) * 3600e3).toISOString().replace(".000Z", "Z"); }

// lifeQuery is the query of the whole-life range given the first
// attestation's time (null: none yet).
export function lifeQuery(first, now = Date.now()) {
  if (!first) return "bucket=hour";
  const span = now - Date.parse(first);
  if (span <= 3 * 86400e3) return "bucket=hour&from=" + hourFloor(Math.min(Date.parse(first), now - (MIN_HOURS - 1) * 3600e3));
  return "bucket=day&from=" + first.slice(0, 10);
}

function rangeQuery(key, first) {
  const now = Date.now();
  switch (key) {
    case "24h": return "bucket=hour";
    case "7d": return "bucket=hour&from=" + hourFloor(now - 7 * 86400e3 + 3600e3);
    case "30d": return "bucket=day&from=" + new Date(now - 29 * 86400e3).toISOString().slice(0, 10);
  }
  return lifeQuery(first, now);
}

// chartWidth is the width a chart is drawn at: the content's, 300 to 960.
function chartWidth(main) { return Math.max(300, Math.min(960, main.clientWidth - 10)); }

// activityChart draws the series of path (an activity route) with a range
// picker. first is the first attestation's time, for the whole life; when
// it is not known, the life range asks the API by day first (it starts at
// the first day with an attestation) and by hour when that is 3 days or
// less.
export function activityChart(main, path, title, first) {
  const box = el("div", { class: "chart", id: "activity" });
  const picker = el("div", { class: "ranges", role: "group", "aria-label": "Range of the chart" });
  const note = el("p", { class: "muted", id: "activity-note", role: "status" });
  async function show(key) {
    for (const b of picker.children) b.setAttribute("aria-pressed", String(b.dataset.range === key));
    const r = ranges.find((x) => x[0] === key);
    try {
      let s;
      if (key === "life" && first === undefined) {
        s = (await api(path + "?bucket=day")).data;
        if (s.series.length <= 3) s = (await api(path + "?bucket=hour&from=" + hourFloor(Math.min(Date.parse(s.from), Date.now() - (MIN_HOURS - 1) * 3600e3)))).data;
      } else {
        s = (await api(path + "?" + rangeQuery(key, first))).data;
      }
      const now = Date.now();
      const step = stepMs(s.bucket);
      const done = s.series.filter((p) => Date.parse(p.at) + step <= now);
      const sum = s.series.reduce((n, p) => n + p.total, 0);
      const peak = done.reduce((m, p) => (p.total > m.total ? p : m), { total: -1 });
      const day = s.bucket === "day";
      box.replaceChildren(timeline(`${title}, ${r[1].toLowerCase()}, per ${s.bucket}`, s, chartWidth(main), now));
      // The whole life says how long that is: a young agent's few hours
      // are drawn by hour (the finest bucket the API counts), its hour in
      // progress pale.
      const life = key === "life" && first ? `Its whole life so far: ${span(now - Date.parse(first))}, since ${exact(first)}. ` : "";
      note.textContent = life + `${plural(sum, "attestation")} from ${exact(s.from)} to ${exact(s.to)}, by ${s.bucket}` +
        (life && s.bucket === "hour" && Date.parse(s.from) < Date.parse(first) - 3600e3 ? ` (at least the last ${MIN_HOURS} hours are shown)` : "") +
        (peak.total > 0 ? `; busiest complete ${s.bucket}: ${day ? peak.at.slice(0, 10) : exact(peak.at)} with ${num(peak.total)}` : "") +
        (s.series.length > done.length ? `; the last ${s.bucket} is in progress (pale).` : ".") + " Hover or focus the chart for exact counts.";
      box.dataset.total = String(sum);
      box.dataset.bucket = s.bucket;
    } catch (e) {
      note.replaceChildren(failure(e, "the chart"));
    }
  }
  for (const [key, label] of ranges) {
    const b = el("button", { type: "button", class: "secondary", "data-range": key, "aria-pressed": "false" }, label);
    b.addEventListener("click", () => show(key));
    picker.append(b, " ");
  }
  return { nodes: [picker, box, legend(), note], show };
}

export async function agentView(main, id) {
  const enc = encodeURIComponent(id);
  let agent, stats;
  try {
    [agent, stats] = await Promise.all([api("/agents/" + enc), api("/agents/" + enc + "/stats")]);
  } catch (e) { notFound(main, "Agent", e); return null; }
  const a = agent.data, s = stats.data;
  const dl = el("dl", { class: "fields" });
  const add = (label, ...value) => dl.append(el("div", {}, el("dt", {}, label), el("dd", {}, ...value)));
  add("Agent (pda)", idWithCopy(a.pda, "agent pda", { field: "pda" }));
  add("Agent key", idWithCopy(a.agentId, "agent key", { field: "agentId" }));
  add("Operator", idWithCopy(a.operator, "operator", { field: "operator" }));
  add("Policy root", idWithCopy(a.policyRoot, "policy root", { field: "policyRoot" }));
  add("Registered", el("span", { "data-field": "registeredAt", class: "mono" }, a.registeredAt), " (", when(a.registeredAt), ")");
  add("Status", el("span", { "data-field": "revoked", class: a.revoked ? "status-revoked" : "status-active" }, a.revoked ? "revoked " + exact(a.revokedAt) : "active"));
  const chart = activityChart(main, "/agents/" + enc + "/activity", "Attestations of this agent over time by action type", s.firstAttestationAt || null);
  main.append(el("h1", {}, "Agent"), dl,
    el("div", { class: "cards" }, card("Attestations, all time", s.totalAttestations, "totalAttestations"), card("Attestations, last 24\u00a0h", s.last24h, "last24h"),
      card("Attestations, last 7\u00a0days", s.last7d, "last7d")),
    el("p", { class: "muted" }, "First attestation ", when(s.firstAttestationAt, "none yet"), ", last ", when(s.lastAttestationAt, "none yet"), "."),
    el("h2", {}, "Activity over time"), ...chart.nodes,
    el("h2", {}, "All attestations by action type"),
    barChart("Attestations by action type", actionTypes.map((t, i) => ({ label: t, value: s.byType[t], color: typeColors[i] })), chartWidth(main)),
    el("p", {}, el("a", { href: "#/attestations?agent=" + enc }, "Browse this agent's attestations")));
  await chart.show("life");
  return null;
}

function card(label, n, key) {
  return el("div", { class: "card" }, el("div", { class: "label" }, label), el("div", { class: "n nw", "data-stat": key, "data-value": n }, num(n)));
}

// latestEvent says what an agent's latest activity (the list's order) was:
// an attestation, its registration, a policy update or its revocation.
function latestEvent(a) {
  const at = Date.parse(a.lastActivityAt);
  const what = a.lastAttestationAt && Date.parse(a.lastAttestationAt) >= at ? "attestation"
    : a.revoked && a.revokedAt && Date.parse(a.revokedAt) >= at ? "revoked"
      : Date.parse(a.registeredAt) >= at ? "registered" : "policy update";
  return el("span", { "data-event": what }, what + " ", when(a.lastActivityAt));
}

export async function agentsView(main, params) {
  const q = new URLSearchParams({ limit: String(PAGE) });
  if (params.get("cursor")) q.set("cursor", params.get("cursor"));
  let page;
  try { page = await api("/agents?" + q.toString()); } catch (e) { notFound(main, "Agents", e); return null; }
  const rows = page.data.map((a) => el("tr", { "data-agent": a.pda },
    cell("Agent", { "data-short": "" }, el("a", { href: "#/agent/" + a.pda, class: "mono nw", title: a.pda }, short(a.pda, 14)), " ", copyButton(a.pda, "agent pda")),
    cell("Attestations", { "data-count": a.attestationCount, class: "num", "data-short": "Attestations" }, nw(num(a.attestationCount))),
    cell("Last attestation", { "data-short": "last" }, when(a.lastAttestationAt, "none yet")),
    cell("Latest event", { "data-short": "Latest event:" }, latestEvent(a)),
    cell("Registered", { "data-short": "registered" }, when(a.registeredAt)),
    cell("Status", { "data-short": "", "data-state": a.revoked ? "revoked" : "active" }, a.revoked ? "revoked" : "active")));
  main.append(el("h1", {}, "Agents"),
    el("p", { class: "muted", id: "agents-total" }, `${plural(page.pagination.total, "agent")}, the most recently active first `,
      "(by their latest event: an attestation, a registration, a policy update or a revocation)."),
    cardsTable({ id: "agents-table", bodyId: "agent-rows", class: "compact agent-list" }, [["Agent"], ["Attestations", { num: true }], ["Last attestation"], ["Latest event"], ["Registered"], ["Status"]],
      rows, "No agent is registered yet: agents appear here once their registration is indexed."),
    pager("#/agents", params, page.pagination.nextCursor, "Agent"));
  return null;
}

export async function statsView(main) {
  let s;
  try { s = await api("/stats"); } catch (e) { notFound(main, "Global statistics", e); return null; } // /stats answers the object itself (SPEC.md)
  const chart = activityChart(main, "/stats/activity", "Attestations over time by action type");
  main.append(el("h1", {}, "Global statistics"),
    el("div", { class: "cards" }, card("Agents", s.agents, "agents"), card("Attestations, all time", s.attestations, "attestations"),
      card("Attestations, last 24\u00a0h", s.last24h, "last24h"), card("Indexed up to slot", s.indexedSlot, "indexedSlot")),
    el("h2", {}, "Activity over time"), ...chart.nodes,
    el("h2", {}, "Attestations by action type"),
    barChart("Attestations by action type", actionTypes.map((t, i) => ({ label: t, value: s.byType[t], color: typeColors[i] })), chartWidth(main)));
  await chart.show("life");
  return null;
}
