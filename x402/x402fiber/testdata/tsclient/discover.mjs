// An agent that knows only the origin: reads /.well-known/x402, picks the
// full-history resource, fills its routeTemplate, pays it with the official
// x402 client and verifies the receipt in PAYMENT-RESPONSE with jose
// against the origin's JWKS.
//   node discover.mjs ORIGIN RPC_URL KEYPAIR_FILE AGENT_PDA
// Prints one JSON line.
import { readFileSync } from "node:fs";
import { createKeyPairSignerFromBytes } from "@solana/kit";
import { x402Client } from "@x402/core/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import * as jose from "jose";

const [origin, rpcUrl, keyFile, agent] = process.argv.slice(2);
const doc = await (await fetch(origin + "/.well-known/x402")).json();
const item = doc.items.find((i) => i.extensions?.bazaar?.routeTemplate?.includes("/premium/full-history/"));
if (!item) throw new Error("no full-history resource in /.well-known/x402: " + JSON.stringify(doc));
const bazaar = item.extensions.bazaar;
const param = Object.keys(bazaar.info.input.pathParams)[0];
const url = item.resource.replace(":" + param, agent);

const bytes = new Uint8Array(JSON.parse(readFileSync(keyFile, "utf8")));
const signer = await createKeyPairSignerFromBytes(bytes);
const client = new x402Client().register("solana:*", new ExactSvmScheme(signer, { rpcUrl }));
const paidFetch = wrapFetchWithPayment(fetch, client);
const res = await paidFetch(url, { method: bazaar.info.input.method });
const body = new Uint8Array(await res.arrayBuffer());
const pr = res.headers.get("payment-response");
const settle = pr ? JSON.parse(Buffer.from(pr, "base64").toString("utf8")) : null;
const receipt = settle?.extensions?.["offer-receipt"]?.info?.receipt;
let verified = null, error = null;
if (receipt) {
  try {
    const jwks = jose.createRemoteJWKSet(new URL(origin + "/.well-known/jwks.json"));
    const { payload, protectedHeader } = await jose.compactVerify(receipt.signature, jwks, { algorithms: ["EdDSA"] });
    verified = { header: protectedHeader, claims: JSON.parse(new TextDecoder().decode(payload)) };
  } catch (e) {
    error = String(e);
  }
}
const digest = Buffer.from(await crypto.subtle.digest("SHA-256", body)).toString("hex");
console.log(JSON.stringify({ status: res.status, url, accepts: item.accepts, settle, receiptFormat: receipt?.format ?? null, verified, error, bodyDigest: digest }));
