package client

import "strings"

// ChildEnv is env without the COUNTERSIGN_* variables, for a program a
// runtime-side guard starts (an MCP server behind the gateway, Codex's
// app-server behind its proxy): such a program runs what the model asks,
// and the key — or its file's path — must not be in its environment.
func ChildEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "COUNTERSIGN_") {
			out = append(out, kv)
		}
	}
	return out
}
