// Drives the LangGraph adapter against a real Countersign and a model served
// by the test (e2e/frameworks_test.go), through @langchain/openai's
// ChatOpenAI on the Responses API, with the Postgres checkpointer.
// Scenarios as in openai-agents.mjs (run, start, resume, replay); the
// persisted state is the thread's checkpoints.
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { ChatOpenAI } from "@langchain/openai";
import { Command, END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { z } from "zod";
import { Countersign } from "../dist/index.js";
import { countersignLangGraph } from "../dist/langgraph.js";

const env = (name) => process.env[name] ?? (() => { throw new Error(`${name} is not set`); })();
const scenario = process.argv[2];

const cs = new Countersign();
// FAIL_CLOSED: Countersign is unreachable; the catalog is synced already.
if (!process.env.FAIL_CLOSED) await cs.syncConnector("mail", "Mail", [{ name: "send_email", display_name: "Send email",
  annotations: { destructiveHint: false, openWorldHint: true } }]);
const gate = countersignLangGraph({ countersign: cs, user: "demo-member", connector: "mail" });

const sendEmail = gate.tool(async ({ to, subject }) => {
  appendFileSync(env("EFFECTS_FILE"), JSON.stringify({ to, subject }) + "\n");
  return `sent to ${to}`;
}, { name: "send_email", description: "Send an email.", schema: z.object({ to: z.string(), subject: z.string() }) });

const llm = new ChatOpenAI({ model: env("MODEL"), apiKey: "test-key", useResponsesApi: true, maxRetries: 0,
  configuration: { baseURL: env("MODEL_URL") + "/v1" } }).bindTools([sendEmail]);
const checkpointer = PostgresSaver.fromConnString(env("CHECKPOINT_DATABASE_URL"));
await checkpointer.setup();
const graph = new StateGraph(MessagesAnnotation)
  .addNode("agent", async (state) => ({ messages: [await llm.invoke(state.messages)] }))
  .addNode("tools", new ToolNode([sendEmail]))
  .addEdge(START, "agent")
  .addConditionalEdges("agent", toolsCondition, ["tools", END])
  .addEdge("tools", "agent")
  .compile({ checkpointer });

const config = { configurable: { thread_id: env("CONVERSATION") } };
const say = (what, v) => console.log(what + " " + JSON.stringify(v));
const asks = (snap) => snap.tasks.flatMap((t) => t.interrupts ?? []).map((i) => i.value?.countersign?.tool);
const lastText = (out) => out.messages.at(-1)?.text ?? out.messages.at(-1)?.content;

try {
  switch (scenario) {
    case "run": {
      let out = await graph.invoke({ messages: [{ role: "user", content: "Send the invoice." }] }, config);
      let snap = await graph.getState(config);
      say("interruptions", asks(snap));
      while (snap.tasks.some((t) => t.interrupts?.length)) {
        out = await graph.invoke(await gate.resume(snap), config);
        snap = await graph.getState(config);
      }
      say("final", lastText(out));
      break;
    }
    case "start": {
      await graph.invoke({ messages: [{ role: "user", content: "Send the invoice." }] }, config);
      const snap = await graph.getState(config);
      say("interruptions", asks(snap));
      say("pending", (await gate.resume(snap, { maxWaitMs: 0 })) === undefined ? 1 : 0);
      break;
    }
    case "resume": {
      const snap = await graph.getState(config);
      const cmd = await gate.resume(snap);
      say("pending", cmd === undefined ? 1 : 0);
      writeFileSync(env("RESUMED_FILE"), JSON.stringify({ checkpoint_id: snap.config.configurable.checkpoint_id, resume: cmd.resume }));
      const out = await graph.invoke(cmd, config);
      say("final", lastText(out));
      break;
    }
    case "replay": {
      // The interrupted checkpoint, resumed again with the same decision.
      const saved = JSON.parse(readFileSync(env("RESUMED_FILE"), "utf8"));
      const out = await graph.invoke(new Command({ resume: saved.resume }),
        { configurable: { thread_id: env("CONVERSATION"), checkpoint_id: saved.checkpoint_id } });
      say("final", lastText(out));
      break;
    }
    default:
      throw new Error(`unknown scenario ${scenario}`);
  }
} finally {
  await checkpointer.end();
}
