// Pays one attestd premium request with the official x402 client:
//   node pay.mjs URL RPC_URL KEYPAIR_FILE [METHOD] [BODY]
// and prints one JSON line: the final status, the decoded PAYMENT-RESPONSE
// and whether the body holds data.
import { readFileSync } from "node:fs";
import { createKeyPairSignerFromBytes } from "@solana/kit";
import { x402Client } from "@x402/core/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { ExactSvmScheme } from "@x402/svm/exact/client";

const [url, rpcUrl, keyFile, method = "GET", body] = process.argv.slice(2);
const bytes = new Uint8Array(JSON.parse(readFileSync(keyFile, "utf8")));
const signer = await createKeyPairSignerFromBytes(bytes);
const client = new x402Client().register("solana:*", new ExactSvmScheme(signer, { rpcUrl }));
const paidFetch = wrapFetchWithPayment(fetch, client);
const init = { method, headers: {} };
if (body) {
  init.body = body;
  init.headers["content-type"] = "application/json";
}
const res = await paidFetch(url, init);
const text = await res.text();
const pr = res.headers.get("payment-response");
console.log(JSON.stringify({
  status: res.status,
  paymentResponse: pr ? JSON.parse(Buffer.from(pr, "base64").toString("utf8")) : null,
  hasData: text.includes('"data"'),
  body: res.status === 200 ? "" : text.slice(0, 500),
}));
