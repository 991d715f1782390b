// Runs gate() against a real Countersign server. Needs COUNTERSIGN_URL and
// COUNTERSIGN_API_KEY, and a person (demo-member) who approves mail to
// finance@acme.example and rejects any other -- the Go test in examples/
// starts both. Exits non-zero on the first failure.
import { randomUUID } from "node:crypto";
import { Countersign, argumentsDigest } from "./gate.mjs";

const cs = new Countersign({ pollWait: 5 });
const conv = "conv-" + randomUUID().slice(0, 8);
const call = (callId, tool, args) => cs.gate({ call_id: callId, user: "demo-member", conversation_id: conv, turn_id: "turn-1",
  connector: "mail", tool, arguments: args, reason: "The user asked to send the invoice." });

function expect(name, got, want) {
  for (const [k, v] of Object.entries(want)) {
    if ((got[k] ?? "") !== v) {
      console.log(`FAIL ${name}: ${k} is ${JSON.stringify(got[k])}, want ${JSON.stringify(v)} (${JSON.stringify(got)})`);
      process.exit(1);
    }
  }
  console.log(`ok   ${name}: ${JSON.stringify(got)}`);
}

await cs.syncConnector("mail", "Mail", [
  { name: "search_messages", display_name: "Search messages", annotations: { readOnlyHint: true } },
  { name: "send_email", display_name: "Send email", annotations: { destructiveHint: false, openWorldHint: true } },
]);

expect("allowed by policy", await call("ts-1", "search_messages", '{"query":"invoice from Acme"}'), { allowed: true, via: "policy", code: "" });

// Names with ':' and '.' travel percent-encoded in the path and arrive as
// sent: the connector, a check of its tool, and a playbook that uses it.
const synced = await cs.syncConnector("ns:ts.v1", "Namespaced", [
  { name: "t.read", display_name: "Read", annotations: { readOnlyHint: true } }]);
if (synced.connector !== "ns:ts.v1" || synced.tools !== 1) {
  console.log(`FAIL sync of ns:ts.v1: ${JSON.stringify(synced)}`);
  process.exit(1);
}
expect("a namespaced tool", await cs.gate({ call_id: "ts-ns", user: "demo-member", conversation_id: conv, turn_id: "turn-1",
  connector: "ns:ts.v1", tool: "t.read", arguments: "{}" }), { allowed: true, via: "policy", code: "" });
const playbook = await cs.registerPlaybook("pb:ts.v1", "demo-member", { name: "Namespaced playbook", steps: [
  { id: "read", work_type: { id: "read", version: "1" }, tools: [{ connector: "ns:ts.v1", tool: "t.read" }] }] });
if (playbook.id !== "pb:ts.v1") {
  console.log(`FAIL playbook pb:ts.v1: ${JSON.stringify(playbook)}`);
  process.exit(1);
}
console.log(`ok   names with ':' and '.': ${JSON.stringify(synced)} ${playbook.id}`);

// Keys out of order, non-ASCII text, numbers RFC 8785 rewrites: the claim
// succeeds only if the local digest equals the server's.
const tricky = '{"to":"finance@acme.example","subject":"Rechnung \u00fc \ud83d\udcb6","amount":1E21,' +
  '"ratio":0.10,"z":{"b":[true,null,-0,1.5e-7],"a":"line\\nbreak"},"\u00e9":1}';
expect("approved by the person", await call("ts-2", "send_email", tricky), { allowed: true, via: "person", scope: "once" });

const rejected = await call("ts-3", "send_email", '{"to":"everyone@acme.example","subject":"Invoice"}');
expect("rejected by the person", rejected, { allowed: false, code: "approval_denied" });
if (!rejected.message.includes("Use the billing alias")) {
  console.log(`FAIL the model's message does not quote the person: ${rejected.message}`);
  process.exit(1);
}

// Fail closed: a bad key, an unreachable server, a tool not in the catalog.
const base = { call_id: "ts-4", user: "demo-member", conversation_id: conv, turn_id: "turn-1", connector: "mail", tool: "send_email", arguments: "{}" };
expect("bad key", await new Countersign({ apiKey: "cs_wrong" }).gate(base), { allowed: false, code: "policy_unavailable" });
expect("no server", await new Countersign({ baseUrl: "http://127.0.0.1:9", apiKey: "cs_x" }).gate(base), { allowed: false, code: "policy_unavailable" });
expect("unknown tool", await call("ts-6", "no_such_tool", "{}"), { allowed: false, code: "policy_unavailable" });

// Text that is not a valid arguments object is digested as sent.
if (argumentsDigest('{"a":1,"a":2}') === argumentsDigest('{"a":2}')) {
  console.log("FAIL duplicate keys must not share the digest of their last value");
  process.exit(1);
}
if (argumentsDigest('{"n":9007199254740993}') === argumentsDigest('{"n":9007199254740992}')) {
  console.log("FAIL a number a double cannot hold must not share the digest of its rounded value");
  process.exit(1);
}
console.log("all typescript example checks passed");
