"""Runs countersign_gate.gate() against a real Countersign server.

Needs COUNTERSIGN_URL and COUNTERSIGN_API_KEY, and a person (demo-member)
who approves mail to finance@acme.example and rejects any other -- the Go
test in examples/ starts both. Exits non-zero on the first failure.
"""

import sys
import uuid

from countersign_gate import Countersign, arguments_digest

cs = Countersign(poll_wait=5)
conv = "conv-" + uuid.uuid4().hex[:8]


def call(call_id, tool, arguments):
    return cs.gate(call_id, "demo-member", conv, "turn-1", "mail", tool, arguments,
                   reason="The user asked to send the invoice.")


def expect(name, got, **want):
    for field, value in want.items():
        if getattr(got, field) != value:
            print("FAIL %s: %s is %r, want %r (%r)" % (name, field, getattr(got, field), value, got))
            sys.exit(1)
    print("ok   %s: %r" % (name, got))


cs.sync_connector("mail", "Mail", [
    {"name": "search_messages", "display_name": "Search messages", "annotations": {"readOnlyHint": True}},
    {"name": "send_email", "display_name": "Send email",
     "annotations": {"destructiveHint": False, "openWorldHint": True}},
])

expect("allowed by policy", call("py-1", "search_messages", '{"query":"invoice from Acme"}'),
       allowed=True, via="policy", code="")

# Names with ':' and '.' travel percent-encoded in the path and arrive as
# sent: the connector, a check of its tool, and a playbook that uses it.
synced = cs.sync_connector("ns:py.v1", "Namespaced", [
    {"name": "t.read", "display_name": "Read", "annotations": {"readOnlyHint": True}}])
if synced != {"connector": "ns:py.v1", "tools": 1}:
    print("FAIL sync of ns:py.v1: %r" % (synced,))
    sys.exit(1)
expect("a namespaced tool", cs.gate("py-ns", "demo-member", conv, "turn-1", "ns:py.v1", "t.read", "{}"),
       allowed=True, via="policy", code="")
playbook = cs.register_playbook("pb:py.v1", "demo-member", {"name": "Namespaced playbook", "steps": [
    {"id": "read", "work_type": {"id": "read", "version": "1"}, "tools": [{"connector": "ns:py.v1", "tool": "t.read"}]}]})
if playbook.get("id") != "pb:py.v1":
    print("FAIL playbook pb:py.v1: %r" % (playbook,))
    sys.exit(1)
print("ok   names with ':' and '.': %r %r" % (synced, playbook["id"]))

# Keys out of order, non-ASCII text, numbers RFC 8785 rewrites: the claim
# succeeds only if the local digest equals the server's.
tricky = '{"to":"finance@acme.example","subject":"Rechnung \u00fc \U0001f4b6","amount":1E21,' \
         '"ratio":0.10,"z":{"b":[true,null,-0,1.5e-7],"a":"line\\nbreak"},"\u00e9":1}'
approved = call("py-2", "send_email", tricky)
expect("approved by the person", approved, allowed=True, via="person", scope="once")

rejected = call("py-3", "send_email", '{"to":"everyone@acme.example","subject":"Invoice"}')
expect("rejected by the person", rejected, allowed=False, code="approval_denied")
if "Use the billing alias" not in rejected.message:
    print("FAIL the model's message does not quote the person: %r" % rejected.message)
    sys.exit(1)

# Fail closed: a bad key, an unreachable server, a tool not in the catalog.
expect("bad key", Countersign(api_key="cs_wrong").gate("py-4", "demo-member", conv, "turn-1", "mail",
                                                        "send_email", "{}"),
       allowed=False, code="policy_unavailable")
expect("no server", Countersign(base_url="http://127.0.0.1:9", api_key="cs_x").gate(
    "py-5", "demo-member", conv, "turn-1", "mail", "send_email", "{}"), allowed=False, code="policy_unavailable")
expect("unknown tool", call("py-6", "no_such_tool", "{}"), allowed=False, code="policy_unavailable")

# Text that is not a valid arguments object is digested as sent.
if arguments_digest('{"a":1,"a":2}') == arguments_digest('{"a":2}'):
    print("FAIL duplicate keys must not share the digest of their last value")
    sys.exit(1)
print("all python example checks passed")
