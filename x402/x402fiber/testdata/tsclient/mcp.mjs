// An MCP agent paying a premium tool over the x402 MCP transport: the
// official MCP TypeScript SDK client calls the tool, reads the payment
// requirements from the tool error's structuredContent, builds the payment
// with the official x402 client and calls again with _meta["x402/payment"];
// the receipt in _meta["x402/payment-response"] is verified with jose.
//   node mcp.mjs MCP_URL ORIGIN RPC_URL KEYPAIR_FILE AGENT_PDA
// Prints one JSON line.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createKeyPairSignerFromBytes } from "@solana/kit";
import { x402Client } from "@x402/core/client";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import * as jose from "jose";

const [mcpUrl, origin, rpcUrl, keyFile, agent] = process.argv.slice(2);
const mcp = new Client({ name: "attestd-x402-test", version: "1.0.0" });
await mcp.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)));
const args = { agentPda: agent, limit: 3 };
const unpaid = await mcp.callTool({ name: "get_full_history", arguments: args });
const required = unpaid.structuredContent ?? JSON.parse(unpaid.content[0].text);
const textMatches = JSON.stringify(JSON.parse(unpaid.content[0].text)) === JSON.stringify(required);

const bytes = new Uint8Array(JSON.parse(readFileSync(keyFile, "utf8")));
const signer = await createKeyPairSignerFromBytes(bytes);
const x402 = new x402Client().register("solana:*", new ExactSvmScheme(signer, { rpcUrl }));
const payment = await x402.createPaymentPayload(required);
const paid = await mcp.callTool({ name: "get_full_history", arguments: args, _meta: { "x402/payment": payment } });
const settle = paid._meta?.["x402/payment-response"] ?? null;
// The same payment again: answered again, not charged again.
const again = await mcp.callTool({ name: "get_full_history", arguments: args, _meta: { "x402/payment": payment } });
// A hostile payment: not an object.
const hostile = await mcp.callTool({ name: "get_full_history", arguments: args, _meta: { "x402/payment": "x".repeat(100) } });
const receipt = settle?.extensions?.["offer-receipt"]?.info?.receipt;
let verified = null, error = null;
if (receipt) {
  try {
    const jwks = jose.createRemoteJWKSet(new URL(origin + "/.well-known/jwks.json"));
    const { payload } = await jose.compactVerify(receipt.signature, jwks, { algorithms: ["EdDSA"] });
    verified = JSON.parse(new TextDecoder().decode(payload));
  } catch (e) {
    error = String(e);
  }
}
await mcp.close();
console.log(JSON.stringify({
  unpaid: { isError: unpaid.isError, x402Version: required.x402Version, accepts: required.accepts, error: required.error, textMatches },
  paid: { isError: paid.isError ?? false, hasData: JSON.stringify(paid.structuredContent ?? {}).includes('"data"'), settle },
  again: { isError: again.isError ?? false, settle: again._meta?.["x402/payment-response"] ?? null },
  hostile: { isError: hostile.isError ?? false, text: hostile.content?.[0]?.text ?? "" },
  verified, error,
}));
