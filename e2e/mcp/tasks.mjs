// A tasks-capable MCP client on the official TypeScript SDK (experimental
// Tasks of MCP 2025-11-25) that launches `countersign mcp` in front of
// recorder.mjs and prints one JSON line per step.
//
//   node tasks.mjs COUNTERSIGN_BINARY TASK_DIR LOG_FILE MODE NOTE
//
// MODE stream: the call as callToolStream makes it (a task, since the
//   tool says it may be one), with URL elicitation; then tasks/get and
//   tasks/result of the task.
// MODE restart: the task is created, the client prints the gateway's pid
//   and waits for a line on stdin (meanwhile the gateway is killed); then
//   a new gateway process is started and asked about the same task id
//   until it ends.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { createInterface } from "node:readline";
import { createRequire } from "node:module";

const [binary, taskDir, log, mode, note] = process.argv.slice(2);
if (!binary || !taskDir || !log || !mode || !note) {
  console.error("usage: node tasks.mjs COUNTERSIGN_BINARY TASK_DIR LOG_FILE MODE NOTE");
  process.exit(2);
}
const require = createRequire(import.meta.url);
const recorder = require.resolve("./recorder.mjs");
const print = (step, value) => console.log(JSON.stringify({ step, ...value }));
const textOf = (r) => (r.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
const outcome = (r) => ({ isError: r.isError === true, text: textOf(r), code: r._meta?.["countersign/code"] ?? null, related: r._meta?.["io.modelcontextprotocol/related-task"]?.taskId ?? null });

async function connect(elicitation) {
  const transport = new StdioClientTransport({
    command: binary,
    args: ["mcp", "--connector", "recorder", "--task-dir", taskDir, "--", process.execPath, recorder, log],
    env: process.env,
    stderr: "inherit",
  });
  const capabilities = { tasks: { list: {}, cancel: {} } };
  if (elicitation) capabilities.elicitation = { url: {} };
  const client = new Client({ name: "countersign-tasks-e2e", version: "1.0.0" }, { capabilities });
  if (elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      print("elicitation", { mode: req.params.mode, url: req.params.url, related: req.params._meta?.["io.modelcontextprotocol/related-task"]?.taskId ?? null });
      return { action: "accept" };
    });
  }
  await client.connect(transport);
  return { client, transport };
}

const long = { timeout: 120_000 };

if (mode === "stream") {
  const { client } = await connect(true);
  const { tools } = await client.listTools();
  const record = tools.find((t) => t.name === "record");
  print("list", { execution: record?.execution ?? null, tasks: client.getServerCapabilities()?.tasks ?? null });
  let taskId = null;
  for await (const m of client.experimental.tasks.callToolStream({ name: "record", arguments: { note } }, CallToolResultSchema, long)) {
    if (m.type === "taskCreated") {
      taskId = m.task.taskId;
      print("created", { taskId, status: m.task.status });
    } else if (m.type === "taskStatus") {
      print("status", { status: m.task.status, statusMessage: m.task.statusMessage ?? "" });
    } else if (m.type === "result") {
      print("result", outcome(m.result));
    } else if (m.type === "error") {
      print("error", { message: m.error.message });
    }
  }
  const task = await client.experimental.tasks.getTask(taskId);
  print("get", { status: task.status, statusMessage: task.statusMessage ?? "" });
  const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, long);
  print("final", outcome(result));
  const { tasks } = await client.experimental.tasks.listTasks();
  print("listed", { has: tasks.some((t) => t.taskId === taskId) });
  await client.close();
} else if (mode === "restart") {
  const first = await connect(false);
  await first.client.listTools();
  const created = await first.client.request(
    { method: "tools/call", params: { name: "record", arguments: { note } } },
    CreateTaskResultSchema,
    { ...long, task: { ttl: 600_000 } },
  );
  const taskId = created.task.taskId;
  print("created", { taskId, status: created.task.status, statusMessage: created.task.statusMessage ?? "", pid: first.transport.pid });
  const lines = createInterface({ input: process.stdin });
  for await (const _ of lines) break; // the gateway was killed meanwhile
  await first.client.close().catch(() => {});
  const second = await connect(false);
  print("reconnected", { pid: second.transport.pid });
  let last = "";
  for (;;) {
    const task = await second.client.experimental.tasks.getTask(taskId);
    if (task.status !== last) print("status", { status: task.status, statusMessage: task.statusMessage ?? "" });
    last = task.status;
    if (["completed", "failed", "cancelled"].includes(task.status)) break;
    await new Promise((r) => setTimeout(r, task.pollInterval ?? 1000));
  }
  const result = await second.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, long);
  print("final", outcome(result));
  await second.client.close();
  process.exit(0);
} else {
  console.error("unknown mode " + mode);
  process.exit(2);
}
