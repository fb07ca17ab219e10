// The home page: what is happening now. One cacheable answer
// (GET /stats/overview) for the figures (the pace, active agents, the
// busiest ones, the indexer's lag, finality, the log), the last 24 hours
// by hour, and the newest attestations live (the stream, no polling).
import { el, api, num, when, short, duration, failure, cardsTable, cell, copyButton, exact } from "./util.js";
import { timeline, legend } from "./chart.js";
import { liveStream } from "./live.js";
import { attestationRow, attestationsTable, cursorOf } from "./explorer.js";

const NEWEST = 10;

// stat is one figure: a label, the number (data-stat names it, data-value
// holds the API's value), and a line under it.
function stat(label, key, value, shown, sub, warn) {
  return el("div", { class: "card" + (warn ? " warn" : ""), "data-card": key }, el("div", { class: "muted" }, label),
    el("div", { class: "n", "data-stat": key, "data-value": value }, shown), sub ? el("div", { class: "sub" }, sub) : null);
}

// figures draws the overview's cards.
function figures(o) {
  const cards = [
    stat("Attestations", "attestations", o.attestations, num(o.attestations), `${num(o.agents)} agents registered`),
    stat("Per minute now", "perMinuteNow", o.rate.perMinuteNow, num(o.rate.perMinuteNow),
      `${num(o.rate.lastWindow)} in the last ${o.rate.windowSeconds / 60} min`),
    stat("Per minute, day", "perMinute24h", o.rate.perMinute24h, num(o.rate.perMinute24h), `${num(o.rate.last24h)} in the last 24 h`),
    stat("Active agents", "activeAgents24h", o.activeAgents24h, num(o.activeAgents24h), "with an attestation in the last 24 h"),
  ];
  const ix = o.indexer;
  if (ix && !ix.lastIndexedAt) {
    // No indexer has written here yet: a lag of 0 would say "current".
    cards.push(stat("Indexer lag", "lagSlots", ix.lagSlots, "none yet", "no indexer has run against this database", true));
  } else if (ix) {
    cards.push(stat("Indexer lag", "lagSlots", ix.lagSlots, num(ix.lagSlots) + " slots",
      (ix.synced ? "synced" : "not synced") + ", last indexed " + (ix.lastIndexedAt ? duration((Date.parse(o.at) - Date.parse(ix.lastIndexedAt)) / 1000) + " before these figures" : "never"),
      !ix.synced));
  } else {
    cards.push(stat("Indexer lag", "lagSlots", "", "unknown", "its progress could not be read now", true));
  }
  const f = o.finality;
  cards.push(stat("Awaiting finality", "unfinalized", f.unfinalized, num(f.unfinalized),
    f.oldestUnfinalizedAt ? "the oldest confirmed " + duration((Date.parse(o.at) - Date.parse(f.oldestUnfinalizedAt)) / 1000) + " before these figures" : "every attestation is finalized"));
  if (o.log) {
    cards.push(stat("Log entries", "logSize", o.log.size, num(o.log.size),
      el("span", { "data-log-age": "" }, "checkpoint signed ", when(o.log.checkpointAt))));
  } else {
    cards.push(stat("Log entries", "logSize", "", "off", "this node serves no signed log"));
  }
  return cards;
}

// topAgents is the table of the day's busiest agents.
function topAgents(o) {
  const rows = o.topAgents24h.map((t, i) => el("tr", { "data-top": t.agentPda },
    cell("Rank", { class: "num" }, String(i + 1)),
    cell("Agent", {}, el("a", { href: "#/agent/" + t.agentPda, class: "mono", title: t.agentPda }, short(t.agentPda, 14)), " ", copyButton(t.agentPda, "agent pda")),
    cell("Attestations, 24 h", { class: "num", "data-count": t.attestations }, num(t.attestations)),
    cell("Share", { class: "num" }, o.rate.last24h ? Math.round((100 * t.attestations) / o.rate.last24h) + " %" : "")));
  return cardsTable({ id: "top-agents", bodyId: "top-rows" }, [["Rank", { num: true }], ["Agent"], ["Attestations, 24 h", { num: true }], ["Share", { num: true }]],
    rows, "No agent attested anything in the last 24 hours.");
}

export async function homeView(main) {
  const cards = el("div", { class: "cards", id: "overview" }, el("p", { class: "muted" }, "Loading the figures…"));
  const asOf = el("p", { class: "muted", id: "overview-at" });
  const chartBox = el("div", { class: "chart", id: "activity" });
  const chartNote = el("p", { class: "muted", id: "activity-note" });
  const top = el("div", { id: "top-box" });
  const status = el("p", { class: "status muted", role: "status", id: "live-status" });
  const newest = attestationsTable("att-table", "att-rows", "Newest first; new attestations appear by themselves.", []);
  const tbody = newest.tBodies[0];
  main.append(el("h1", {}, "AI-agent attestations on Solana, live"),
    el("p", { class: "lead" }, "Agents record a receipt of each action on chain: a SHA-256 of its payload, its type and the agent's signature. ",
      "This index follows them as they land. Search above for an address, a transaction, an action hash or a payload."),
    cards, asOf,
    el("div", { class: "grid2" },
      el("section", { "aria-labelledby": "h-24h" }, el("h2", { id: "h-24h" }, "The last 24 hours"), chartBox, legend(), chartNote),
      el("section", { "aria-labelledby": "h-top" }, el("h2", { id: "h-top" }, "Busiest agents today"), top)),
    el("section", { "aria-labelledby": "h-new" }, el("h2", { id: "h-new" }, "Newest attestations"), status, newest,
      el("p", {}, el("a", { href: "#/attestations" }, "All attestations, with filters ›"))));

  const width = Math.max(300, Math.min(720, (main.clientWidth > 900 ? main.clientWidth * 0.58 : main.clientWidth) - 10));
  const overview = api("/stats/overview").then((r) => {
    const o = r.data;
    cards.replaceChildren(...figures(o));
    asOf.replaceChildren("Figures read ", when(o.at), " (cached for at most 30 s); the list below is live.");
    top.replaceChildren(topAgents(o));
    performance.mark("attestd:home-figures");
  }).catch((e) => { cards.replaceChildren(failure(e, "the figures")); top.replaceChildren(failure(e, "the busiest agents")); });
  const chart = api("/stats/activity?bucket=hour").then((r) => {
    const s = r.data, now = Date.now();
    chartBox.replaceChildren(timeline("Attestations per hour over the last 24 hours, by action type", s, width, now));
    const sum = s.series.reduce((n, p) => n + p.total, 0);
    chartNote.textContent = `${num(sum)} attestations from ${exact(s.from)} to ${exact(s.to)}; the current hour is in progress (pale). Hover or focus the chart for exact counts.`;
  }).catch((e) => chartNote.replaceChildren(failure(e, "the chart")));
  let page;
  try {
    page = await api("/attestations?limit=" + NEWEST);
  } catch (e) {
    status.replaceWith(failure(e, "the newest attestations"));
    await Promise.all([overview, chart]);
    return null;
  }
  tbody.replaceChildren(...page.data.map((a) => attestationRow(a, false)));
  if (!page.data.length) tbody.append(el("tr", {}, el("td", { colspan: 6, class: "empty", "data-label": "" }, "Nothing is indexed yet: attestations appear here as soon as the indexer stores them.")));
  performance.mark("attestd:list-rendered");
  await Promise.all([overview, chart]);
  return liveStream(new URLSearchParams(), {
    attestation(a) {
      if (tbody.querySelector(`tr[data-pda="${CSS.escape(a.pda)}"]`)) return;
      const empty = tbody.querySelector("tr:not([data-pda])");
      if (empty) empty.remove();
      tbody.prepend(attestationRow(a, true));
      while (tbody.rows.length > NEWEST) tbody.rows[tbody.rows.length - 1].remove();
      status.textContent = "live";
    },
    commitment(a) {
      const td = tbody.querySelector(`tr[data-pda="${CSS.escape(a.pda)}"] td[data-commitment]`);
      if (td) { td.textContent = a.commitment; td.dataset.commitment = a.commitment; }
    },
    removed(r) {
      const tr = tbody.querySelector(`tr[data-pda="${CSS.escape(r.pda)}"]`);
      if (tr) tr.remove();
    },
    state(s) { status.textContent = s; },
  }, page.data.length ? cursorOf(page.data[0]) : "");
}
