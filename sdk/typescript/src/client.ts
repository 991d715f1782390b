// The Countersign runtime API (docs/api.md) for the framework adapters:
// check a call, wait live for the person, claim the approval right before
// the tool runs. Every method fails closed: an error on the way is an
// answer that does not let the tool run, with a code the model can act on,
// never an exception that a framework might turn into "run it anyway".
import { argumentsDigest } from "./digest.js";

/** The code every failure on the way to a decision ends in (docs/api.md). */
export const POLICY_UNAVAILABLE = "policy_unavailable";

/** One tool call about to run, as Countersign's check takes it. */
export interface ToolCall {
  /** The framework's id of this tool call (the model's call id). */
  callId: string;
  /** The OIDC subject of the person whose inbox is asked (in dev: "demo-member"). */
  user: string;
  conversationId: string;
  turnId: string;
  connector: string;
  tool: string;
  /** The arguments as JSON text; the approval is bound to their digest. */
  arguments: string;
  /** What the agent is trying to do; shown to the person. */
  reason?: string;
  /** The conversation's label, shown in place of its id. */
  conversationTitle?: string;
  /** What the runtime says about itself (shown as unverified). */
  runtime?: { client?: string; host?: string; working_directory?: string };
}

/** The answer to a check. */
export type CheckAnswer =
  | { kind: "allow"; via: string }
  /** Not allowed: give code and message to the model (forModel does). */
  | { kind: "deny"; code: string; message: string; approvalId?: string; userWords?: string }
  /** A person decides: wait for the approval, then claim it right before running. */
  | { kind: "pending"; approvalId: string; digest: string; url: string };

/** Where a person's decision stands. */
export type Decision =
  | { kind: "approved"; scope: string }
  /** Still pending when the wait given up (maxWaitMs); nothing is decided. */
  | { kind: "pending" }
  | { kind: "refused"; code: string; message: string; userWords?: string };

/** The answer to a claim: run the tool only when ok. */
export type ClaimAnswer = { ok: true; decidedBy: string[] } | { ok: false; code: string; message: string };

/** Options of a Countersign client. */
export interface CountersignOptions {
  /** Defaults to COUNTERSIGN_URL. */
  baseUrl?: string;
  /** The runtime key; defaults to COUNTERSIGN_API_KEY. */
  apiKey?: string;
  /** Seconds one long-poll of a wait may hold (the server caps it at 60); 30 by default. */
  pollSeconds?: number;
}

/** A connector's tool, for syncConnector. */
export interface ConnectorTool {
  name: string;
  display_name?: string;
  description?: string;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  standing_approval?: boolean;
}

class APIError extends Error {
  constructor(readonly status: number, readonly code: string, readonly serverMessage: string) {
    super(`${status} ${code}`);
  }
}

const UNAVAILABLE_MESSAGE = "The approval check could not be completed, so the call did not run. Do not retry it right away. " +
  "Tell the user the action could not be authorised and continue with what you can do without it.";

// Messages for a claim the server refused; the model acts on them.
const CLAIM_MESSAGES: Record<string, string> = {
  already_consumed: "This approval was used already: the call ran once and does not run again. Do not repeat it.",
  not_approved: "This call is not approved, so it did not run.",
  call_mismatch: "The arguments are not the ones the person approved, so the call did not run. Make the call again to ask about the new arguments.",
  blocked_by_policy: "An administrator blocked this tool after it was approved, so the call did not run. Do not call it again.",
};

/** The Countersign runtime API, failing closed. */
export class Countersign {
  readonly baseUrl: string;
  readonly #apiKey: string;
  readonly #pollSeconds: number;

  constructor(opts: CountersignOptions = {}) {
    this.baseUrl = (opts.baseUrl ?? process.env.COUNTERSIGN_URL ?? "").replace(/\/+$/, "");
    this.#apiKey = opts.apiKey ?? process.env.COUNTERSIGN_API_KEY ?? "";
    this.#pollSeconds = Math.min(Math.max(Math.floor(opts.pollSeconds ?? 30), 1), 60);
  }

  /** Registers a connector's full tool list (tools left out are retired). Throws on failure. */
  async syncConnector(name: string, displayName: string, tools: ConnectorTool[], kind: "connector" | "builtin" = "connector"): Promise<void> {
    await this.#request("PUT", `/api/v1/connectors/${encodeURIComponent(name)}`, { display_name: displayName, kind, tools });
  }

  /** Asks whether the call may run. Never throws: any failure is a deny with policy_unavailable. */
  async check(call: ToolCall): Promise<CheckAnswer> {
    const body: Record<string, unknown> = {
      call_id: call.callId, user: call.user, conversation_id: call.conversationId, turn_id: call.turnId,
      connector: call.connector, tool: call.tool, arguments: call.arguments,
    };
    if (call.reason) body.reason = call.reason;
    if (call.conversationTitle) body.conversation_title = call.conversationTitle;
    if (call.runtime) body.runtime = call.runtime;
    try {
      const res = await this.#request("POST", "/api/v1/tool-calls", body);
      if (res?.call_id !== call.callId) return unavailable();
      if (res.decision === "allow" && typeof res.via === "string") return { kind: "allow", via: res.via };
      if (res.decision === "deny" && typeof res.code === "string" && res.code) {
        return { kind: "deny", code: res.code, message: str(res.message) || "The call was not allowed, so it did not run.",
          approvalId: res.approval?.id, userWords: words(res.approval) };
      }
      const a = res.approval;
      if (res.decision === "pending" && typeof a?.id === "string" && a.id && typeof a.arguments_digest === "string") {
        // The item is bound to the digest of the arguments sent: a runtime
        // that computes another one would claim other arguments.
        if (a.arguments_digest !== argumentsDigest(call.arguments)) return unavailable();
        return { kind: "pending", approvalId: a.id, digest: a.arguments_digest, url: str(a.url) };
      }
      return unavailable();
    } catch {
      return unavailable();
    }
  }

  /**
   * Waits live for the person's decision: long-polls the item (the server
   * holds each request until the item settles) until it is no longer
   * pending, or maxWaitMs has passed (then `pending`). Never throws; a
   * failure is refused with policy_unavailable.
   */
  async waitForDecision(approvalId: string, callId: string, opts: { maxWaitMs?: number; signal?: AbortSignal } = {}): Promise<Decision> {
    const until = opts.maxWaitMs === undefined ? Infinity : Date.now() + opts.maxWaitMs;
    try {
      for (;;) {
        const left = until - Date.now();
        const wait = Math.max(0, Math.min(this.#pollSeconds, Math.ceil(left / 1000)));
        const asked = Date.now();
        const item = await this.#request("GET", `/api/v1/approvals/${encodeURIComponent(approvalId)}?wait=${wait}s`, undefined, opts.signal);
        if (item?.id !== approvalId || item.call_id !== callId) return refusedUnavailable();
        switch (item.status) {
          case "pending":
            if (Date.now() >= until) return { kind: "pending" };
            // A long-poll the server answered at once (a proxy that does not
            // hold requests): wait a little before the next, never spin.
            await pause(asked + MIN_POLL_GAP_MS - Date.now(), opts.signal);
            continue;
          case "approved":
            return { kind: "approved", scope: str(item.scope) };
          case "rejected": case "expired": case "cancelled":
            if (typeof item.code !== "string" || !item.code) return refusedUnavailable();
            return { kind: "refused", code: item.code, message: str(item.message) || "The call was not allowed, so it did not run.",
              userWords: words(item) };
          case "consumed":
            return { kind: "refused", code: "already_consumed", message: CLAIM_MESSAGES.already_consumed };
          default:
            return refusedUnavailable();
        }
      }
    } catch {
      return refusedUnavailable();
    }
  }

  /**
   * Claims the approval for exactly this call and these arguments, right
   * before the tool runs. Only an answer saying the approval is now consumed
   * for this call id and digest lets it run; a second claim is refused
   * (already_consumed), which is what stops a replayed state.
   */
  async claim(approvalId: string, callId: string, args: string): Promise<ClaimAnswer> {
    const digest = argumentsDigest(args);
    try {
      const res = await this.#request("POST", `/api/v1/approvals/${encodeURIComponent(approvalId)}/claim`,
        { call_id: callId, arguments_digest: digest });
      if (res?.status !== "consumed" || res.id !== approvalId || res.call_id !== callId || res.arguments_digest !== digest) {
        return { ok: false, code: POLICY_UNAVAILABLE, message: UNAVAILABLE_MESSAGE };
      }
      return { ok: true, decidedBy: Array.isArray(res.decided_by) ? res.decided_by.map(String) : [] };
    } catch (err) {
      if (err instanceof APIError && err.status === 409 && CLAIM_MESSAGES[err.code]) {
        return { ok: false, code: err.code, message: CLAIM_MESSAGES[err.code] };
      }
      return { ok: false, code: POLICY_UNAVAILABLE, message: UNAVAILABLE_MESSAGE };
    }
  }

  async #request(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<any> {
    const timeout = AbortSignal.timeout((this.#pollSeconds + 30) * 1000);
    const res = await fetch(this.baseUrl + path, {
      method,
      headers: { Authorization: `Bearer ${this.#apiKey}`, "Content-Type": "application/json", Accept: "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      // No redirect is followed, as in the Go client: the key and the call
      // go only to the address given, and an answer from elsewhere is not
      // Countersign's. A redirect is an error status here: does not run.
      redirect: "manual",
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    const text = await res.text();
    if (!res.ok) {
      let err: any = {};
      try { err = JSON.parse(text).error ?? {}; } catch { /* not JSON */ }
      throw new APIError(res.status, str(err.code), str(err.message));
    }
    return text ? JSON.parse(text) : null;
  }
}

/**
 * What the model receives for a call that did not run: one JSON object with
 * Countersign's code and message, whole, and the person's own words in a
 * field of their own, so that the model can tell them from anything else.
 */
export function forModel(code: string, message: string, userWords?: string): string {
  const out: Record<string, string> = { countersign: "not_run", code, message };
  if (userWords) out.user_words = userWords;
  return JSON.stringify(out);
}

/**
 * The arguments a framework parsed, as the JSON text Countersign is asked
 * about and the claim binds; undefined when JSON cannot carry them as they
 * are — a number that is not finite (JSON.parse reads 1e400 as Infinity,
 * which JSON.stringify writes as null: the person would approve null and
 * the tool get Infinity), a bigint, a function or a symbol. Such a call
 * does not run.
 */
export function argumentsJSON(input: unknown): string | undefined {
  let exact = true;
  const text = JSON.stringify(input ?? {}, (_key, v) => {
    if ((typeof v === "number" && !Number.isFinite(v)) || typeof v === "bigint" || typeof v === "function" || typeof v === "symbol") {
      exact = false;
      return null;
    }
    return v;
  });
  return exact && typeof text === "string" ? text : undefined;
}

/** The answer for any failure: does not run, policy_unavailable. */
export function unavailable(): CheckAnswer & { kind: "deny" } {
  return { kind: "deny", code: POLICY_UNAVAILABLE, message: UNAVAILABLE_MESSAGE };
}

const MIN_POLL_GAP_MS = 250;

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => { clearTimeout(timer); reject(signal.reason); }, { once: true });
  });
}

function refusedUnavailable(): Decision {
  return { kind: "refused", code: POLICY_UNAVAILABLE, message: UNAVAILABLE_MESSAGE };
}

function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

// The reviewer's words of a rejected item, when there are any.
function words(item: any): string | undefined {
  return item?.status === "rejected" && typeof item.reason === "string" && item.reason ? item.reason : undefined;
}

export { argumentsDigest };
