// A small MCP server on the official TypeScript SDK with one tool,
// `record`, that appends its note to a log file: the log tells how many
// times a call really ran. It declares no tasks of its own.
//
//   node recorder.mjs LOG_FILE
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { appendFileSync } from "node:fs";
import { z } from "zod";

const [log] = process.argv.slice(2);
if (!log) {
  console.error("usage: node recorder.mjs LOG_FILE");
  process.exit(2);
}
const server = new McpServer({ name: "countersign-recorder", version: "1.0.0" });
server.registerTool(
  "record",
  {
    description: "Append a note to the log.",
    inputSchema: { note: z.string() },
    annotations: { readOnlyHint: false, destructiveHint: true },
  },
  async ({ note }) => {
    appendFileSync(log, JSON.stringify(note) + "\n");
    return { content: [{ type: "text", text: "recorded: " + note }] };
  },
);
await server.connect(new StdioServerTransport());
