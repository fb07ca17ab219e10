// The dataset's page (#/data): the daily Parquet files every API node
// serves under /dataset/ (outside /api/v1), as its index lists them
// (GET /dataset/index.json): the days, newest first, what is not out yet
// and why, and one-liners that load a file (DuckDB) and check it against
// the transparency log's witnessed checkpoint (attestd verify --dataset).
import { el, APIError, num, bytes, when, failure, cardsTable, cell, copyButton } from "./util.js";

const ROOT = "/dataset/";

// getIndex reads the index; an error answer throws its envelope's code
// and message (503 UNAVAILABLE: the dataset is off on this node).
async function getIndex() {
  let res;
  try {
    res = await fetch(ROOT + "index.json", { credentials: "same-origin", cache: "no-cache", headers: { Accept: "application/json" } });
  } catch (e) {
    throw new APIError(0, "NETWORK", "the node cannot be reached (" + e.message + ")");
  }
  let body = null;
  try { body = await res.json(); } catch { /* not JSON */ }
  if (!res.ok || !body || body.error) {
    const err = (body && body.error) || {};
    throw new APIError(res.status, err.code || "HTTP_" + res.status, err.message || res.statusText || "HTTP " + res.status);
  }
  return body;
}

// logKey is the log's verifier key as this node serves it (GET /log/key,
// text: the first line, the new key during a rotation); "" without one.
async function logKey() {
  try {
    const res = await fetch("/api/v1/log/key", { credentials: "same-origin", headers: { Accept: "text/plain" } });
    const k = res.ok ? (await res.text()).trim().split("\n")[0].trim() : "";
    return /^[^\s+]{1,256}\+[0-9a-f]{8}\+[A-Za-z0-9+/]+=*$/.test(k) ? k : "";
  } catch { return ""; }
}

export async function dataView(main) {
  const key = logKey(); // asked alongside the index
  main.append(el("h1", {}, "Download the data"),
    el("p", { class: "lead" }, "Every finalized attestation, one Parquet file per UTC day, each checkable against the transparency log's witnessed checkpoint. ",
      "Programs read the list at ", el("a", { href: ROOT + "index.json" }, el("code", { class: "nw" }, ROOT + "index.json")), "."));
  let index;
  try { index = await getIndex(); } catch (e) {
    main.append(e instanceof APIError && e.status === 503
      ? el("p", { class: "empty-state", id: "dataset-off" }, "The dataset is off on this node: " + e.message.replace(/^the dataset is off:\s*/i, "").replace(/\.$/, "") + ".")
      : failure(e, "the dataset's list of files"));
    return null;
  }
  const days = [...(index.days || [])].reverse();
  if (days.length) main.append(summary(index, days));
  else {
    main.append(el("p", { class: "empty-state", id: "dataset-empty" }, "No day is out yet: the producer cuts a UTC day's file once the day is over ",
      "and a witnessed checkpoint of the log covers its last attestation."));
  }
  const pending = index.pending || [];
  if (pending.length) {
    main.append(el("h2", { id: "pending-h" }, "Not out yet"), el("ul", { id: "pending", "aria-labelledby": "pending-h" },
      pending.map((p) => el("li", { "data-code": p.code }, p.day ? [el("strong", { class: "nw" }, p.day), ": "] : null, p.reason))));
  }
  if (!days.length) return null;
  main.append(useIt(days[0].day, await key), el("h2", { id: "days-h" }, "Days"));
  const table = (rows) => cardsTable({ id: "days", bodyId: "day-rows", caption: rows.length < days.length ? `The newest ${rows.length}.` : "Newest first." },
    [["Day"], ["Rows", { num: true }], ["Size", { num: true }], ["Leaves", { num: true }], ["Checkpoint"], ["Files"]], rows.map(dayRow));
  const shown = table(days.slice(0, FIRST));
  main.append(shown);
  if (days.length > FIRST) {
    const all = el("button", { type: "button", id: "days-all", class: "secondary" }, `Show all ${num(days.length)} days`);
    all.addEventListener("click", () => { shown.replaceWith(table(days)); all.remove(); });
    main.append(all);
  }
  return null;
}

// FIRST is how many days the page lists before "Show all": a month.
const FIRST = 31;

// summary says how much there is, from which log, and how fresh.
function summary(index, days) {
  const rows = days.reduce((n, d) => n + d.rows, 0);
  return el("p", { class: "muted", id: "dataset-summary" }, `${num(days.length)} ${days.length === 1 ? "day" : "days"}, ${num(rows)} rows in all, `,
    "of the log ", el("span", { class: "mono" }, index.origin || "?"), "; updated ", when(index.updatedAt), ". The next file starts at leaf ", num(index.nextIndex || 0), ".");
}

function dayRow(d) {
  const w = d.witnessed || {};
  return el("tr", { "data-day": d.day },
    cell("Day", {}, el("span", { class: "nw" }, d.day)),
    cell("Rows", { class: "num", "data-rows": d.rows }, num(d.rows)),
    cell("Size", { class: "num", "data-bytes": d.bytes }, bytes(d.bytes)),
    cell("Leaves", { class: "num" }, el("span", { class: "nw" }, num(d.firstIndex) + "–" + num(d.lastIndex))),
    cell("Checkpoint", { "data-witnessed": `${w.by || 0}/${w.of || 0}`, title: `a checkpoint of ${num(d.checkpointSize || 0)} leaves` + (w.of ? `, quorum ${w.quorum}` : "") },
      w.of ? `Witnessed by ${w.by} of ${w.of}` : "not witnessed"),
    cell("Files", {}, el("span", { class: "nw" }, el("a", { href: ROOT + encodeURIComponent(d.file), download: d.file, class: "mono", "data-file": "parquet", title: "SHA-256 " + d.sha256 }, d.file),
      " ", el("a", { href: ROOT + encodeURIComponent(d.manifest), "data-file": "manifest", "aria-label": "manifest of " + d.day }, "manifest"))));
}

// tokens lays a command out in words that never break inside (a flag's
// hyphen is no place to wrap), each still broken when wider than the line.
function tokens(text) {
  return text.split(" ").flatMap((w, i) => (i ? [" "] : []).concat(el("span", { class: "tok" }, w)));
}

// useIt is the one-liners for the newest day, against this node.
function useIt(day, key) {
  const base = location.origin, file = day + ".parquet";
  const duck = `SELECT count(*) FROM '${base}${ROOT}${file}';`;
  const verify = `curl -sO ${base}${ROOT}${file} && attestd verify --dataset ${file} --url ${base} --log-key ${key || "<key>"}`;
  const line = (label, id, text, what) => el("div", { class: "oneliner" }, el("p", {}, label, " ", copyButton(text, what)), el("pre", {}, el("code", { id }, tokens(text))));
  return el("section", { class: "use", "aria-labelledby": "use-h" }, el("h2", { id: "use-h" }, "Use it"),
    line("Count the newest day's rows in DuckDB:", "use-duckdb", duck, "DuckDB query"),
    line("Download it and check it against the log's witnessed checkpoint:", "use-verify", verify, "download and verify command"),
    el("p", { class: "muted" }, key ? "The key is the one this node serves: compare it with the one the operator publishes (a key fetched from the service it checks proves nothing by itself)."
      : "Put the log's verifier key, as the operator publishes it, in place of <key>."));
}
