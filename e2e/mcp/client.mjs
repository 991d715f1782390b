// A real MCP client on the official TypeScript SDK that launches
// `countersign mcp` in front of the reference filesystem server and prints
// one JSON line per step: list, allowed read, a write that waits for a
// person (approved), and a write that is rejected.
//
//   node client.mjs COUNTERSIGN_BINARY DIR
//
// COUNTERSIGN_URL, COUNTERSIGN_API_KEY and COUNTERSIGN_USER come from the
// environment and reach the gateway, not the filesystem server.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createRequire } from "node:module";
import path from "node:path";

const [binary, dir] = process.argv.slice(2);
if (!binary || !dir) {
  console.error("usage: node client.mjs COUNTERSIGN_BINARY DIR");
  process.exit(2);
}
const require = createRequire(import.meta.url);
const server = require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js");

const transport = new StdioClientTransport({
  command: binary,
  args: ["mcp", "--connector", "filesystem", "--", process.execPath, server, dir],
  env: process.env,
  stderr: "inherit",
});
const client = new Client({ name: "countersign-e2e-client", version: "1.0.0" });
await client.connect(transport);

const print = (step, value) => console.log(JSON.stringify({ step, ...value }));
const textOf = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("");
// A tool call as a model would make it; progress keeps the call alive
// while a person decides.
async function call(step, name, args) {
  let progress = 0;
  const r = await client.callTool({ name, arguments: args }, undefined, {
    timeout: 60_000,
    resetTimeoutOnProgress: true,
    onprogress: (p) => {
      if (progress++ === 0) print(step + ":progress", { message: p.message });
    },
  });
  print(step, { isError: r.isError === true, text: textOf(r), code: r._meta?.["countersign/code"] ?? null, progress });
}

const { tools } = await client.listTools();
const pick = (n) => tools.find((t) => t.name === n);
print("list", {
  tools: tools.map((t) => t.name),
  read_text_file: pick("read_text_file")?.annotations,
  write_file: pick("write_file")?.annotations,
});
await call("read", "read_text_file", { path: path.join(dir, "hello.txt") });
await call("write-approved", "write_file", { path: path.join(dir, "approved.txt"), content: "written after approval\n" });
await call("write-rejected", "write_file", { path: path.join(dir, "rejected.txt"), content: "must not be written\n" });
await client.close();
