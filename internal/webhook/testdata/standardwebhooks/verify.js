// Verifies attestd deliveries the way receivers do, independently of the
// Go code: v1 entries with the npm standardwebhooks library (one verifier
// per secret), v1a entries with Node's own Ed25519 (crypto.verify).
// stdin: {"secrets": ["whsec_..."], "publicKey": "whpk_..." | "",
//         "deliveries": [{"headers": {...}, "body": "..."}]}
// stdout: one object per delivery: {"<secret>": true|false, "v1a": true|false}
"use strict";
const crypto = require("crypto");
const { Webhook } = require("standardwebhooks");

const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
let key = null;
if (input.publicKey) {
  const raw = Buffer.from(input.publicKey.replace(/^whpk_/, ""), "base64");
  key = crypto.createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
}
const out = input.deliveries.map((d) => {
  const r = {};
  for (const s of input.secrets || []) {
    try {
      new Webhook(s).verify(d.body, d.headers);
      r[s] = true;
    } catch (e) {
      r[s] = false;
    }
  }
  if (key) {
    const msg = Buffer.from(`${d.headers["webhook-id"]}.${d.headers["webhook-timestamp"]}.${d.body}`, "utf8");
    r.v1a = (d.headers["webhook-signature"] || "").split(" ").some((entry) => {
      const [version, sig] = entry.split(",");
      return version === "v1a" && crypto.verify(null, msg, key, Buffer.from(sig || "", "base64"));
    });
  }
  return r;
});
process.stdout.write(JSON.stringify(out));
