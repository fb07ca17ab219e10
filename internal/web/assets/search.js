// The search box on every page: paste an attestation, agent or operator
// address, a transaction signature or an action hash, or drop a payload
// file (hashed here, never sent). One match opens its page; several are
// listed; none says what was tried.
import { el, api, APIError, short, plural, base58decode, payloadHashes, failure, cardsTable, cell, when } from "./util.js";

// path is an API call as code that wraps only between its parts (before a
// "/", "?" or "&"), never inside one.
function path(text) {
  return el("code", { class: "path" }, text.split(/(?=[/?&])/).flatMap((p, i) => (i ? [el("wbr", {}), p] : [p])));
}
import { attestationRow, attestationsTable } from "./explorer.js";

// classify says what a search text is: {kind: "hash" | "signature" |
// "address" | "unknown", value, why}.
export function classify(text) {
  let q = (text || "").trim();
  // A link to a page of this explorer: its id.
  const m = q.match(/#\/(?:attestation|agent)\/([1-9A-HJ-NP-Za-km-z]+)\s*$/);
  if (m) q = m[1];
  if (/^(0x)?[0-9a-fA-F]{64}$/.test(q)) return { kind: "hash", value: q.replace(/^0x/, "").toLowerCase() };
  if (q === "") return { kind: "unknown", value: q, why: "the box is empty" };
  const bytes = base58decode(q);
  if (bytes && bytes.length === 32) return { kind: "address", value: q };
  if (bytes && bytes.length === 64) return { kind: "signature", value: q };
  const hex = /^(0x)?[0-9a-fA-F]+$/.test(q) ? `${q.replace(/^0x/, "").length} hexadecimal characters (an action hash has 64)` : "";
  const b58 = bytes ? `base58 of ${bytes.length} bytes (an address has 32, a transaction signature 64)` : "";
  const why = hex && b58 ? `it is ${hex}, or ${b58}` : hex || b58 ? "it is " + (hex || b58)
    : "it is neither base58 (an address, a transaction signature) nor hexadecimal (an action hash)";
  return { kind: "unknown", value: q, why };
}

// attachSearch wires the header's form: text searches, and a file picked
// or dropped is hashed in the browser and searched by its hashes.
export function attachSearch(form) {
  if (!form) return;
  const input = form.querySelector("#q");
  const file = form.querySelector("#payload-file");
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const q = input.value.trim();
    location.hash = "#/search?" + new URLSearchParams({ q });
  });
  const hashFile = async (f) => {
    if (!f) return;
    const h = await payloadHashes(new Uint8Array(await f.arrayBuffer()));
    const q = new URLSearchParams({ q: h.raw, file: f.name.slice(0, 200) });
    if (h.canonical && h.canonical !== h.raw) q.set("alt", h.canonical);
    input.value = h.raw;
    location.hash = "#/search?" + q;
  };
  file.addEventListener("change", () => { hashFile(file.files[0]); file.value = ""; });
  form.addEventListener("dragover", (e) => { e.preventDefault(); form.classList.add("dragging"); });
  form.addEventListener("dragleave", () => form.classList.remove("dragging"));
  form.addEventListener("drop", (e) => {
    e.preventDefault();
    form.classList.remove("dragging");
    if (e.dataTransfer && e.dataTransfer.files.length) hashFile(e.dataTransfer.files[0]);
    else if (e.dataTransfer) { input.value = e.dataTransfer.getData("text/plain").trim(); form.requestSubmit(); }
  });
}

// go opens a match's page in place of the search (Back skips the search).
function go(hash) { location.replace(hash); }

// searchView looks the text up and opens, lists or explains.
export async function searchView(main, params) {
  const q = params.get("q") || "";
  const alt = params.get("alt") || "";
  const fileName = params.get("file") || "";
  const box = document.getElementById("q");
  if (box && !box.value) box.value = q;
  const c = classify(q);
  const title = el("h1", {}, "Search");
  const said = el("p", { class: "lead", id: "search-said" });
  const out = el("div", { id: "search-results" });
  main.append(title, said, out);
  if (c.kind === "unknown") {
    said.textContent = fileName ? `The file ${fileName} could not be read.` : `Nothing to look up in “${short(q, 40)}”: ${c.why}.`;
    out.append(help());
    return null;
  }
  try {
    if (c.kind === "hash") return await byHash(said, out, c.value, alt, fileName);
    if (c.kind === "signature") return await byTransaction(said, out, c.value);
    return await byAddress(said, out, c.value);
  } catch (e) {
    out.append(failure(e, "the search"));
    return null;
  }
}

function help() {
  return el("div", { class: "empty-state" },
    el("p", {}, "The search finds:"),
    el("ul", {},
      el("li", {}, "an attestation, an agent or an operator by its address (base58, 32 to 44 characters);"),
      el("li", {}, "the attestations of a transaction by its signature (base58, 64 to 88 characters);"),
      el("li", {}, "who attested a payload, by its action hash (SHA-256, 64 hexadecimal characters), or by the payload itself: pick or drop its file on the search box (it is hashed in this browser and never sent)."))); 
}

// byHash: the attestations of a payload hash (and, for a JSON file, of
// its RFC 8785 form).
async function byHash(said, out, hash, alt, fileName) {
  const tried = [hash, ...(alt ? [alt] : [])];
  const pages = await Promise.all(tried.map((h) => api("/attestations?limit=25&actionHash=" + h)));
  const hit = pages.findIndex((p) => p.data.length > 0);
  const what = fileName ? `the file ${fileName}` : "this action hash";
  if (hit < 0) {
    said.textContent = fileName
      ? `No attestation commits to ${what}: neither the SHA-256 of its bytes${alt ? " nor of its RFC 8785 canonical JSON" : ""} is attested here.`
      : `No attestation has the action hash ${hash}.`;
    out.append(el("p", { class: "muted", "data-tried": tried.join(",") }, "Tried: ", tried.map((h, i) =>
      el("span", {}, i ? ", " : "", path("GET /api/v1/attestations?actionHash=" + short(h, 16))))), help());
    return null;
  }
  const page = pages[hit];
  if (page.pagination.total === 1) { go("#/attestation/" + page.data[0].pda); return null; }
  const form = fileName ? (hit === 0 ? "its bytes" : "its RFC 8785 canonical JSON") : "";
  said.textContent = `${plural(page.pagination.total, "attestation")} commit to ${what}` + (form ? ` (the SHA-256 of ${form})` : "") + ", newest first.";
  out.append(attestationsTable("search-table", "search-rows", null, page.data.map((a) => attestationRow(a, false))),
    el("p", {}, el("a", { href: "#/attestations?hash=" + tried[hit] }, "All of them, paged")));
  return null;
}

async function byTransaction(said, out, sig) {
  const page = await api("/attestations?limit=25&txSignature=" + encodeURIComponent(sig));
  if (page.pagination.total === 0) {
    said.textContent = `No attestation was recorded by the transaction ${short(sig, 20)}: it is not a Prova record_attestations transaction indexed here.`;
    out.append(el("p", { class: "muted" }, "Tried: ", path("GET /api/v1/attestations?txSignature=" + short(sig, 16))), help());
    return null;
  }
  if (page.pagination.total === 1) { go("#/attestation/" + page.data[0].pda); return null; }
  said.textContent = `The transaction ${short(sig, 20)} recorded ${plural(page.pagination.total, "attestation")}.`;
  out.append(attestationsTable("search-table", "search-rows", null, page.data.map((a) => attestationRow(a, false))),
    el("p", {}, el("a", { href: "#/attestations?tx=" + encodeURIComponent(sig) }, "All of them, paged")));
  return null;
}

// byAddress asks for the three things an address can be, at once.
async function byAddress(said, out, addr) {
  const enc = encodeURIComponent(addr);
  const [att, agent, op] = await Promise.allSettled([api("/attestations/" + enc), api("/agents/" + enc), api("/agents?limit=1&operator=" + enc)]);
  const limited = [att, agent, op].find((r) => r.status === "rejected" && r.reason instanceof APIError && r.reason.status === 429);
  if (limited) throw limited.reason;
  const broken = [att, agent, op].find((r) => r.status === "rejected" && !(r.reason instanceof APIError && r.reason.status === 404));
  if (broken) throw broken.reason;
  const found = [];
  if (att.status === "fulfilled") found.push({ kind: "Attestation", hash: "#/attestation/" + addr, a: att.value.data });
  if (agent.status === "fulfilled") found.push({ kind: "Agent", hash: "#/agent/" + addr, g: agent.value.data });
  if (op.status === "fulfilled" && op.value.data.length) {
    const g = op.value.data[0];
    found.push({ kind: "Operator of agent " + short(g.pda, 12), hash: "#/agent/" + g.pda, g });
  }
  if (found.length === 1) { go(found[0].hash); return null; }
  if (!found.length) {
    said.textContent = `No attestation, agent or operator has the address ${addr}.`;
    out.append(el("p", { class: "muted", "data-tried": "attestation,agent,operator" }, "Tried: ",
      path("GET /api/v1/attestations/" + short(addr, 12)), ", ", path("GET /api/v1/agents/" + short(addr, 12)), ", ",
      path("GET /api/v1/agents?operator=" + short(addr, 12)), "."), help());
    return null;
  }
  said.textContent = `The address ${short(addr, 16)} is ${found.length} things here:`;
  out.append(cardsTable({ id: "search-table", bodyId: "search-rows" }, [["What"], ["Page"], ["Last attestation"]],
    found.map((f) => el("tr", { "data-kind": f.kind },
      cell("What", {}, f.kind),
      cell("Page", {}, el("a", { href: f.hash, class: "mono nw" }, short(f.hash.split("/").pop(), 14))),
      cell("Last attestation", {}, f.a ? when(f.a.timestamp) : when(f.g.lastAttestationAt || (f.g.metrics && f.g.metrics.lastAttestationAt), "none yet"))))));
  return null;
}
