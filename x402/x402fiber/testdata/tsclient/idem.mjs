// An agent that wants idempotent retries: before each payment it calls the
// official appendPaymentIdentifierToExtensions on the 402's extensions (it
// adds an id only when the 402 declares payment-identifier), pays with the
// official x402 client, and reports the id it sent and the exact
// PAYMENT-SIGNATURE header, so the caller can present the payment again.
//   node idem.mjs URL RPC_URL KEYPAIR_FILE
// Prints one JSON line.
import { readFileSync } from "node:fs";
import { createKeyPairSignerFromBytes } from "@solana/kit";
import { x402Client } from "@x402/core/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { appendPaymentIdentifierToExtensions, extractPaymentIdentifier } from "@x402/extensions/payment-identifier";

const [url, rpcUrl, keyFile] = process.argv.slice(2);
const bytes = new Uint8Array(JSON.parse(readFileSync(keyFile, "utf8")));
const signer = await createKeyPairSignerFromBytes(bytes);
const client = new x402Client().register("solana:*", new ExactSvmScheme(signer, { rpcUrl }));
let declared = null;
let sentId = null;
client.onBeforePaymentCreation(async ({ paymentRequired }) => {
  declared = paymentRequired.extensions?.["payment-identifier"] ?? null;
  paymentRequired.extensions ??= {};
  appendPaymentIdentifierToExtensions(paymentRequired.extensions);
});
client.onAfterPaymentCreation(async ({ paymentPayload }) => {
  sentId = extractPaymentIdentifier(paymentPayload);
});
let paymentSignature = null;
const recording = async (input, init) => {
  const req = new Request(input, init);
  paymentSignature = req.headers.get("payment-signature") ?? paymentSignature;
  return fetch(req);
};
const paidFetch = wrapFetchWithPayment(recording, client);
const res = await paidFetch(url, { method: "GET", headers: { "accept-encoding": "identity" } });
const body = new Uint8Array(await res.arrayBuffer());
const digest = Buffer.from(await crypto.subtle.digest("SHA-256", body)).toString("hex");
console.log(JSON.stringify({
  status: res.status,
  declared,
  sentId,
  paymentSignature,
  paymentResponse: res.headers.get("payment-response"),
  bodyDigest: digest,
}));
