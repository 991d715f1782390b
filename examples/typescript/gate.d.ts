// Types for gate.mjs (Node 20+, no build step).

/** One tool call the model wants to make. */
export interface Call {
  call_id: string;
  /** The OIDC subject of the conversation's owner (in dev: "demo-member"). */
  user: string;
  conversation_id: string;
  turn_id: string;
  connector: string;
  tool: string;
  /** The JSON text the model produced, unchanged. */
  arguments: string;
  /** What the agent is trying to do; shown to the person. */
  reason?: string;
  /** The run_id of a started playbook run. */
  playbook_run_id?: string;
}

/** What the runtime acts on: run the tool only when allowed. */
export interface Outcome {
  allowed: boolean;
  /** When not allowed: give code and message to the model. */
  code?: string;
  message?: string;
  /** policy, conversation_grant, always_allow, preapproval or person. */
  via?: string;
  /** once, conversation or always, when a person approved. */
  scope?: string;
  /** When a person was asked. */
  approvalId?: string;
  /** For the logs, on policy_unavailable. */
  error?: string;
}

/** One tool of a connector's catalog. */
export interface ConnectorTool {
  name: string;
  display_name?: string;
  description?: string;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  standing_approval?: boolean;
}

export declare const POLICY_UNAVAILABLE: "policy_unavailable";

export declare class Countersign {
  /** Defaults: COUNTERSIGN_URL, COUNTERSIGN_API_KEY, 30 s long-polls. */
  constructor(opts?: { baseUrl?: string; apiKey?: string; pollWait?: number });
  request(method: string, path: string, body?: unknown): Promise<any>;
  syncConnector(name: string, displayName: string, tools: ConnectorTool[], kind?: "connector" | "builtin"): Promise<{ connector: string; tools: number }>;
  registerPlaybook(id: string, owner: string, definition: { name: string; instructions?: string; settings?: object;
    steps: { id: string; title?: string; instructions?: string; work_type: { id: string; version: string };
      tools?: { connector: string; tool: string }[] }[] }): Promise<{ id: string; fingerprint: string; enabled: boolean }>;
  /** Never throws; every failure is { allowed: false, code: "policy_unavailable" }. */
  gate(call: Call): Promise<Outcome>;
}

/** "sha256:" + hex SHA-256 of the RFC 8785 canonical arguments (of the text as sent when it is not a valid arguments object). */
export declare function argumentsDigest(text: string): string;
