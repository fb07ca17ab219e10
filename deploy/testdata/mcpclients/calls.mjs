// What both clients do once connected, the way an agent would: list the
// tools (from then on the SDK checks every structuredContent against the
// tool's outputSchema), then call each tool of the plan in turn. One JSON
// object per line on stdout: {"step": "tools"}, then {"step": "call"} per
// call; a call the SDK throws on is recorded, not fatal.
//
// The plan is the JSON argument of v1.mjs and v2.mjs:
//   {"url": MCP_URL, "headers": {...}, "calls": [{"name": TOOL, "arguments": {...}}]}

export function plan() {
  return JSON.parse(process.argv[2]);
}

export function print(client, step, fields) {
  process.stdout.write(JSON.stringify({ client, step, ...fields }) + "\n");
}

export async function run(client, mcp, calls) {
  const { tools } = await mcp.listTools();
  print(client, "tools", { tools: tools.map((t) => ({ name: t.name, outputSchema: t.outputSchema !== undefined })) });
  for (const c of calls) {
    try {
      const r = await mcp.callTool({ name: c.name, arguments: c.arguments });
      print(client, "call", {
        tool: c.name,
        threw: null,
        isError: r.isError ?? false,
        structuredContent: r.structuredContent ?? null,
        text: r.content?.[0]?.type === "text" ? r.content[0].text : null,
      });
    } catch (e) {
      print(client, "call", { tool: c.name, threw: String(e?.message ?? e) });
    }
  }
}
