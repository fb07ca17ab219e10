// Runs the browser's log verifier (logproof.js, copied beside this file as
// logproof.mjs by the Go test) on vectors made in Go, and prints one
// verdict per vector as JSON: {name, result: "ok" | the failing step, index}.
import { readFileSync } from "node:fs";
import { verifyProof, LogError } from "./logproof.mjs";

const vectors = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = [];
for (const v of vectors) {
  try {
    const policy = v.witnesses ? { witnesses: v.witnesses, quorum: v.quorum } : undefined;
    const r = await verifyProof(v.attestation, v.proof, v.key, policy);
    out.push({ name: v.name, result: "ok", index: r.leafIndex });
  } catch (e) {
    out.push({ name: v.name, result: e instanceof LogError ? e.step : "exception: " + e.message, index: -1 });
  }
}
console.log(JSON.stringify(out));
