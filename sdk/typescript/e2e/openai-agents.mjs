// Drives the OpenAI Agents SDK adapter against a real Countersign and a
// model served by the test (e2e/frameworks_test.go). One scenario per run:
//
//   run      run, wait live for the person, run again to the end
//   start    run until the interruption, save the RunState to STATE_FILE, exit
//   resume   load STATE_FILE, answer it from the decision made meanwhile,
//            save the resumed state to RESUMED_FILE, run to the end
//   replay   load RESUMED_FILE and run it again (the claim must refuse)
//   nested   as run, with the tool on an agent used as a tool
//
// The tool appends one line per execution to EFFECTS_FILE; the test counts
// them. Environment: COUNTERSIGN_URL, COUNTERSIGN_API_KEY, MODEL_URL,
// MODEL (the model name the test scripted), CONVERSATION.
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import OpenAI from "openai";
import { z } from "zod";
import { Agent, run, RunState, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from "@openai/agents";
import { Countersign } from "../dist/index.js";
import { countersignAgents } from "../dist/openai-agents.js";

const env = (name) => process.env[name] ?? (() => { throw new Error(`${name} is not set`); })();
const scenario = process.argv[2];
setTracingDisabled(true);
setOpenAIAPI("responses");
setDefaultOpenAIClient(new OpenAI({ baseURL: env("MODEL_URL") + "/v1", apiKey: "test-key", maxRetries: 0 }));

const cs = new Countersign();
// FAIL_CLOSED: Countersign is unreachable; the catalog is synced already.
if (!process.env.FAIL_CLOSED) await cs.syncConnector("mail", "Mail", [{ name: "send_email", display_name: "Send email",
  annotations: { destructiveHint: false, openWorldHint: true } }]);
const gate = countersignAgents({ countersign: cs, user: "demo-member", connector: "mail" });

// The guarded tool: what it does when it runs is the side effect counted.
const sendEmail = gate.tool({
  name: "send_email",
  description: "Send an email.",
  parameters: z.object({ to: z.string(), subject: z.string() }),
  execute: async ({ to, subject }) => {
    appendFileSync(env("EFFECTS_FILE"), JSON.stringify({ to, subject }) + "\n");
    return `sent to ${to}`;
  },
});

const model = env("MODEL");
let agent;
if (scenario === "nested") {
  const mailer = new Agent({ name: "Mailer", instructions: "You send email.", model: model + "-inner", tools: [sendEmail] });
  agent = new Agent({ name: "Assistant", instructions: "Delegate email to the mailer.", model,
    tools: [mailer.asTool({ toolName: "mailer", toolDescription: "Sends email for you." })] });
} else {
  agent = new Agent({ name: "Assistant", instructions: "You send email.", model, tools: [sendEmail] });
}

const say = (what, v) => console.log(what + " " + JSON.stringify(v));

switch (scenario) {
  case "run":
  case "nested": {
    let result = await run(agent, "Send the invoice.", { context: gate.context(env("CONVERSATION")) });
    say("interruptions", result.interruptions.map((i) => i.name));
    while (result.interruptions.length > 0) {
      await gate.resolve(result.state);
      result = await run(agent, result.state);
    }
    say("final", result.finalOutput);
    break;
  }
  case "start": {
    const result = await run(agent, "Send the invoice.", { context: gate.context(env("CONVERSATION")) });
    say("interruptions", result.interruptions.map((i) => i.name));
    // Do not wait: the process goes away while the person decides.
    const { pending } = await gate.resolve(result.state, { maxWaitMs: 0 });
    say("pending", pending.length);
    writeFileSync(env("STATE_FILE"), result.state.toString());
    break;
  }
  case "resume": {
    const state = await RunState.fromString(agent, readFileSync(env("STATE_FILE"), "utf8"));
    const { pending } = await gate.resolve(state);
    say("pending", pending.length);
    writeFileSync(env("RESUMED_FILE"), state.toString());
    const result = await run(agent, state);
    say("final", result.finalOutput);
    break;
  }
  case "replay": {
    const state = await RunState.fromString(agent, readFileSync(env("RESUMED_FILE"), "utf8"));
    const result = await run(agent, state);
    say("final", result.finalOutput);
    break;
  }
  default:
    throw new Error(`unknown scenario ${scenario}`);
}
