// Drives the AI SDK adapter against a real Countersign and a model served
// by the test (e2e/frameworks_test.go), through the SDK's openai provider.
// Scenarios as in openai-agents.mjs (run, start, resume, replay); the
// persisted state is the messages, as a program keeps them.
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { generateText, stepCountIs, tool } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { z } from "zod";
import { Countersign } from "../dist/index.js";
import { countersignAISDK } from "../dist/ai-sdk.js";

const env = (name) => process.env[name] ?? (() => { throw new Error(`${name} is not set`); })();
const scenario = process.argv[2];
const openai = createOpenAI({ baseURL: env("MODEL_URL") + "/v1", apiKey: "test-key" });
const model = openai.responses(env("MODEL"));

const cs = new Countersign();
// FAIL_CLOSED: Countersign is unreachable; the catalog is synced already.
if (!process.env.FAIL_CLOSED) await cs.syncConnector("mail", "Mail", [{ name: "send_email", display_name: "Send email",
  annotations: { destructiveHint: false, openWorldHint: true } }]);
const gate = countersignAISDK({ countersign: cs, user: "demo-member", connector: "mail",
  conversationId: env("CONVERSATION"), turnId: "turn-1" });

const tools = gate.tools({
  send_email: tool({
    description: "Send an email.",
    inputSchema: z.object({ to: z.string(), subject: z.string() }),
    execute: async ({ to, subject }) => {
      appendFileSync(env("EFFECTS_FILE"), JSON.stringify({ to, subject }) + "\n");
      return `sent to ${to}`;
    },
  }),
});

const say = (what, v) => console.log(what + " " + JSON.stringify(v));
const generate = (messages) => generateText({ model, tools, toolApproval: gate.toolApproval, messages, maxRetries: 0, stopWhen: stepCountIs(5) });
const requests = (result) => result.content.filter((p) => p.type === "tool-approval-request").map((p) => p.toolCall.toolName);

switch (scenario) {
  case "run": {
    const messages = [{ role: "user", content: "Send the invoice." }];
    let result = await generate(messages);
    say("interruptions", requests(result));
    messages.push(...result.response.messages);
    for (;;) {
      const { message } = await gate.answer(messages);
      if (!message) break;
      messages.push(message);
      result = await generate(messages);
      messages.push(...result.response.messages);
    }
    say("final", result.text);
    break;
  }
  case "start": {
    const messages = [{ role: "user", content: "Send the invoice." }];
    const result = await generate(messages);
    say("interruptions", requests(result));
    messages.push(...result.response.messages);
    const { pending } = await gate.answer(messages, { maxWaitMs: 0 });
    say("pending", pending.length);
    writeFileSync(env("STATE_FILE"), JSON.stringify(messages));
    break;
  }
  case "resume": {
    const messages = JSON.parse(readFileSync(env("STATE_FILE"), "utf8"));
    const { message, pending } = await gate.answer(messages);
    say("pending", pending.length);
    messages.push(message);
    writeFileSync(env("RESUMED_FILE"), JSON.stringify(messages));
    const result = await generate(messages);
    say("final", result.text);
    break;
  }
  case "replay": {
    const messages = JSON.parse(readFileSync(env("RESUMED_FILE"), "utf8"));
    const result = await generate(messages);
    say("final", result.text);
    break;
  }
  default:
    throw new Error(`unknown scenario ${scenario}`);
}
