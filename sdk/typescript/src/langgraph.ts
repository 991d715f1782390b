// Countersign for LangGraph (@langchain/langgraph): a tool wrapper that
// asks Countersign when the tool is called in a graph node (a ToolNode, or
// your own), `interrupt()`s with the Countersign item when a person must
// decide, and runs the tool only after claiming the approval; `resume` turns
// the person's decision into the `Command({ resume })` that continues the
// graph. The graph's checkpointer (the Postgres one across restarts) keeps
// the interrupted state while the person decides.
import { tool as langchainTool, type DynamicStructuredTool } from "@langchain/core/tools";
import type { ToolRunnableConfig } from "@langchain/core/tools";
import { Command, getConfig, interrupt, type StateSnapshot } from "@langchain/langgraph";
import { Countersign, argumentsJSON, forModel, unavailable } from "./client.js";

/** Options of the adapter. */
export interface LangGraphOptions {
  countersign: Countersign;
  /** The OIDC subject of the person whose inbox is asked. */
  user: string;
  /** The connector the tools belong to in Countersign's catalog. */
  connector: string;
  runtime?: { client?: string; host?: string; working_directory?: string };
}

/** What a guarded tool interrupts with: the Countersign item to decide. */
export interface CountersignInterrupt {
  countersign: { approvalId: string; url: string; callId: string; connector: string; tool: string; arguments: string };
}

/** What the graph is resumed with for a Countersign interrupt. */
export type CountersignResume = {
  countersign:
    | { approvalId: string; decision: "approved" }
    | { approvalId: string; decision: "refused"; code: string; message: string; userWords?: string };
};

/** The adapter: guarded tools and the resume glue. */
export interface CountersignLangGraph {
  /**
   * LangChain's `tool(func, fields)`, asking Countersign before func runs.
   * The conversation is the thread (`configurable.thread_id`), the turn
   * `configurable.turn_id` (else the thread).
   */
  tool<TInput>(func: (input: TInput, config: ToolRunnableConfig) => unknown, fields: { name: string; description?: string; schema: any; countersignTool?: string }): DynamicStructuredTool<any>;
  /**
   * Waits live (at most maxWaitMs, if given) for the person's decisions on
   * the snapshot's Countersign interrupts; returns the Command that resumes
   * the graph with them, or undefined while one is still pending (keep the
   * checkpoint, come back later).
   */
  resume(snapshot: StateSnapshot, opts?: { maxWaitMs?: number; signal?: AbortSignal }): Promise<Command | undefined>;
}

/** Makes the adapter. */
export function countersignLangGraph(opts: LangGraphOptions): CountersignLangGraph {
  const cs = opts.countersign;
  const runtime = opts.runtime ?? { client: "LangGraph" };

  return {
    tool(func, fields) {
      const { countersignTool, ...rest } = fields;
      const name = countersignTool ?? fields.name;
      const guarded = async (input: any, config: ToolRunnableConfig) => {
        const callId = config?.toolCall?.id;
        const thread = config?.configurable?.thread_id;
        const args = argumentsJSON(input);
        if (typeof callId !== "string" || !callId || typeof thread !== "string" || !thread || args === undefined) {
          const none = unavailable();
          return forModel(none.code, none.message);
        }
        // A resumed node runs again from its start. When it is resumed, the
        // check was made and the item shown already: do not check again (after
        // the claim that would open a new item, a second question about one
        // call); take the decision the graph was resumed with.
        if (!resuming()) {
          const turn = config.configurable?.turn_id;
          const answer = await cs.check({ callId, user: opts.user, conversationId: thread,
            turnId: typeof turn === "string" && turn ? turn : thread, connector: opts.connector, tool: name, arguments: args, runtime });
          if (answer.kind === "allow") return func(input, config);
          if (answer.kind === "deny") return forModel(answer.code, answer.message, answer.userWords);
          const ask: CountersignInterrupt = { countersign: { approvalId: answer.approvalId, url: answer.url, callId,
            connector: opts.connector, tool: name, arguments: args } };
          // interrupt() throws to pause the graph until resume; never catch it.
          return decide(interrupt(ask));
        }
        return decide(interrupt({ countersign: { callId, connector: opts.connector, tool: name, arguments: args } }));

        async function decide(resumed: unknown) {
          const r = (resumed as CountersignResume | undefined)?.countersign;
          if (r?.decision === "refused" && typeof r.code === "string" && r.code && typeof r.message === "string") {
            return forModel(r.code, r.message, r.userWords);
          }
          if (r?.decision !== "approved" || typeof r.approvalId !== "string") {
            const none = unavailable();
            return forModel(none.code, none.message);
          }
          // The claim, right before the tool runs: a replayed checkpoint is
          // refused (already_consumed) and runs nothing.
          const claimed = await cs.claim(r.approvalId, callId!, args!);
          if (!claimed.ok) return forModel(claimed.code, claimed.message);
          return func(input, config);
        }
      };
      return langchainTool(guarded, rest as any) as unknown as DynamicStructuredTool<any>;
    },

    async resume(snapshot, o = {}) {
      const answers: Record<string, CountersignResume> = {};
      let waiting = false;
      const asks = snapshot.tasks.flatMap((t) => t.interrupts ?? []);
      await Promise.all(asks.map(async (intr) => {
        const ask = (intr.value as CountersignInterrupt | undefined)?.countersign;
        if (!intr.id || !ask?.approvalId) return;
        const d = await cs.waitForDecision(ask.approvalId, ask.callId, { maxWaitMs: o.maxWaitMs, signal: o.signal });
        if (d.kind === "pending") waiting = true;
        else if (d.kind === "approved") answers[intr.id] = { countersign: { approvalId: ask.approvalId, decision: "approved" } };
        else answers[intr.id] = { countersign: { approvalId: ask.approvalId, decision: "refused", code: d.code, message: d.message, userWords: d.userWords } };
      }));
      if (waiting || Object.keys(answers).length === 0) return undefined;
      return new Command({ resume: answers });
    },
  };
}

// Whether the running node was resumed with a value for its next
// interrupt() — read where interrupt() itself reads it.
function resuming(): boolean {
  const sp = (getConfig()?.configurable as Record<string, any> | undefined)?.__pregel_scratchpad;
  if (!sp || !Array.isArray(sp.resume) || typeof sp.interruptCounter !== "number") return false;
  return sp.resume.length > sp.interruptCounter + 1 || sp.nullResume != null;
}
