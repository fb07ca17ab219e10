// The official MCP TypeScript client, v1 (@modelcontextprotocol/sdk), as
// most agents run it today: the 2025 initialize handshake, on its latest
// revision, 2025-11-25. Prints {"step": "connected"} with what was
// negotiated, then what calls.mjs prints.
//
//   node v1.mjs PLAN_JSON
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { plan, print, run } from "./calls.mjs";

const p = plan();
const mcp = new Client({ name: "attestd-edge-v1", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(p.url), { requestInit: { headers: p.headers } });
await mcp.connect(transport);
print("v1", "connected", {
  protocolVersion: transport.protocolVersion ?? null,
  server: mcp.getServerVersion() ?? null,
});
await run("v1", mcp, p.calls);
await mcp.close();
