// The home page: what is happening now. One cacheable answer
// (GET /stats/overview) for the figures (the pace, active agents, the
// busiest ones, the indexer's lag, finality, the log), the last 24 hours
// by hour, and the newest attestations live (the stream, no polling).
import { el, api, num, plural, nw, span, when, short, duration, failure, copyButton, exact } from "./util.js";
import { timeline, legend } from "./chart.js";
import { liveStream } from "./live.js";
import { attestationRow, attestationsTable, cursorOf } from "./explorer.js";

const NEWEST = 10;

// stat is one figure: a label (which names its window), the number
// (data-stat names it, data-value holds the API's value), and a line
// under it.
function stat(label, key, value, shown, sub, warn) {
  return el("div", { class: "card" + (warn ? " warn" : ""), "data-card": key }, el("div", { class: "label" }, label),
    el("div", { class: "n nw", "data-stat": key, "data-value": value }, shown), sub ? el("div", { class: "sub" }, sub) : null);
}

// figures draws the overview's cards. Each says over which window it is
// computed: the API's recent window (5 minutes) is an average over those
// minutes, so labelled, never "now".
function figures(o) {
  const win = o.rate.windowSeconds;
  const winShort = win % 60 === 0 ? `${num(win / 60)}\u00a0min` : `${num(win)}\u00a0s`;
  const winLong = span(win * 1000);
  const cards = [
    stat("Attestations", "attestations", o.attestations, num(o.attestations), `by ${plural(o.agents, "registered agent")}`),
    stat(`Per minute, last ${winShort}`, "perMinuteNow", o.rate.perMinuteNow, num(o.rate.perMinuteNow),
      `${plural(o.rate.lastWindow, "attestation")} in the last ${winLong}`),
    stat("Per minute, last 24\u00a0h", "perMinute24h", o.rate.perMinute24h, num(o.rate.perMinute24h), `${plural(o.rate.last24h, "attestation")} in the last 24\u00a0hours`),
    stat("Active agents, last 24\u00a0h", "activeAgents24h", o.activeAgents24h, num(o.activeAgents24h), "agents with an attestation in the last 24\u00a0hours"),
  ];
  const ix = o.indexer;
  if (ix && !ix.lastIndexedAt) {
    // No indexer has written here yet: a lag of 0 would say "current".
    cards.push(stat("Indexer lag", "lagSlots", ix.lagSlots, "none yet", "no indexer has run against this database", true));
  } else if (ix) {
    cards.push(stat("Indexer lag", "lagSlots", ix.lagSlots, plural(ix.lagSlots, "slot"),
      (ix.synced ? "synced" : "not synced") + "; last indexed " + duration((Date.parse(o.at) - Date.parse(ix.lastIndexedAt)) / 1000) + " before these figures",
      !ix.synced));
  } else {
    cards.push(stat("Indexer lag", "lagSlots", "", "unknown", "its progress could not be read now", true));
  }
  const f = o.finality;
  cards.push(stat("Awaiting finality", "unfinalized", f.unfinalized, num(f.unfinalized),
    f.oldestUnfinalizedAt ? "the oldest confirmed " + duration((Date.parse(o.at) - Date.parse(f.oldestUnfinalizedAt)) / 1000) + " before these figures" : "every attestation is finalized"));
  if (o.log) {
    cards.push(stat("Log entries", "logSize", o.log.size, num(o.log.size),
      el("span", { "data-log-age": "" }, "in the public log; checkpoint signed ", when(o.log.checkpointAt))));
  } else {
    cards.push(stat("Log entries", "logSize", "", "off", "this node serves no signed log"));
  }
  return cards;
}

// topAgents is the table of the busiest agents of the last 24 hours: a
// plain table at every width (four short columns fit a phone).
function topAgents(o) {
  const rows = o.topAgents24h.map((t, i) => el("tr", { "data-top": t.agentPda },
    el("td", { class: "num" }, String(i + 1)),
    el("td", {}, el("a", { href: "#/agent/" + t.agentPda, class: "mono nw", title: t.agentPda }, short(t.agentPda, 10)), " ", copyButton(t.agentPda, "agent pda")),
    el("td", { class: "num", "data-count": t.attestations }, nw(num(t.attestations))),
    el("td", { class: "num" }, o.rate.last24h ? nw(Math.round((100 * t.attestations) / o.rate.last24h) + "\u00a0%") : "")));
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 4, class: "empty" }, "No agent attested anything in the last 24 hours.")));
  return el("table", { id: "top-agents", class: "plain" },
    el("caption", { class: "offscreen" }, "The busiest agents of the last 24 hours, by their attestations in that window"),
    el("thead", {}, el("tr", {}, el("th", { scope: "col", class: "num" }, el("abbr", { title: "Rank" }, "#")), el("th", { scope: "col" }, "Agent"),
      el("th", { scope: "col", class: "num" }, "Attestations"), el("th", { scope: "col", class: "num" }, "Share"))),
    el("tbody", { id: "top-rows" }, rows));
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
      el("section", { "aria-labelledby": "h-top" }, el("h2", { id: "h-top" }, "Busiest agents, last 24 hours"), top)),
    el("section", { "aria-labelledby": "h-new" }, el("h2", { id: "h-new" }, "Newest attestations"), status, newest,
      el("p", {}, el("a", { href: "#/attestations" }, "All attestations, with filters ›"))));

  const width = Math.max(300, Math.min(720, (main.clientWidth > 900 ? main.clientWidth * 0.58 : main.clientWidth) - 10));
  const overview = api("/stats/overview").then((r) => {
    const o = r.data;
    cards.replaceChildren(...figures(o));
    asOf.replaceChildren("Figures read ", when(o.at), " (cached for at most 30\u00a0s); the list below is live.");
    top.replaceChildren(topAgents(o));
    performance.mark("attestd:home-figures");
  }).catch((e) => { cards.replaceChildren(failure(e, "the figures")); top.replaceChildren(failure(e, "the busiest agents")); });
  const chart = api("/stats/activity?bucket=hour").then((r) => {
    const s = r.data, now = Date.now();
    chartBox.replaceChildren(timeline("Attestations per hour over the last 24 hours, by action type", s, width, now));
    const sum = s.series.reduce((n, p) => n + p.total, 0);
    chartNote.textContent = `${plural(sum, "attestation")} from ${exact(s.from)} to ${exact(s.to)}, by hour; the current hour is in progress (pale). Hover or focus the chart for exact counts.`;
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
