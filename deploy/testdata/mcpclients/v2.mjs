// The official MCP TypeScript client, v2 (@modelcontextprotocol/client),
// pinned to protocol revision 2026-07-28: versionNegotiation mode
// {pin: "2026-07-28"} makes connect() send server/discover and accept
// that revision only (no fallback to the 2025 initialize handshake), and
// from then on every request carries it (MCP-Protocol-Version and the
// _meta envelope). Prints {"step": "connected"} with what was negotiated,
// then what calls.mjs prints.
//
//   node v2.mjs PLAN_JSON
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { plan, print, run } from "./calls.mjs";

const PINNED = "2026-07-28";
const p = plan();
const mcp = new Client({ name: "attestd-edge-v2", version: "1.0.0" }, { versionNegotiation: { mode: { pin: PINNED } } });
const transport = new StreamableHTTPClientTransport(new URL(p.url), { requestInit: { headers: p.headers } });
await mcp.connect(transport);
print("v2", "connected", {
  pinned: PINNED,
  protocolVersion: mcp.getNegotiatedProtocolVersion() ?? null,
  era: mcp.getProtocolEra() ?? null,
  server: mcp.getServerVersion() ?? null,
});
await run("v2", mcp, p.calls);
await mcp.close();
