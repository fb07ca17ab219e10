// The transparency log's verifier, in the browser: checks an attestation's
// inclusion proof and its checkpoint's signature with WebCrypto (Ed25519,
// SHA-256), nothing taken on trust from the page's own code path but the
// verifier key. The pure functions are exported for tests (Node.js runs
// them against vectors made in Go); renderLogProof is the page's part.
//
// Formats (docs/log.md): the leaf is the RFC 8785 JSON of the attestation's
// pda, agentPda, actionType, actionHash, txSignature, slot and timestamp;
// hashes are RFC 6962 (leaf SHA-256(0x00||leaf), node SHA-256(0x01||l||r));
// the checkpoint is a C2SP tlog-checkpoint in a C2SP signed note; the
// verifier key is <name>+<hex key hash>+<base64(0x01 || Ed25519 public key)>.

const enc = new TextEncoder();

// LogError is a verification failure; step names what failed: key,
// checkpoint, signature, origin, leaf, proof, witness (the witness policy:
// a trusted witness's key, a cosignature that does not verify, or fewer
// cosignatures than the quorum).
export class LogError extends Error {
  constructor(step, message) { super(message); this.step = step; }
}

function b64(s, what) {
  if (typeof s !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) throw new LogError("proof", what + " is not base64");
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function toB64(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) { out.set(p, off); off += p.length; }
  return out;
}

function equal(a, b) {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
  return d === 0;
}

async function sha256(bytes) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

// parseVerifierKey reads <name>+<hash>+<base64>: an Ed25519 key whose hash
// (the first 4 bytes of SHA-256(name "\n" 0x01 pub)) matches.
export async function parseVerifierKey(vkey) {
  // During a key rotation GET /log/key lists the new key, then the old
  // one: both sign every checkpoint, so the first suffices.
  const text = String(vkey).trim().split("\n")[0].trim();
  const i = text.indexOf("+"), j = text.indexOf("+", i + 1);
  const parts = i < 0 || j < 0 ? [] : [text.slice(0, i), text.slice(i + 1, j), text.slice(j + 1)];
  if (text.length > 1024 || parts.length !== 3 || !parts[0] || /[\s\u0000-\u001f]/.test(parts[0]) || !/^[0-9a-f]{8}$/.test(parts[1])) {
    throw new LogError("key", "not a verifier key (name+hash+base64)");
  }
  const raw = b64(parts[2], "the verifier key");
  if (raw.length !== 33 || raw[0] !== 1) throw new LogError("key", "not an Ed25519 verifier key");
  const hash = (await sha256(concat(enc.encode(parts[0] + "\n"), raw))).slice(0, 4);
  if (toHex(hash) !== parts[1]) throw new LogError("key", "the verifier key's hash does not match its name and key");
  return { name: parts[0], keyHash: hash, pub: raw.slice(1), text };
}

// parseWitnessKey reads a witness's verifier key (C2SP tlog-cosignature):
// <name>+<hex key ID>+<base64(0x04 || Ed25519 public key)>, the key ID
// being the first 4 bytes of SHA-256(name "\n" 0x04 pub).
export async function parseWitnessKey(vkey) {
  const text = String(vkey).trim();
  const i = text.indexOf("+"), j = text.indexOf("+", i + 1);
  const parts = i < 0 || j < 0 ? [] : [text.slice(0, i), text.slice(i + 1, j), text.slice(j + 1)];
  if (text.length > 512 || parts.length !== 3 || !parts[0] || /[\s\u0000-\u001f+]/.test(parts[0]) || !/^[0-9a-f]{8}$/.test(parts[1])) {
    throw new LogError("witness", "not a witness verifier key (name+keyid+base64)");
  }
  let raw;
  try { raw = b64(parts[2], "the witness key"); } catch { throw new LogError("witness", "the witness key is not base64"); }
  if (raw.length !== 33 || raw[0] !== 4) throw new LogError("witness", "not an Ed25519 cosignature key (type 0x04)");
  const hash = (await sha256(concat(enc.encode(parts[0] + "\n"), raw))).slice(0, 4);
  if (toHex(hash) !== parts[1]) throw new LogError("witness", "the witness key's ID does not match its name and key");
  return { name: parts[0], keyHash: hash, pub: raw.slice(1), text };
}

// checkCosignatures checks a signed checkpoint note's cosignatures by the
// trusted witnesses (from parseWitnessKey): a line by a trusted witness's
// name and key ID must verify (cosignature/v1: "cosignature/v1\ntime T\n"
// then the note's text, signed with Ed25519; T the big-endian 8-byte time
// before the signature); lines of other names or keys are ignored. It
// resolves to the names that cosigned, or throws when fewer than quorum.
export async function checkCosignatures(note, witnesses, quorum) {
  const split = note.lastIndexOf("\n\n");
  const body = note.slice(0, split + 1);
  const by = [];
  for (const line of note.slice(split + 2, -1).split("\n")) {
    const m = /^\u2014 (\S+) ([A-Za-z0-9+/=]+)$/.exec(line);
    if (!m) continue; // openCheckpoint refused malformed lines already
    const raw = b64(m[2], "a cosignature");
    const w = witnesses.find((k) => k.name === m[1] && raw.length >= 4 && equal(raw.slice(0, 4), k.keyHash));
    if (!w || by.includes(w.name)) continue;
    if (raw.length !== 4 + 8 + 64) throw new LogError("witness", "the cosignature by witness " + w.name + " is not 72 bytes");
    const t = new DataView(raw.buffer, raw.byteOffset + 4, 8).getBigUint64(0);
    if (t === 0n || t >= 1n << 63n) throw new LogError("witness", "the cosignature by witness " + w.name + " has no valid time");
    const msg = concat(enc.encode("cosignature/v1\ntime " + t.toString() + "\n"), enc.encode(body));
    const pub = await crypto.subtle.importKey("raw", w.pub, { name: "Ed25519" }, false, ["verify"]);
    if (!(await crypto.subtle.verify({ name: "Ed25519" }, pub, raw.slice(12), msg))) {
      throw new LogError("witness", "the cosignature by witness " + w.name + " does not verify");
    }
    by.push(w.name);
  }
  if (by.length < quorum) {
    throw new LogError("witness", `witnessed by ${by.length} of ${witnesses.length} trusted witnesses` +
      (by.length ? ` (${by.join(", ")})` : "") + `, ${quorum} required`);
  }
  return by;
}

function toHex(bytes) { return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join(""); }

// openCheckpoint verifies a signed checkpoint note with key (from
// parseVerifierKey): a signature line by the key's name and hash that
// verifies over the note's text, then the checkpoint body (origin equal to
// the key's name, decimal size, base64 root).
export async function openCheckpoint(note, key) {
  if (typeof note !== "string" || note.length > 16384) throw new LogError("checkpoint", "the checkpoint is not a note of at most 16 KiB");
  const split = note.lastIndexOf("\n\n");
  if (split < 0 || !note.endsWith("\n")) throw new LogError("checkpoint", "the checkpoint is not a signed note");
  const body = note.slice(0, split + 1);
  let signed = false;
  for (const line of note.slice(split + 2, -1).split("\n")) {
    const m = /^\u2014 (\S+) ([A-Za-z0-9+/=]+)$/.exec(line);
    if (!m) throw new LogError("checkpoint", "malformed signature line in the checkpoint");
    if (m[1] !== key.name) continue;
    const raw = b64(m[2], "a signature");
    if (raw.length < 4 || !equal(raw.slice(0, 4), key.keyHash)) continue;
    if (raw.length !== 68) throw new LogError("signature", "the signature by key " + key.name + " is not 64 bytes");
    const pub = await crypto.subtle.importKey("raw", key.pub, { name: "Ed25519" }, false, ["verify"]);
    if (!(await crypto.subtle.verify({ name: "Ed25519" }, pub, raw.slice(4), enc.encode(body)))) {
      throw new LogError("signature", "the checkpoint's signature by key " + key.name + " does not verify");
    }
    signed = true;
  }
  if (!signed) throw new LogError("signature", "the checkpoint carries no signature by key " + key.name);
  const lines = body.slice(0, -1).split("\n");
  if (lines.length < 3 || !lines[0]) throw new LogError("checkpoint", "the checkpoint lacks its origin, size or root hash");
  if (!/^(0|[1-9][0-9]{0,18})$/.test(lines[1])) throw new LogError("checkpoint", "the checkpoint's size is not a decimal number");
  const root = b64(lines[2], "the root hash");
  if (root.length !== 32) throw new LogError("checkpoint", "the checkpoint's root hash is not 32 bytes");
  if (lines[0] !== key.name) throw new LogError("origin", `the checkpoint is of log "${lines[0]}", not "${key.name}"`);
  return { origin: lines[0], size: BigInt(lines[1]), root };
}

// leafBytes is the log's leaf of an attestation as the API serves it: the
// RFC 8785 JSON of its seven fields (keys sorted; JSON.stringify writes
// strings and integers as RFC 8785 does).
export function leafBytes(a) {
  const f = { actionHash: a.actionHash, actionType: a.actionType, agentPda: a.agentPda, pda: a.pda,
    slot: a.slot, timestamp: a.timestamp, txSignature: a.txSignature };
  for (const k of ["actionHash", "actionType", "agentPda", "pda", "timestamp", "txSignature"]) {
    if (typeof f[k] !== "string") throw new LogError("leaf", "the attestation has no " + k);
  }
  if (!Number.isSafeInteger(f.slot) || f.slot < 0) throw new LogError("leaf", "the attestation's slot is not an integer");
  return enc.encode(JSON.stringify(f));
}

// rootFromInclusion runs an RFC 9162 (2.1.3.2) inclusion proof: the root
// of a tree of size leaves whose leaf index hashes to leafHash.
export async function rootFromInclusion(index, size, leafHash, proof) {
  if (index < 0n || index >= size) throw new LogError("proof", `leaf index ${index} outside a tree of ${size} leaves`);
  let fn = index, sn = size - 1n, r = leafHash;
  for (const p of proof) {
    if (sn === 0n) throw new LogError("proof", "the inclusion proof is too long");
    if (fn % 2n === 1n || fn === sn) {
      r = await sha256(concat([1], p, r));
      if (fn % 2n === 0n) while (fn % 2n === 0n && fn !== 0n) { fn >>= 1n; sn >>= 1n; }
    } else {
      r = await sha256(concat([1], r, p));
    }
    fn >>= 1n; sn >>= 1n;
  }
  if (sn !== 0n) throw new LogError("proof", "the inclusion proof is too short");
  return r;
}

// verifyProof checks a proof answer (the data of GET /attestations/:id/proof)
// against the attestation as served (a) and the verifier key text: the
// checkpoint's signature and origin, the leaf recomputed from a, the
// inclusion proof; with policy {witnesses: [verifier keys], quorum}, also
// that quorum of those witnesses cosigned the checkpoint. It resolves to
// {leafIndex, treeSize, keyName, root, witnessedBy, witnesses, quorum} or
// throws a LogError.
export async function verifyProof(a, p, vkey, policy) {
  const key = await parseVerifierKey(vkey);
  const cp = await openCheckpoint(p.checkpoint, key);
  let witnessedBy = [], witnesses = [], quorum = 0;
  if (policy && policy.witnesses && policy.witnesses.length) {
    witnesses = await Promise.all(policy.witnesses.map(parseWitnessKey));
    quorum = policy.quorum === undefined ? witnesses.length : policy.quorum;
    if (!Number.isSafeInteger(quorum) || quorum < 0 || quorum > witnesses.length) throw new LogError("witness", "the quorum is not between 0 and the number of witnesses");
    witnessedBy = await checkCosignatures(p.checkpoint, witnesses, quorum);
  }
  const leaf = leafBytes(a);
  if (!equal(leaf, b64(p.leaf, "the leaf"))) {
    throw new LogError("leaf", "the proof's leaf is not the canonical JSON of the attestation this page shows");
  }
  if (p.txSignature !== a.txSignature || p.slot !== a.slot) {
    throw new LogError("leaf", "the proof names another transaction than the attestation");
  }
  if (!Number.isSafeInteger(p.leafIndex) || !Number.isSafeInteger(p.treeSize)) throw new LogError("proof", "the proof's index or size is not an integer");
  const index = BigInt(p.leafIndex), size = BigInt(p.treeSize);
  if (size !== cp.size) throw new LogError("proof", `the proof is for a tree of ${size} leaves, the checkpoint of ${cp.size}`);
  if (!Array.isArray(p.inclusionProof) || p.inclusionProof.length > 128) throw new LogError("proof", "the inclusion proof is not a list of hashes");
  const hashes = p.inclusionProof.map((h) => {
    const b = b64(h, "a proof hash");
    if (b.length !== 32) throw new LogError("proof", "a proof hash is not 32 bytes");
    return b;
  });
  const root = await rootFromInclusion(index, size, await sha256(concat([0], leaf)), hashes);
  if (!equal(root, cp.root)) throw new LogError("proof", "the inclusion proof does not lead to the checkpoint's root hash");
  return { leafIndex: p.leafIndex, treeSize: p.treeSize, keyName: key.name, root: toB64(cp.root),
    witnessedBy, witnesses: witnesses.length, quorum };
}

// get fetches a same-origin API path: {status, json, text}.
async function get(path, text) {
  const res = await fetch("/api/v1" + path, { credentials: "same-origin", cache: "no-cache",
    headers: { Accept: text ? "text/plain" : "application/json" } });
  const body = await res.text();
  let json = null;
  if (!text) try { json = JSON.parse(body); } catch { /* not JSON */ }
  return { status: res.status, json, text: body };
}

// The page's part. ui is the page's helpers (util.js: el, num, plural,
// blob; this file imports nothing, so that Node.js runs it as it is).

function say(section, ui, result, ...children) {
  section.dataset.result = result;
  const p = ui.el("p", { class: "log-proof log-proof-" + result }, ...children);
  section.replaceChildren(section.querySelector("h2") || ui.el("h2", {}, "Transparency log"), p);
  return p;
}

// renderLogProof fills section with the verdict on attestation pda:
// data-result is "verified", "failed", "pending" (not yet logged), "off"
// (the service runs no log) or "error" (could not ask). Pass shown, the
// attestation object the page displays, so that what is verified is what
// the reader sees (a service could answer a second request differently);
// without it the attestation is fetched again. A verified proof is one
// sentence in plain words; what it means, the figures and keys of the
// check, and the proof's download are behind a disclosure.
export async function renderLogProof(section, pda, shown, ui) {
  const { el, num, plural, blob } = ui;
  say(section, ui, "checking", "Checking the log proof in your browser…");
  let key, att, proof, health;
  const id = encodeURIComponent(pda);
  try {
    [key, att, proof, health] = await Promise.all([get("/log/key", true),
      shown ? { status: 200, json: { data: shown } } : get("/attestations/" + id), get("/attestations/" + id + "/proof"),
      get("/health").catch(() => ({ status: 0, json: null }))]);
  } catch (e) {
    say(section, ui, "error", "Cannot reach the API to check the log proof: " + e.message);
    return;
  }
  if (proof.status === 409) {
    say(section, ui, "pending", "Not in the log yet: ", (proof.json && proof.json.error && proof.json.error.message) || "the attestation is logged once finalized.");
    return;
  }
  if (proof.status === 503 || key.status === 503) {
    say(section, ui, "off", "This service runs no transparency log.");
    return;
  }
  if (proof.status !== 200 || att.status !== 200 || key.status !== 200 || !proof.json || !att.json) {
    say(section, ui, "error", `Cannot check the log proof (HTTP ${proof.status}).`);
    return;
  }
  let v, policy;
  try {
    if (att.json.data.pda !== pda) throw new LogError("leaf", "the attestation served is not " + pda);
    policy = witnessPolicy(health);
    v = await verifyProof(att.json.data, proof.json.data, key.text, policy);
  } catch (e) {
    const why = e instanceof LogError ? e.message : "verification error: " + e.message;
    say(section, ui, "failed", "Not verified: " + why + ".").dataset.step = e instanceof LogError ? e.step : "error";
    return;
  }
  // The sentence: what the reader needs to know.
  const by = v.witnessedBy.length;
  const witnessed = !v.witnesses ? "; no independent witness countersigns this log"
    : by === v.witnesses ? ` and confirmed by ${plural(by, "independent witness", "independent witnesses")}`
      : ` and confirmed by ${num(by)} of its ${plural(v.witnesses, "independent witness", "independent witnesses")}`;
  const p = say(section, ui, "verified", el("span", { class: "log-proof-mark", "aria-hidden": "true" }, "✓ "),
    el("span", { class: "log-proof-sentence" }, "Recorded in the public log" + witnessed + "."), " ",
    el("span", { class: "muted" }, "Your browser checked it."));
  if (v.witnesses) section.dataset.witnessed = `${by}/${v.witnesses}`;
  else delete section.dataset.witnessed;
  p.dataset.index = String(v.leafIndex);
  // The details.
  const dl = el("dl", { class: "fields" });
  const add = (label, ...value) => dl.append(el("div", {}, el("dt", {}, label), el("dd", {}, ...value)));
  const keyText = key.text.trim().split("\n")[0].trim();
  add("Entry", el("span", { "data-log": "index" }, "index ", el("span", { class: "nw" }, num(v.leafIndex))), " of a tree of ",
    el("span", { class: "nw", "data-log": "size" }, plural(v.treeSize, "entry", "entries")));
  add("Root hash", blob(v.root, { "data-log": "root" }));
  add("Log key", blob(keyText, { "data-log": "key", title: "the key of the log " + v.keyName }));
  if (v.witnesses) {
    add("Witnesses", `countersigned by ${num(by)} of ${num(v.witnesses)} (${num(v.quorum)} required): `,
      policy.witnesses.map((w, i) => el("span", { class: "witness" }, i ? "; " : "", blob(w, { "data-log": "witness" }))));
  }
  add("Checked here", `with WebCrypto: the checkpoint's signature by the log key${v.witnesses ? ", the witnesses' countersignatures" : ""}, ` +
    `the inclusion proof (${plural(proof.json.data.inclusionProof.length, "hash", "hashes")}) from this attestation to the root hash, and that the entry is this attestation.`);
  add("On chain", "the log proves what this service served, not that the chain holds it: check transaction ",
    blob(proof.json.data.txSignature, { "data-log": "tx" }), " at slot ", el("span", { class: "nw" }, num(proof.json.data.slot)), " with any Solana RPC.");
  add("Proof", downloadLink(el, pda, id), " (a C2SP tlog-proof: check it offline with ", el("code", {}, "attestd verify --proof"), ")");
  section.append(el("details", { class: "log-details", id: "log-details" },
    el("summary", {}, "What this means, and the details of the check"),
    el("p", {}, "Every finalized attestation is appended to a public, append-only log. The log's key signs each state of it (a checkpoint) ",
      v.witnesses ? "and independent witnesses countersign it, " : "", "so this service cannot show you this attestation and hide it from others, ",
      "or change it later, without the change showing. Your browser checked the proof itself; it took nothing on trust but the keys below: ",
      "compare them with the keys the operators publish."),
    dl));
}

// witnessPolicy is the node's witness policy as /health states it (each
// witness's verifier key and the quorum), or undefined without witnesses.
function witnessPolicy(health) {
  const log = health && health.json && health.json.log;
  if (!log || !Array.isArray(log.witnesses) || !log.witnesses.length) return undefined;
  const keys = log.witnesses.map((w) => w && w.key).filter((k) => typeof k === "string" && k);
  if (keys.length !== log.witnesses.length) return undefined;
  return { witnesses: keys, quorum: Number.isSafeInteger(log.quorum) ? Math.min(log.quorum, keys.length) : keys.length };
}

// downloadLink is the "Download proof" link: the attestation's C2SP
// tlog-proof, to keep and check offline (attestd verify --proof).
function downloadLink(el, pda, id) {
  return el("a", { class: "log-proof-download", href: "/api/v1/attestations/" + id + "/proof?format=tlog-proof",
    download: pda.replace(/[^1-9A-HJ-NP-Za-km-z]/g, "") + ".tlog-proof",
    title: "A C2SP tlog-proof: check it offline with attestd verify --proof FILE --log-key KEY" }, "Download proof");
}
