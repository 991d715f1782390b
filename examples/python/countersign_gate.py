"""Ask Countersign before a tool runs: check, wait for the person, claim.

Standard library only (urllib.request, json, hashlib). Call gate() right
before executing each tool call the model asked for; run the tool only when
the outcome is allowed. Every failure on the way -- network, server, an
answer this code does not understand -- is a "not allowed" outcome with code
policy_unavailable: gate() fails closed and never raises.
"""

import hashlib
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

POLICY_UNAVAILABLE = "policy_unavailable"


@dataclass
class Outcome:
    allowed: bool
    code: str = ""         # when not allowed: give code and message to the model
    message: str = ""
    via: str = ""          # policy, conversation_grant, always_allow, preapproval or person
    scope: str = ""        # once, conversation or always, when a person approved
    approval_id: str = ""  # when a person was asked
    error: str = ""        # for the logs, on policy_unavailable


class Countersign:
    """A client for one server and one runtime API key."""

    def __init__(self, base_url=None, api_key=None, poll_wait=30):
        self.base_url = (base_url or os.environ["COUNTERSIGN_URL"]).rstrip("/")
        self.api_key = api_key or os.environ["COUNTERSIGN_API_KEY"]
        self.poll_wait = poll_wait

    def request(self, method, path, body=None, timeout=None):
        """Send one API request; return the decoded JSON answer (or None).
        A non-2xx answer raises urllib.error.HTTPError."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.base_url + path, data=data, method=method, headers={
            "Authorization": "Bearer " + self.api_key,
            "Content-Type": "application/json",
            "Accept": "application/json",
        })
        with urllib.request.urlopen(req, timeout=timeout or self.poll_wait + 30) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def sync_connector(self, name, display_name, tools, kind="connector"):
        """Register a connector's full tool list (tools left out are retired)."""
        return self.request("PUT", "/api/v1/connectors/" + urllib.parse.quote(name, safe=""),
                            {"display_name": display_name, "kind": kind, "tools": tools})

    def register_playbook(self, playbook_id, owner, definition):
        """Register or update a playbook (it starts disabled until its owner
        approves its tools)."""
        return self.request("PUT", "/api/v1/playbooks/" + urllib.parse.quote(playbook_id, safe=""),
                            {"owner": owner, "definition": definition})

    def gate(self, call_id, user, conversation_id, turn_id, connector, tool, arguments,
             reason="", playbook_run_id=""):
        """Check the call, wait for a person if one must decide, claim the
        approval for exactly this call. `arguments` is the JSON text the
        model produced, unchanged. Never raises."""
        call = {"call_id": call_id, "user": user, "conversation_id": conversation_id,
                "turn_id": turn_id, "connector": connector, "tool": tool, "arguments": arguments}
        if reason:
            call["reason"] = reason
        if playbook_run_id:
            call["playbook_run_id"] = playbook_run_id
        approval_id = ""
        try:
            res = self.request("POST", "/api/v1/tool-calls", call)
            if res.get("call_id") != call_id:
                return _unavailable("the answer is about another call")
            decision = res.get("decision")
            if decision == "allow":
                return Outcome(True, via=res.get("via", ""))
            if decision == "deny":
                return _not_allowed(res.get("code"), res.get("message"), "")
            if decision != "pending" or not (res.get("approval") or {}).get("id"):
                return _unavailable("an answer this client does not understand")
            approval_id = res["approval"]["id"]
            state = self._wait(approval_id, call_id, res["approval"].get("expires_at", ""))
            status = state.get("status")
            if status == "approved":
                return self._claim(state, call_id, arguments)
            if status in ("rejected", "expired", "cancelled"):
                return _not_allowed(state.get("code"), state.get("message"), approval_id)
            return _unavailable("the approval ended as %r" % status, approval_id)
        except Exception as exc:  # fail closed on anything at all
            return _unavailable(_describe(exc), approval_id)

    def _wait(self, approval_id, call_id, expires_at):
        """Long-poll until the item is no longer pending; give up 30 s after
        its expiry (the server expires it by its own clock)."""
        give_up = _parse_time(expires_at) + 30
        path = "/api/v1/approvals/%s?wait=%ds" % (urllib.parse.quote(approval_id, safe=""), self.poll_wait)
        while True:
            state = self.request("GET", path)
            if state.get("id") != approval_id or state.get("call_id") != call_id:
                raise ValueError("an answer about another approval")
            if state.get("status") != "pending":
                return state
            if time.time() > give_up:
                raise TimeoutError("still pending after its expiry")

    def _claim(self, state, call_id, arguments):
        digest = arguments_digest(arguments)
        claimed = self.request("POST", "/api/v1/approvals/%s/claim" % urllib.parse.quote(state["id"], safe=""),
                               {"call_id": call_id, "arguments_digest": digest})
        # Only an answer saying this approval is now consumed for this call
        # and these arguments lets the tool run.
        if not claimed or claimed.get("status") != "consumed" or claimed.get("id") != state["id"] \
                or claimed.get("call_id") != call_id or claimed.get("arguments_digest") != digest:
            return _unavailable("the claim did not consume the approval", state["id"])
        return Outcome(True, via="person", scope=state.get("scope", ""), approval_id=state["id"])


def _not_allowed(code, message, approval_id):
    if not code:
        return _unavailable("not allowed without a code", approval_id)
    return Outcome(False, code=code, message=message or "The call was not allowed, so it did not run.",
                   approval_id=approval_id)


def _unavailable(why, approval_id=""):
    return Outcome(False, code=POLICY_UNAVAILABLE, approval_id=approval_id, error=why,
                   message="The approval check could not be completed, so the call did not run. "
                           "Do not retry it right away. Tell the user the action could not be "
                           "authorised and continue with what you can do without it.")


def _describe(exc):
    if isinstance(exc, urllib.error.HTTPError):
        try:
            err = json.loads(exc.read()).get("error", {})
            return "%d %s: %s" % (exc.code, err.get("code", ""), err.get("message", ""))
        except Exception:
            return "HTTP %d" % exc.code
    return "%s: %s" % (type(exc).__name__, exc)


def _parse_time(s):
    try:
        from datetime import datetime
        return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError):
        return time.time() + 660  # unknown: the server's default wait cap, and more


# --- The arguments digest: "sha256:" + hex SHA-256 of the canonical form:
# RFC 8785, except that every number is kept as written. ---

MAX_ARGUMENTS_BYTES = 1 << 20
MAX_DEPTH = 32


class _Number:
    def __init__(self, text):
        self.text = text


class _NotCanonical(Exception):
    pass


def arguments_digest(arguments):
    """The digest the server computes for `arguments`: of the canonical form
    (RFC 8785 with numbers as written) when the text is one JSON object
    within the limits (no duplicate keys, no NaN, depth up to 32, size up to
    1 MiB), otherwise of the text as sent, byte for byte."""
    raw = arguments.encode("utf-8", "surrogatepass")
    payload = raw
    try:
        payload = _canonical(arguments).encode("utf-8")
    except (_NotCanonical, ValueError, UnicodeEncodeError, RecursionError):
        pass
    return "sha256:" + hashlib.sha256(payload).hexdigest()


def _canonical(text):
    if len(text.encode("utf-8", "surrogatepass")) > MAX_ARGUMENTS_BYTES or not text.strip():
        raise _NotCanonical()

    def pairs(items):
        keys = [k for k, _ in items]
        if len(set(keys)) != len(keys):
            raise _NotCanonical()  # duplicate key
        return dict(items)

    def constant(_):
        raise _NotCanonical()  # NaN, Infinity

    value = json.loads(text, object_pairs_hook=pairs, parse_int=_Number, parse_float=_Number,
                       parse_constant=constant)
    if not isinstance(value, dict):
        raise _NotCanonical()
    return _write(value, 1)


def _write(v, depth):
    if depth > MAX_DEPTH:
        raise _NotCanonical()
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: k.encode("utf-16-be", "surrogatepass"))
        return "{" + ",".join(_string(k) + ":" + _write(v[k], depth + 1) for k in keys) + "}"
    if isinstance(v, list):
        return "[" + ",".join(_write(x, depth + 1) for x in v) + "]"
    if isinstance(v, _Number):
        return _number(v.text)
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    return _string(v)


def _string(s):
    out = json.dumps(s, ensure_ascii=False)
    out.encode("utf-8")  # a lone surrogate: not canonical, digest the text
    return out


def _number(text):
    return text  # as written: never through a double
