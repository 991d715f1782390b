// Countersign for the OpenAI Agents SDK (@openai/agents): a tool's
// `needsApproval` asks Countersign, a pending answer becomes the run's
// interruption, `resolve` answers the interruptions from the person's
// decisions (waiting live, or not at all after a restart when the person
// decided while the program was gone), and the tool's execution claims the
// approval right before it runs.
//
// What Countersign knows about each call (the approval's id) travels inside
// the run's context, under `countersign`, so that it is serialised with the
// RunState and a program that exits while a person decides picks it up
// again with RunState.fromString.
import { randomUUID } from "node:crypto";
import { tool as agentsTool } from "@openai/agents";
import type { FunctionTool, RunContext, RunState, RunToolApprovalItem, ToolInputParameters, ToolOptions, Agent } from "@openai/agents";
import { Countersign, argumentsJSON, forModel, unavailable, type CheckAnswer } from "./client.js";

/** What one call's check answered, kept in the run's context. */
export type CallRecord =
  | { kind: "allow"; via: string }
  | { kind: "deny"; code: string; message: string; userWords?: string }
  | { kind: "pending"; approvalId: string; url: string }
  | { kind: "consumed"; approvalId: string };

/** Countersign's part of a run's context (the `countersign` key). */
export interface CountersignRunContext {
  conversationId: string;
  turnId: string;
  conversationTitle?: string;
  /** Per tool call id: what Countersign answered. */
  calls: Record<string, CallRecord>;
}

/** Options of the adapter. */
export interface AgentsOptions {
  countersign: Countersign;
  /** The OIDC subject of the person whose inbox is asked. */
  user: string;
  /** The connector the tools belong to in Countersign's catalog. */
  connector: string;
  /** What the runtime says about itself; defaults to the SDK's name. */
  runtime?: { client?: string; host?: string; working_directory?: string };
}

/** The options of a guarded tool: the SDK's own, with an execute that returns text. */
export type GuardedToolOptions<TParameters extends ToolInputParameters, Context> = ToolOptions<TParameters, Context> & {
  /** The tool's name in Countersign's catalog; defaults to the tool's name. */
  countersignTool?: string;
};

/** The adapter: guarded tools, the run's context, and the interruptions' resolution. */
export interface CountersignAgents {
  /**
   * The SDK's `tool()`, asking Countersign: its `needsApproval` checks the
   * call and its `execute` runs only on an answer that lets it run (a
   * person's approval is claimed right before). A call that does not run
   * returns Countersign's code and message to the model.
   */
  tool<TParameters extends ToolInputParameters, Context = unknown>(options: GuardedToolOptions<TParameters, Context>): FunctionTool<Context, TParameters, string>;
  /** The run's context: pass it (with your own fields) as `run(agent, input, { context })`. */
  context<T extends object>(conversationId: string, extra?: T, opts?: { turnId?: string; conversationTitle?: string }): T & { countersign: CountersignRunContext };
  /**
   * Answers the state's Countersign interruptions — those of nested agents
   * too, as the SDK surfaces them on the outer run — from the person's
   * decisions: approve, or reject with Countersign's code and message (the
   * person's words marked as theirs). Waits live (long-polls) at most
   * maxWaitMs, if given; the interruptions still pending are returned, so
   * that the program may save `state.toString()` and resume later.
   */
  resolve(state: RunState<any, any>, opts?: { maxWaitMs?: number; signal?: AbortSignal }): Promise<{ pending: RunToolApprovalItem[] }>;
}

/** Makes the adapter. */
export function countersignAgents(opts: AgentsOptions): CountersignAgents {
  const cs = opts.countersign;
  const runtime = opts.runtime ?? { client: "OpenAI Agents SDK" };

  return {
    tool<TParameters extends ToolInputParameters, Context = unknown>(options: GuardedToolOptions<TParameters, Context>) {
      const { countersignTool, execute, ...rest } = options as any;
      const name: string = countersignTool ?? options.name ?? "";
      const needsApproval = async (runContext: RunContext<any>, input: unknown, callId?: string): Promise<boolean> => {
        const slot = slotOf(runContext);
        if (!slot || !callId) return false; // execute finds no record and does not run
        // Asked already (the SDK asks again when it restores a state): the
        // answer stands. A second check after the claim would open a new
        // item, a second question about one call.
        const known = slot.calls[callId];
        if (known) return known.kind === "pending" || known.kind === "consumed";
        const args = argumentsText(input);
        const answer: CheckAnswer = name && args !== undefined
          ? await cs.check({ callId, user: opts.user, conversationId: slot.conversationId, turnId: slot.turnId,
            conversationTitle: slot.conversationTitle, connector: opts.connector, tool: name, arguments: args, runtime })
          : unavailable();
        slot.calls[callId] = answer.kind === "allow" ? { kind: "allow", via: answer.via }
          : answer.kind === "deny" ? { kind: "deny", code: answer.code, message: answer.message, userWords: answer.userWords }
          : { kind: "pending", approvalId: answer.approvalId, url: answer.url };
        // Only a pending answer interrupts the run; a deny lets execute
        // hand the model Countersign's code and message.
        return answer.kind === "pending";
      };
      const guarded = async (input: unknown, runContext?: RunContext<any>, details?: { toolCall?: { callId?: string } }) => {
        const slot = runContext ? slotOf(runContext) : undefined;
        const callId = details?.toolCall?.callId;
        const rec = slot && callId ? slot.calls[callId] : undefined;
        const none = unavailable();
        if (!rec || !callId) return forModel(none.code, none.message);
        switch (rec.kind) {
          case "allow":
            return execute(input, runContext, details);
          case "deny":
            return forModel(rec.code, rec.message, rec.userWords);
          case "pending": {
            // The claim, right before the tool runs: a state replayed after
            // this point is refused (already_consumed) and runs nothing.
            const args = argumentsText(input);
            if (args === undefined) return forModel(none.code, none.message);
            const claimed = await cs.claim(rec.approvalId, callId, args);
            if (!claimed.ok) return forModel(claimed.code, claimed.message);
            slot!.calls[callId] = { kind: "consumed", approvalId: rec.approvalId };
            return execute(input, runContext, details);
          }
          case "consumed":
            return forModel("already_consumed", "This approval was used already: the call ran once and does not run again. Do not repeat it.");
        }
      };
      return agentsTool({ ...rest, needsApproval, execute: guarded } as any) as FunctionTool<Context, TParameters, string>;
    },

    context(conversationId, extra, o = {}) {
      const countersign: CountersignRunContext = { conversationId, turnId: o.turnId ?? randomUUID(), calls: {} };
      if (o.conversationTitle) countersign.conversationTitle = o.conversationTitle;
      return { ...(extra ?? ({} as any)), countersign };
    },

    async resolve(state, o = {}) {
      const slot = slotOf(state._context);
      const pending: RunToolApprovalItem[] = [];
      await Promise.all(state.getInterruptions().map(async (item) => {
        const callId = (item.rawItem as { callId?: string }).callId;
        const rec = slot && callId ? slot.calls[callId] : undefined;
        if (!rec || rec.kind !== "pending" || !callId) {
          if (rec?.kind === "deny") state.reject(item, { message: forModel(rec.code, rec.message, rec.userWords) });
          return; // not a call this adapter asked about: the program decides it
        }
        const d = await cs.waitForDecision(rec.approvalId, callId, { maxWaitMs: o.maxWaitMs, signal: o.signal });
        if (d.kind === "approved") {
          state.approve(item);
        } else if (d.kind === "pending") {
          pending.push(item);
        } else {
          slot!.calls[callId] = { kind: "deny", code: d.code, message: d.message, userWords: d.userWords };
          state.reject(item, { message: forModel(d.code, d.message, d.userWords) });
        }
      }));
      return { pending };
    },
  };
}

// The run context's Countersign part, or undefined when the program did not
// pass one (then nothing is allowed to run).
function slotOf(runContext: RunContext<any> | undefined): CountersignRunContext | undefined {
  const slot = (runContext?.context as { countersign?: CountersignRunContext } | undefined)?.countersign;
  if (!slot || typeof slot.conversationId !== "string" || typeof slot.turnId !== "string" || typeof slot.calls !== "object" || !slot.calls) {
    return undefined;
  }
  return slot;
}

// The arguments as JSON text: what the tool's schema made of the model's
// arguments, which is exactly what execute receives; the person approves
// those and the claim binds them.
function argumentsText(input: unknown): string | undefined {
  return typeof input === "string" ? input : argumentsJSON(input);
}

export type { Agent };
