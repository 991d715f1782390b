// @countersign/frameworks: the core client. The adapters are imported from
// their own entry points (./openai-agents, ./ai-sdk, ./langgraph), so that a
// program loads only the framework it uses.
export * from "./client.js";
