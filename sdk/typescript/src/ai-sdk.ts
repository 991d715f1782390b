// Countersign for the AI SDK (`ai` 7): `toolApproval` (generateText's and
// streamText's approval hook; a tool's own `needsApproval` is deprecated in
// AI SDK 7 and cannot carry a reason) asks Countersign about each tool call;
// a pending answer becomes the SDK's tool-approval-request part, `answer`
// turns the person's decision into the tool-approval-response part the SDK
// reads on the next call, and `tools` wraps each tool's execute so that it
// claims the approval right before it runs.
//
// The Countersign approval a request stands for is written in the request's
// `reason` ("Countersign approval <id> …"), so it travels with the messages
// a program keeps: a program that exits while a person decides loads them
// again and calls `answer`.
import type { ModelMessage, ToolApprovalStatus, ToolSet } from "ai";
import { Countersign, argumentsJSON, forModel, unavailable } from "./client.js";

/** Options of the adapter; one per conversation turn. */
export interface AISDKOptions {
  countersign: Countersign;
  /** The OIDC subject of the person whose inbox is asked. */
  user: string;
  /** The connector the tools belong to in Countersign's catalog. */
  connector: string;
  conversationId: string;
  turnId: string;
  conversationTitle?: string;
  runtime?: { client?: string; host?: string; working_directory?: string };
}

/** The tool-approval-response parts for the decided requests, and what is still pending. */
export interface Answer {
  /** A `tool` message to append to the messages, or undefined when nothing was decided. */
  message?: ModelMessage;
  /** The SDK approval ids still waiting for the person. */
  pending: string[];
}

/** The adapter: generateText's `toolApproval`, the guarded tools, and the answer glue. */
export interface CountersignAISDK {
  /** Pass as generateText({ toolApproval }). */
  toolApproval: (options: { toolCall: { toolCallId: string; toolName: string; input: unknown }; messages: ModelMessage[] }) => Promise<ToolApprovalStatus>;
  /** The tools with each execute claiming its approval right before it runs. */
  tools<T extends ToolSet>(tools: T): T;
  /**
   * Waits live (at most maxWaitMs, if given) for the person's decisions on
   * the messages' open Countersign requests and returns the SDK's
   * tool-approval-response parts: approved, or denied with Countersign's
   * code and message (the person's words marked as theirs) as the reason the
   * model receives.
   */
  answer(messages: ModelMessage[], opts?: { maxWaitMs?: number; signal?: AbortSignal }): Promise<Answer>;
}

const REASON = /^Countersign approval ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/;

/** Makes the adapter. */
export function countersignAISDK(opts: AISDKOptions): CountersignAISDK {
  const cs = opts.countersign;
  const runtime = opts.runtime ?? { client: "AI SDK" };
  // Calls the policy allowed in this process: they run without a person,
  // in the same generateText call that asked.
  const allowed = new Set<string>();

  return {
    async toolApproval({ toolCall, messages }) {
      // Asked already (the SDK asks again before running an approved call):
      // the request stands; a second check after the claim would open a new
      // item, a second question about one call.
      if (approvalOf(messages, toolCall.toolCallId)) return { type: "user-approval" };
      const args = argumentsJSON(toolCall.input);
      const answer = args === undefined ? unavailable() : await cs.check({ callId: toolCall.toolCallId, user: opts.user,
        conversationId: opts.conversationId, turnId: opts.turnId, conversationTitle: opts.conversationTitle,
        connector: opts.connector, tool: toolCall.toolName, arguments: args, runtime });
      switch (answer.kind) {
        case "allow":
          allowed.add(toolCall.toolCallId);
          return { type: "not-applicable" };
        case "deny":
          return { type: "denied", reason: forModel(answer.code, answer.message, answer.userWords) };
        case "pending":
          return { type: "user-approval", reason: `Countersign approval ${answer.approvalId} — decide at ${answer.url}` };
      }
    },

    tools(tools) {
      const out: Record<string, unknown> = {};
      for (const [name, t] of Object.entries(tools)) {
        const execute = (t as { execute?: (input: any, options: any) => any }).execute;
        if (!execute) {
          out[name] = t;
          continue;
        }
        out[name] = {
          ...t,
          execute: async (input: unknown, options: { toolCallId: string; messages: ModelMessage[] }) => {
            if (allowed.delete(options.toolCallId)) return execute(input, options);
            const approvalId = approvalOf(options.messages ?? [], options.toolCallId);
            const args = argumentsJSON(input);
            if (!approvalId || args === undefined) {
              const none = unavailable();
              return forModel(none.code, none.message);
            }
            // The claim, right before the tool runs: replayed messages are
            // refused (already_consumed) and run nothing.
            const claimed = await cs.claim(approvalId, options.toolCallId, args);
            if (!claimed.ok) return forModel(claimed.code, claimed.message);
            return execute(input, options);
          },
        };
      }
      return out as typeof tools;
    },

    async answer(messages, o = {}) {
      const responded = new Set<string>();
      for (const m of messages) {
        if (m.role !== "tool") continue;
        for (const p of m.content) if (p.type === "tool-approval-response") responded.add(p.approvalId);
      }
      const open: { sdkId: string; toolCallId: string; approvalId: string }[] = [];
      for (const m of messages) {
        if (m.role !== "assistant" || typeof m.content === "string") continue;
        for (const p of m.content) {
          if (p.type !== "tool-approval-request" || responded.has(p.approvalId)) continue;
          const id = REASON.exec(p.reason ?? "")?.[1];
          if (id) open.push({ sdkId: p.approvalId, toolCallId: p.toolCallId, approvalId: id });
        }
      }
      const pending: string[] = [];
      const parts: { type: "tool-approval-response"; approvalId: string; approved: boolean; reason?: string }[] = [];
      await Promise.all(open.map(async (r) => {
        const d = await cs.waitForDecision(r.approvalId, r.toolCallId, { maxWaitMs: o.maxWaitMs, signal: o.signal });
        if (d.kind === "approved") parts.push({ type: "tool-approval-response", approvalId: r.sdkId, approved: true });
        else if (d.kind === "pending") pending.push(r.sdkId);
        else parts.push({ type: "tool-approval-response", approvalId: r.sdkId, approved: false, reason: forModel(d.code, d.message, d.userWords) });
      }));
      return { message: parts.length > 0 ? { role: "tool", content: parts } : undefined, pending };
    },
  };
}

// The Countersign approval id of the call's approval request in messages.
function approvalOf(messages: ModelMessage[], toolCallId: string): string | undefined {
  for (const m of messages) {
    if (m.role !== "assistant" || typeof m.content === "string") continue;
    for (const p of m.content) {
      if (p.type === "tool-approval-request" && p.toolCallId === toolCallId) {
        const id = REASON.exec(p.reason ?? "")?.[1];
        if (id) return id;
      }
    }
  }
  return undefined;
}
