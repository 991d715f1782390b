package hook

import (
	"strings"

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
}

// builtin is what an agent's own tool is honestly known to do.
type builtin struct {
	description string
	annotations approval.Annotations
	standing    *bool
}

func yes() *bool { t := true; return &t }
func no() *bool  { f := false; return &f }

var (
	// reads only: the file system or the agent's own state.
	readOnly = approval.Annotations{ReadOnlyHint: yes(), DestructiveHint: no(), OpenWorldHint: no()}
	// changes files or runs commands on the person's machine.
	destructive = approval.Annotations{ReadOnlyHint: no(), DestructiveHint: yes(), OpenWorldHint: yes()}
	// reaches the internet: not read-only, because a URL or a query can
	// carry data out, and never approved standing for the same reason.
	openWorld = approval.Annotations{ReadOnlyHint: no(), DestructiveHint: no(), OpenWorldHint: yes()}
)

// claudeCodeTools are Claude Code's built-in tools. A built-in not listed
// here is registered with unknown annotations, which require approval.
var claudeCodeTools = map[string]builtin{
	"Read":         {"Reads a file.", readOnly, nil},
	"Glob":         {"Finds files by name pattern.", readOnly, nil},
	"Grep":         {"Searches file contents.", readOnly, nil},
	"LS":           {"Lists a folder.", readOnly, nil},
	"NotebookRead": {"Reads a Jupyter notebook.", readOnly, nil},
	"BashOutput":   {"Reads the output of a background shell.", readOnly, nil},
	// TodoWrite changes only the agent's own to-do list.
	"TodoWrite": {"Updates the agent's to-do list.", readOnly, nil},
	// Task starts a subagent; each of the subagent's tool calls comes
	// through this hook on its own.
	"Task":         {"Starts a subagent.", readOnly, nil},
	"Bash":         {"Runs a shell command.", destructive, nil},
	"Write":        {"Writes a file.", destructive, nil},
	"Edit":         {"Edits a file.", destructive, nil},
	"MultiEdit":    {"Makes several edits to a file.", destructive, nil},
	"NotebookEdit": {"Edits a Jupyter notebook.", destructive, nil},
	"KillShell":    {"Stops a background shell.", destructive, nil},
	"WebFetch":     {"Fetches a URL.", openWorld, no()},
	"WebSearch":    {"Searches the web.", openWorld, no()},
}

// codexTools are the tool names Codex sends to its hooks.
var codexTools = map[string]builtin{
	"Bash":        {"Runs a shell command.", destructive, nil},
	"apply_patch": {"Changes files with a patch.", destructive, nil},
}

// agent is one coding agent's own connector.
type agent struct {
	connector, displayName string
	tools                  map[string]builtin
}

var (
	claudeCode = agent{"claude-code", "Claude Code", claudeCodeTools}
	codex      = agent{"codex", "Codex", codexTools}
)

// target maps an agent's tool name to the catalog. MCP tools, named
// mcp__<server>__<tool>, belong to the connector <server>; everything else
// is the agent's own.
func (a agent) target(name string) Target {
	if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
		if server, tool, ok := strings.Cut(rest, "__"); ok && server != "" && tool != "" {
			return Target{Connector: server, Tool: tool, Registration: client.ToolRegistration{
				Name: tool, ConnectorDisplayName: server, ConnectorKind: "connector"}}
		}
	}
	t := Target{Connector: a.connector, Tool: name, Registration: client.ToolRegistration{
		Name: name, ConnectorDisplayName: a.displayName, ConnectorKind: "builtin"}}
	if b, ok := a.tools[name]; ok {
		t.Registration.Description = b.description
		t.Registration.Annotations = b.annotations
		t.Registration.StandingApproval = b.standing
		t.Registration.ShellArgument = map[string]string{"Bash": "command"}[name] // the shell tools' command line
	}
	return t
}
