// The public explorer: the live list with filters in the URL, attestation
// and agent pages, the payload check, global stats.
import { el, api, APIError, actionTypes, typeColors, short } from "./util.js";
import { barChart, stackedTimeline, legend } from "./chart.js";
import { renderLogProof } from "./logproof.js";

// POLL_MS is how often the live list asks for the newest page while the
// tab is visible (a 304 when nothing changed).
const POLL_MS = 1200;
const PAGE = 25;

const filterNames = [["agent", "agentPda"], ["type", "actionType"], ["from", "from"], ["to", "to"]];

export async function listView(main, params) {
  const status = el("p", { class: "status muted", role: "status", "aria-live": "polite", id: "live-status" });
  const form = el("form", { class: "filters", role: "search", "aria-label": "Filter attestations" },
    field("Agent (pda)", el("input", { id: "f-agent", name: "agent", size: 46, spellcheck: "false", value: params.get("agent") || "" })),
    field("Action type", el("select", { id: "f-type", name: "type" }, el("option", { value: "" }, "Any"),
      actionTypes.map((t) => el("option", { value: t, selected: params.get("type") === t }, t)))),
    field("From", el("input", { id: "f-from", name: "from", placeholder: "2026-11-01", size: 22, value: params.get("from") || "" })),
    field("To (exclusive)", el("input", { id: "f-to", name: "to", placeholder: "2026-11-21T10:00:00Z", size: 22, value: params.get("to") || "" })),
    el("button", { type: "submit" }, "Apply"),
    el("a", { href: "#/" }, "Clear filters"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const q = new URLSearchParams();
    for (const [name] of filterNames) {
      const v = form.elements[name].value.trim();
      if (v) q.set(name, v);
    }
    const s = q.toString();
    location.hash = "#/" + (s ? "?" + s : "");
  });
  const tbody = el("tbody", { id: "att-rows" });
  const table = el("table", { id: "att-table" },
    el("caption", { class: "muted" }, "Newest first; the list updates by itself while this tab is visible."),
    el("thead", {}, el("tr", {}, ["Time (UTC)", "Agent", "Action type", "Action hash", "Finality", "Attestation"].map((h) => el("th", { scope: "col" }, h)))),
    tbody);
  main.append(el("h1", {}, "Newest attestations"), form, status, table);

  const query = new URLSearchParams({ limit: String(PAGE) });
  for (const [name, apiName] of filterNames) if (params.get(name)) query.set(apiName, params.get(name));
  const seen = new Set();
  let first = true, busy = false, timer = null;
  async function poll() {
    if (busy || document.visibilityState !== "visible") return;
    busy = true;
    try {
      const page = await api("/attestations?" + query.toString());
      const rows = page.data.map((a) => {
        const tr = el("tr", { "data-pda": a.pda, class: !first && !seen.has(a.pda) ? "new" : null },
          el("td", {}, a.timestamp.replace("T", " ").replace("Z", "")),
          el("td", {}, el("a", { href: "#/agent/" + a.agentPda, class: "mono" }, short(a.agentPda, 12))),
          el("td", {}, a.actionType),
          el("td", { class: "mono" }, short(a.actionHash, 16)),
          el("td", {}, a.commitment),
          el("td", {}, el("a", { href: "#/attestation/" + a.pda, class: "mono", "aria-label": "Attestation " + a.pda }, short(a.pda, 12))));
        return tr;
      });
      for (const a of page.data) seen.add(a.pda);
      tbody.replaceChildren(...rows);
      if (!rows.length) tbody.append(el("tr", {}, el("td", { colspan: 6 }, "No attestation matches these filters.")));
      if (first) performance.mark("attestd:list-rendered"); // time to a rendered list, for measurements
      first = false;
      status.textContent = `${page.pagination.total} attestations; updated ${new Date().toISOString().slice(11, 19)} UTC`;
      status.classList.remove("error");
    } catch (e) {
      status.textContent = !(e instanceof APIError) || e.status >= 500 ? "Cannot reach the API (retrying): " + e.message
        : e.status === 429 ? "Too many requests from your address; the list resumes within a minute."
        : e.status === 400 ? "The filters are not valid: " + e.message : e.message;
      status.classList.add("error");
      if (e instanceof APIError && e.status === 400) { clearInterval(timer); timer = null; }
    } finally {
      busy = false;
    }
  }
  const onVisible = () => { if (document.visibilityState === "visible") poll(); };
  document.addEventListener("visibilitychange", onVisible);
  await poll();
  if (!status.classList.contains("error")) timer = setInterval(poll, POLL_MS);
  return () => { if (timer) clearInterval(timer); document.removeEventListener("visibilitychange", onVisible); };
}

function field(label, input) {
  return el("div", {}, el("label", { for: input.id }, label), input);
}

function notFound(main, what, e) {
  if (e instanceof APIError && (e.status === 404 || e.status === 400)) {
    main.append(el("h1", {}, what + " not found"), el("p", {}, e.message));
    return true;
  }
  throw e;
}

export async function attestationView(main, id) {
  let a;
  try { a = (await api("/attestations/" + encodeURIComponent(id))).data; } catch (e) { notFound(main, "Attestation", e); return null; }
  const rows = [
    ["pda", "Attestation (pda)", a.pda], ["agentPda", "Agent (pda)", a.agentPda], ["agentId", "Agent key", a.agentId],
    ["actionType", "Action type", a.actionType], ["actionHash", "Action hash (SHA-256 of the payload)", a.actionHash],
    ["txSignature", "Transaction signature", a.txSignature], ["slot", "Slot", String(a.slot)], ["timestamp", "Time (UTC)", a.timestamp],
    ["privacyMode", "Privacy mode", a.privacyMode ? "yes" : "no"], ["agentSignature", "Agent signature (Ed25519 over the hash)", a.agentSignature],
    ["commitment", "Finality", a.commitment],
  ];
  const dl = el("dl", { class: "fields" });
  for (const [key, label, value] of rows) {
    let v = el("span", { class: "mono", "data-field": key }, value);
    if (key === "agentPda") v = el("a", { href: "#/agent/" + value, class: "mono", "data-field": key }, value);
    dl.append(el("dt", {}, label), el("dd", {}, v, key === "commitment" ? el("span", { class: "muted" },
      value === "finalized" ? " (final: cannot be rolled back)" : " (confirmed: a fork can still drop it)") : null));
  }
  const payload = el("textarea", { id: "payload", spellcheck: "false", "aria-describedby": "payload-help" });
  const result = el("output", { id: "verify-result", for: "payload", role: "status", "aria-live": "polite" });
  const form = el("form", { id: "verify-form" },
    el("label", { for: "payload" }, "Payload"),
    el("p", { id: "payload-help", class: "muted" }, "Paste the action payload exactly as the agent hashed it (UTF-8 bytes). It is hashed in your browser; nothing is sent."),
    payload, el("p", {}, el("button", { type: "submit" }, "Verify"), " ", result));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(payload.value));
    const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
    const ok = hex === a.actionHash;
    result.replaceChildren(el("span", { class: ok ? "result-match" : "result-mismatch", "data-result": ok ? "match" : "mismatch" },
      ok ? "Match: this payload is the one attested." : "Mismatch: this payload's SHA-256 is " + hex + "."));
  });
  const logProof = el("section", { id: "log-proof", "aria-live": "polite" });
  main.append(el("h1", {}, "Attestation"), dl, logProof, el("h2", {}, "Verify a payload"), form);
  renderLogProof(logProof, a.pda, a);
  return null;
}

export async function agentView(main, id) {
  const enc = encodeURIComponent(id);
  let agent, stats, list;
  try {
    [agent, stats, list] = await Promise.all([api("/agents/" + enc), api("/agents/" + enc + "/stats"),
      api("/attestations?limit=100&agentPda=" + enc)]);
  } catch (e) { notFound(main, "Agent", e); return null; }
  const a = agent.data, s = stats.data;
  const dl = el("dl", { class: "fields" });
  for (const [key, label, value] of [["pda", "Agent (pda)", a.pda], ["agentId", "Agent key", a.agentId], ["operator", "Operator", a.operator],
    ["policyRoot", "Policy root", a.policyRoot], ["registeredAt", "Registered", a.registeredAt], ["revoked", "Revoked", a.revoked ? "yes, " + a.revokedAt : "no"]]) {
    dl.append(el("dt", {}, label), el("dd", { class: "mono", "data-field": key }, value));
  }
  main.append(el("h1", {}, "Agent"), dl,
    el("div", { class: "cards" }, card("Attestations", s.totalAttestations, "totalAttestations"), card("Last 24 h", s.last24h, "last24h"), card("Last 7 days", s.last7d, "last7d")),
    el("h2", {}, "Activity over time by action type"),
    el("p", { class: "muted" }, `The newest ${list.data.length} attestations of ${s.totalAttestations}, by ${bucketUnit(list.data)}.`),
    stackedTimeline("Attestations over time by action type", buckets(list.data)), legend(),
    el("h2", {}, "All attestations by action type"),
    barChart("Attestations by action type", actionTypes.map((t, i) => ({ label: t, value: s.byType[t], color: typeColors[i] }))),
    el("p", {}, el("a", { href: "#/?agent=" + enc }, "Browse this agent's attestations")));
  return null;
}

function card(label, n, key) {
  return el("div", { class: "card" }, el("div", { class: "muted" }, label), el("div", { class: "n", "data-stat": key }, String(n)));
}

// units of the activity chart, finest first: the finest that spans the
// attestations shown in at most 48 buckets.
const units = [["minute", 60e3, 11, 16], ["hour", 3600e3, 5, 16], ["day", 86400e3, 5, 10]];

function unitOf(items) {
  const span = items.length < 2 ? 0 : Date.parse(items[0].timestamp) - Date.parse(items[items.length - 1].timestamp);
  return units.find((u) => span / u[1] < 48) || units[units.length - 1];
}

function bucketUnit(items) { return unitOf(items)[0]; }

// buckets groups attestations by minute, hour or day, oldest first, empty
// buckets included.
function buckets(items) {
  if (!items.length) return [];
  const [, unit, from, to] = unitOf(items);
  const keyOf = (t) => Math.floor(Date.parse(t) / unit) * unit;
  const newest = keyOf(items[0].timestamp), oldest = keyOf(items[items.length - 1].timestamp);
  const out = new Map();
  for (let k = oldest; k <= newest && out.size < 400; k += unit) out.set(k, {});
  for (const a of items) { const b = out.get(keyOf(a.timestamp)); if (b) b[a.actionType] = (b[a.actionType] || 0) + 1; }
  return [...out].map(([k, counts]) => ({ label: new Date(k).toISOString().slice(from, to).replace("T", " "), counts }));
}

export async function statsView(main) {
  const s = await api("/stats"); // /stats answers the object itself (SPEC.md)
  main.append(el("h1", {}, "Global statistics"),
    el("div", { class: "cards" }, card("Agents", s.agents, "agents"), card("Attestations", s.attestations, "attestations"),
      card("Last 24 h", s.last24h, "last24h"), card("Indexed slot", s.indexedSlot, "indexedSlot")),
    el("h2", {}, "Attestations by action type"),
    barChart("Attestations by action type", actionTypes.map((t, i) => ({ label: t, value: s.byType[t], color: typeColors[i] }))));
  return null;
}
