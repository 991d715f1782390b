package hook

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

// Target is where a tool call belongs in the catalog, and how to register
// its tool when the server does not know it yet.
type Target struct {
	Connector string
	Tool      string
	// Registration is sent only when the server answers unknown_tool.
	Registration client.ToolRegistration
	// said are the arguments that are the model's words about the call,
	// never run: they become the call's reason (tools.tsv).
	said []string
}

// toolsTSV is the agents' built-in tools: the one place that says what
// each does. See docs/agents.md for the table and the reasons.
//
//go:embed tools.tsv
var toolsTSV string

// Catalog versions: the agents' releases tools.tsv describes. A built-in
// of another name comes from a newer (or unknown) release.
const (
	claudeCodeCatalogVersion = "2.1.328"
	codexCatalogVersion      = "0.169.0"
)

// builtin is what an agent's own tool is known to do.
type builtin struct {
	description   string
	annotations   approval.Annotations
	standing      *bool
	shellArgument string
	said          []string
}

func yes() *bool { t := true; return &t }
func no() *bool  { f := false; return &f }

// behaviours are the annotations of each behaviour tools.tsv names.
var behaviours = map[string]struct {
	a        approval.Annotations
	standing *bool
}{
	// reads only: the file system or the agent's own state.
	"read-only": {approval.Annotations{ReadOnlyHint: yes(), DestructiveHint: no(), OpenWorldHint: no()}, nil},
	// changes the session's own state (schedules, worktrees, messages to
	// its agents): a person approves, standing approval may be given.
	"agent-state": {approval.Annotations{ReadOnlyHint: no(), DestructiveHint: no(), OpenWorldHint: no()}, nil},
	// changes files on the person's machine.
	"edits-files": {approval.Annotations{ReadOnlyHint: no(), DestructiveHint: yes(), OpenWorldHint: no()}, nil},
	// runs (or stops) programs: anything may follow, the network included.
	"runs-commands": {approval.Annotations{ReadOnlyHint: no(), DestructiveHint: yes(), OpenWorldHint: yes()}, nil},
	// reaches the internet: not read-only, because a URL or a query can
	// carry data out, and never approved standing for the same reason.
	"open-world": {approval.Annotations{ReadOnlyHint: no(), DestructiveHint: no(), OpenWorldHint: yes()}, no()},
}

// builtins reads tools.tsv once: agent connector → tool name → builtin.
var builtins = sync.OnceValues(func() (map[string]map[string]builtin, error) {
	return parseTools(toolsTSV)
})

func parseTools(text string) (map[string]map[string]builtin, error) {
	out := map[string]map[string]builtin{}
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r") // a checkout with CRLF line ends
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 6 {
			return nil, fmt.Errorf("tools.tsv line %d: %d fields, want 6", n+1, len(f))
		}
		b, ok := behaviours[f[2]]
		if !ok || f[0] == "" || f[1] == "" {
			return nil, fmt.Errorf("tools.tsv line %d: bad row", n+1)
		}
		if out[f[0]] == nil {
			out[f[0]] = map[string]builtin{}
		}
		if _, dup := out[f[0]][f[1]]; dup {
			return nil, fmt.Errorf("tools.tsv line %d: %s · %s twice", n+1, f[0], f[1])
		}
		var said []string
		if f[4] != "" {
			said = strings.Split(f[4], ",")
		}
		out[f[0]][f[1]] = builtin{description: f[5], annotations: b.a, standing: b.standing, shellArgument: f[3], said: said}
	}
	return out, nil
}

// agent is one coding agent's own connector.
type agent struct {
	connector, displayName, catalogVersion string
}

var (
	claudeCode = agent{"claude-code", "Claude Code", claudeCodeCatalogVersion}
	codex      = agent{"codex", "Codex", codexCatalogVersion}
)

// reserved are the connectors of the agents' own tools. An MCP server of
// such a name is registered as "mcp-" and its name, so that its tools can
// never borrow a built-in's policy (mcp__claude-code__Read is not Read).
var reserved = map[string]bool{claudeCode.connector: true, codex.connector: true}

// ReservedConnector reports whether name is an agent's own connector, which
// only that agent's built-in tools may use.
func ReservedConnector(name string) bool { return reserved[name] }

// MCPConnector is the connector of the MCP server named server.
func MCPConnector(server string) string {
	if reserved[server] {
		return "mcp-" + server
	}
	return server
}

// target maps an agent's tool name to the catalog. MCP tools, named
// mcp__<server>__<tool>, belong to the connector MCPConnector(<server>);
// everything else is the agent's own.
func (a agent) target(name string) (Target, error) {
	if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
		if server, tool, ok := strings.Cut(rest, "__"); ok && server != "" && tool != "" {
			return Target{Connector: MCPConnector(server), Tool: tool, Registration: client.ToolRegistration{
				Name: tool, ConnectorDisplayName: server, ConnectorKind: "connector"}}, nil
		}
	}
	all, err := builtins()
	if err != nil {
		return Target{}, err
	}
	t := Target{Connector: a.connector, Tool: name, Registration: client.ToolRegistration{
		Name: name, ConnectorDisplayName: a.displayName, ConnectorKind: "builtin"}}
	b, ok := all[a.connector][name]
	if !ok {
		// A built-in of a newer release: no annotations at all, which the
		// server shows as unknown behaviour and offers no standing
		// approval for until an administrator classifies it.
		t.Registration.Description = fmt.Sprintf("Unknown behaviour: a %s built-in tool first seen by countersign hook, "+
			"not in its catalog of %s %s (a newer release?). An administrator should classify it.",
			a.displayName, a.displayName, a.catalogVersion)
		return t, nil
	}
	t.Registration.Description = b.description
	t.Registration.Annotations = b.annotations
	t.Registration.StandingApproval = b.standing
	t.Registration.ShellArgument = b.shellArgument
	t.said = b.said
	return t, nil
}

// CodexTarget is where Codex's built-in tool name belongs in the catalog
// (for countersign codex-app-server, which asks about Codex's own tools).
func CodexTarget(name string) (Target, error) { return codex.target(name) }
