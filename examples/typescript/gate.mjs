// Ask Countersign before a tool runs: check, wait for the person, claim.
//
// Node 20+, no dependencies (built-in fetch and node:crypto); types are in
// gate.d.ts. Call gate() right before executing each tool call the model
// asked for; run the tool only when the outcome is allowed. Every failure on
// the way -- network, server, an answer this code does not understand -- is
// a "not allowed" outcome with code policy_unavailable: gate() fails closed
// and never throws.
import { createHash } from "node:crypto";

export const POLICY_UNAVAILABLE = "policy_unavailable";

export class Countersign {
  /** @param {{baseUrl?: string, apiKey?: string, pollWait?: number}} [opts] */
  constructor(opts = {}) {
    this.baseUrl = (opts.baseUrl ?? process.env.COUNTERSIGN_URL ?? "").replace(/\/+$/, "");
    this.apiKey = opts.apiKey ?? process.env.COUNTERSIGN_API_KEY ?? "";
    this.pollWait = opts.pollWait ?? 30;
  }

  /** Sends one API request and returns the decoded answer; a non-2xx answer throws. */
  async request(method, path, body) {
    const res = await fetch(this.baseUrl + path, {
      method,
      headers: { Authorization: `Bearer ${this.apiKey}`, "Content-Type": "application/json", Accept: "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      redirect: "manual", // the key and the call go only to the address given
      signal: AbortSignal.timeout((this.pollWait + 30) * 1000),
    });
    const text = await res.text();
    if (!res.ok) {
      let err = {};
      try { err = JSON.parse(text).error ?? {}; } catch { /* not JSON */ }
      throw new Error(`${res.status} ${err.code ?? ""}: ${err.message ?? ""}`);
    }
    return text ? JSON.parse(text) : null;
  }

  /** Registers a connector's full tool list (tools left out are retired). */
  syncConnector(name, displayName, tools, kind = "connector") {
    return this.request("PUT", `/api/v1/connectors/${encodeURIComponent(name)}`, { display_name: displayName, kind, tools });
  }

  /** Registers or updates a playbook (it starts disabled until its owner approves its tools). */
  registerPlaybook(id, owner, definition) {
    return this.request("PUT", `/api/v1/playbooks/${encodeURIComponent(id)}`, { owner, definition });
  }

  /** Checks the call, waits for a person if one must decide, and claims the approval for exactly this call. Never throws. */
  async gate(call) {
    let approvalId = "";
    try {
      const res = await this.request("POST", "/api/v1/tool-calls", call);
      if (res?.call_id !== call.call_id) return unavailable("the answer is about another call");
      if (res.decision === "allow") return { allowed: true, via: res.via ?? "" };
      if (res.decision === "deny") return notAllowed(res.code, res.message, "");
      if (res.decision !== "pending" || !res.approval?.id) return unavailable("an answer this client does not understand");
      approvalId = res.approval.id;
      const state = await this.#wait(approvalId, call.call_id, res.approval.expires_at);
      if (state.status === "approved") return await this.#claim(state, call);
      if (["rejected", "expired", "cancelled"].includes(state.status)) return notAllowed(state.code, state.message, approvalId);
      return unavailable(`the approval ended as ${state.status}`, approvalId);
    } catch (err) {
      return unavailable(String(err?.message ?? err), approvalId);
    }
  }

  // Long-polls until the item is no longer pending; gives up 30 s after its
  // expiry (the server expires it by its own clock).
  async #wait(id, callId, expiresAt) {
    const expiry = Date.parse(expiresAt);
    const giveUp = (Number.isNaN(expiry) ? Date.now() + 660_000 : expiry) + 30_000;
    const path = `/api/v1/approvals/${encodeURIComponent(id)}?wait=${this.pollWait}s`;
    for (;;) {
      const state = await this.request("GET", path);
      if (state?.id !== id || state.call_id !== callId) throw new Error("an answer about another approval");
      if (state.status !== "pending") return state;
      if (Date.now() > giveUp) throw new Error("still pending after its expiry");
    }
  }

  async #claim(state, call) {
    const digest = argumentsDigest(call.arguments);
    const claimed = await this.request("POST", `/api/v1/approvals/${encodeURIComponent(state.id)}/claim`,
      { call_id: call.call_id, arguments_digest: digest });
    // Only an answer saying this approval is now consumed for this call and
    // these arguments lets the tool run.
    if (claimed?.status !== "consumed" || claimed.id !== state.id || claimed.call_id !== call.call_id || claimed.arguments_digest !== digest) {
      return unavailable("the claim did not consume the approval", state.id);
    }
    return { allowed: true, via: "person", scope: state.scope ?? "", approvalId: state.id };
  }
}

function notAllowed(code, message, approvalId) {
  if (!code) return unavailable("not allowed without a code", approvalId);
  return { allowed: false, code, message: message || "The call was not allowed, so it did not run.", approvalId };
}

function unavailable(error, approvalId = "") {
  return {
    allowed: false, code: POLICY_UNAVAILABLE, approvalId, error,
    message: "The approval check could not be completed, so the call did not run. Do not retry it right away. " +
      "Tell the user the action could not be authorised and continue with what you can do without it.",
  };
}

// --- The arguments digest: "sha256:" + hex SHA-256 of the canonical form:
// RFC 8785, except that every number is kept as written. ---

const MAX_ARGUMENTS_BYTES = 1 << 20;
const MAX_DEPTH = 32;

/**
 * The digest the server computes for `text`: of the canonical form (RFC 8785
 * with numbers as written) when the text is one JSON object within the
 * limits (no duplicate keys, depth up to 32, size up to 1 MiB), otherwise of
 * the text as sent, byte for byte.
 */
export function argumentsDigest(text) {
  let payload = text;
  try {
    payload = canonical(text);
  } catch { /* not a valid arguments object: digest the text */ }
  return "sha256:" + createHash("sha256").update(payload, "utf8").digest("hex");
}

function canonical(text) {
  if (Buffer.byteLength(text, "utf8") > MAX_ARGUMENTS_BYTES || !text.trim()) throw new Error("limits");
  const value = parse(text);
  if (!(value instanceof Map)) throw new Error("not an object");
  return write(value);
}

function write(v) {
  if (Array.isArray(v)) return "[" + v.map(write).join(",") + "]";
  // Default sort compares UTF-16 code units, as RFC 8785 asks.
  if (v instanceof Map) return "{" + [...v.keys()].sort().map((k) => str(k) + ":" + write(v.get(k))).join(",") + "}";
  if (v instanceof JSONNumber) return v.text; // as written: never through a double
  if (typeof v === "string") return str(v);
  return JSON.stringify(v); // true, false, null
}

function str(s) {
  if (!s.isWellFormed()) throw new Error("lone surrogate");
  return JSON.stringify(s);
}

class JSONNumber {
  constructor(text) { this.text = text; }
}

// parse reads one JSON value strictly (JSON.parse would turn numbers into
// doubles and keep the last of two equal keys): objects become Maps,
// numbers keep their text; a duplicate key or nesting deeper than 32 fails.
function parse(t) {
  let i = 0;
  let depth = 0;
  const fail = (why) => { throw new Error(why); };
  const ws = () => { while (i < t.length && " \t\r\n".includes(t[i])) i++; };
  const token = (re) => {
    re.lastIndex = i;
    const m = re.exec(t);
    if (!m) fail("not valid JSON");
    i = re.lastIndex;
    return m[0];
  };
  const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
  const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?/y;
  const LITERAL = /true|false|null/y;
  function value() {
    ws();
    const c = t[i];
    if (c === "{" || c === "[") {
      if (++depth > MAX_DEPTH) fail("too deep");
      i++;
      const obj = c === "{" ? new Map() : [];
      ws();
      if (t[i] === (c === "{" ? "}" : "]")) { i++; depth--; return obj; }
      for (;;) {
        if (c === "{") {
          ws();
          const key = JSON.parse(token(STRING));
          ws();
          if (t[i++] !== ":") fail("not valid JSON");
          if (obj.has(key)) fail("duplicate key");
          obj.set(key, value());
        } else {
          obj.push(value());
        }
        ws();
        const sep = t[i++];
        if (sep === ",") continue;
        if (sep === (c === "{" ? "}" : "]")) { depth--; return obj; }
        fail("not valid JSON");
      }
    }
    if (c === '"') return JSON.parse(token(STRING));
    if (c === "-" || (c >= "0" && c <= "9")) return new JSONNumber(token(NUMBER));
    return JSON.parse(token(LITERAL));
  }
  const v = value();
  ws();
  if (i !== t.length) fail("more than one JSON value");
  return v;
}
