// An MCP agent paying attestd's premium tools the way a real one runs: the
// official MCP TypeScript SDK client initializes, lists the tools (which
// makes the SDK check every structuredContent against the tool's
// outputSchema from then on), calls a premium tool unpaid and reads the
// payment requirements from the x402 MCP transport's payment error, builds
// the payment with the official x402 client (@x402/core with @x402/svm),
// calls again with it in _meta["x402/payment"] and reads the settlement in
// _meta["x402/payment-response"].
//
//   node agent.mjs MODE MCP_URL RPC_URL KEYPAIR_FILE AGENT_PDA ATTESTATION_PDA
//
// MODE "flow": every premium tool unpaid; get_forensic_report paid; then,
// once a line is read on stdin (the test adds an attestation meanwhile,
// so that a report generated afresh would differ), the same payment
// again; that payment on another tool; a malformed payment.
// MODE "settle": get_forensic_report unpaid, then paid, once (the test
// holds the settlement's transaction so that it does not confirm).
// Prints one JSON object per line ({"step": "paid"} before waiting, the
// result last); a call the SDK throws on is recorded, not fatal.
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createKeyPairSignerFromBytes } from "@solana/kit";
import { x402Client } from "@x402/core/client";
import { parsePaymentRequired } from "@x402/core/schemas";
import { ExactSvmScheme } from "@x402/svm/exact/client";

const [mode, mcpUrl, rpcUrl, keyFile, agent, attestation] = process.argv.slice(2);
const report = { name: "get_forensic_report", args: { agentPda: agent } };
const premium = [
  report,
  { name: "get_full_history", args: { agentPda: agent, limit: 3 } },
  { name: "bulk_verify", args: { ids: [attestation] } },
];

// call records what the SDK hands back for a tools/call (or what it threw).
async function call(mcp, tool, payment) {
  const params = { name: tool.name, arguments: tool.args };
  if (payment !== undefined) params._meta = { "x402/payment": payment };
  try {
    const r = await mcp.callTool(params);
    const text = r.content?.[0]?.type === "text" ? r.content[0].text : null;
    return {
      threw: null,
      isError: r.isError ?? false,
      contentTypes: (r.content ?? []).map((c) => c.type),
      structuredContent: r.structuredContent ?? null,
      text,
      settle: r._meta?.["x402/payment-response"] ?? null,
      payment: paymentError(r, text),
    };
  } catch (e) {
    return { threw: String(e?.message ?? e) };
  }
}

// paymentError reads a payment error as clients of the transport do: the
// {"x402/error": {code, message, data}} wrapper in content[0].text, and
// (the reading of clients that take content[0].text, or structuredContent,
// as the PaymentRequired itself) the same text parsed as a PaymentRequired.
// Both are checked with the official x402 schema.
function paymentError(r, text) {
  if (!r.isError || text === null) return null;
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  const w = parsed?.["x402/error"];
  if (!w) return null;
  const data = parsePaymentRequired(w.data);
  const direct = parsePaymentRequired(r.structuredContent ?? parsed);
  return {
    code: w.code,
    message: w.message,
    data: data.success ? w.data : null,
    dataError: data.success ? null : String(data.error),
    directReadable: direct.success && JSON.stringify(direct.data) === JSON.stringify(parsePaymentRequired(w.data).data),
  };
}

const mcp = new Client({ name: "attestd-x402-agent", version: "1.0.0" });
await mcp.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)));
const listed = await mcp.listTools();
const out = {
  tools: listed.tools.map((t) => ({ name: t.name, outputSchema: !!t.outputSchema })),
};

const signer = await createKeyPairSignerFromBytes(new Uint8Array(JSON.parse(readFileSync(keyFile, "utf8"))));
const payer = new x402Client().register("solana:*", new ExactSvmScheme(signer, { rpcUrl }));

if (mode === "flow") {
  out.unpaid = {};
  for (const tool of premium) out.unpaid[tool.name] = await call(mcp, tool);
  const required = out.unpaid[report.name].payment?.data;
  if (required) {
    const payment = await payer.createPaymentPayload(required);
    out.paid = await call(mcp, report, payment);
    console.log(JSON.stringify({ step: "paid" }));
    const stdin = createInterface({ input: process.stdin });
    await stdin[Symbol.asyncIterator]().next();
    stdin.close();
    out.again = await call(mcp, report, payment);
    out.otherTool = await call(mcp, premium[2], payment);
    out.malformed = await call(mcp, report, { x402Version: 2, accepted: required.accepts[0], payload: { transaction: "not base64!" } });
  }
} else if (mode === "settle") {
  out.unpaid = { [report.name]: await call(mcp, report) };
  const required = out.unpaid[report.name].payment?.data;
  if (required) out.paid = await call(mcp, report, await payer.createPaymentPayload(required));
} else {
  throw new Error(`unknown mode ${mode}`);
}
await mcp.close();
console.log(JSON.stringify(out));
