package hook

import (
	"strings"
	"testing"
)

// The catalog names every built-in tool of the agent releases it covers,
// with the behaviour docs/agents.md gives it.
func TestBuiltinCatalog(t *testing.T) {
	all, err := builtins()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"claude-code": {
			// Claude Code 2.1.328.
			"Agent": "read-only", "Bash": "runs-commands", "Edit": "edits-files", "ListAgents": "read-only", "Read": "read-only",
			"ReportFindings": "read-only", "ScheduleWakeup": "agent-state", "Skill": "read-only", "ToolSearch": "read-only",
			"Workflow": "agent-state", "Write": "edits-files",
			// behind ToolSearch
			"CronCreate": "agent-state", "CronDelete": "agent-state", "CronList": "read-only", "EnterWorktree": "agent-state",
			"ExitWorktree": "edits-files", "Monitor": "read-only", "NotebookEdit": "edits-files", "SendMessage": "agent-state",
			"TaskStop": "runs-commands", "WebFetch": "open-world", "WebSearch": "open-world",
			// earlier names
			"Task": "read-only", "Glob": "read-only", "Grep": "read-only", "LS": "read-only", "MultiEdit": "edits-files",
			"TodoWrite": "read-only", "BashOutput": "read-only", "KillShell": "runs-commands", "NotebookRead": "read-only",
		},
		"codex": {"Bash": "runs-commands", "apply_patch": "edits-files", "write_stdin": "runs-commands",
			"update_plan": "read-only", "view_image": "read-only",
			"get_goal": "read-only", "create_goal": "agent-state", "update_goal": "agent-state", "request_user_input": "agent-state",
			// app-server approval requests (countersign codex-app-server)
			"network_access": "open-world", "request_permissions": "runs-commands"},
	}
	for agent, tools := range want {
		if len(all[agent]) != len(tools) {
			t.Errorf("%s: %d tools in the catalog, want %d", agent, len(all[agent]), len(tools))
		}
		for name, behaviour := range tools {
			b, ok := all[agent][name]
			if !ok {
				t.Errorf("%s · %s missing", agent, name)
				continue
			}
			if b.annotations != behaviours[behaviour].a || b.standing != behaviours[behaviour].standing || b.description == "" {
				t.Errorf("%s · %s: %+v, want %s", agent, name, b, behaviour)
			}
		}
	}
	// Shell commands: only Bash holds one; a Codex patch is not a command.
	for agent, tools := range all {
		for name, b := range tools {
			if (name == "Bash") != (b.shellArgument == "command") || (name == "Bash") != (strings.Join(b.said, ",") == "description") {
				t.Errorf("%s · %s: shell_argument %q, said %q", agent, name, b.shellArgument, b.said)
			}
		}
	}
	if got := behaviours["open-world"].standing; got == nil || *got {
		t.Error("open-world tools must offer no standing approval")
	}
	if b := behaviours["read-only"].a; !b.ReadOnly() || b.Unknown() {
		t.Error("read-only")
	}
}

func TestBuiltinCatalogRefusesBadRows(t *testing.T) {
	for name, text := range map[string]string{
		"Fields":    "claude-code\tRead\tread-only\t\t\n",
		"Behaviour": "claude-code\tRead\tharmless\t\t\tReads.\n",
		"Twice":     "claude-code\tRead\tread-only\t\t\tReads.\nclaude-code\tRead\tread-only\t\t\tReads.\n",
		"NoName":    "claude-code\t\tread-only\t\t\tReads.\n",
	} {
		if _, err := parseTools(text); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A built-in no catalog row names is registered with no hints at all.
func TestUnknownBuiltin(t *testing.T) {
	tg, err := claudeCode.target("FutureTool")
	if err != nil {
		t.Fatal(err)
	}
	if !tg.Registration.Annotations.Unknown() || tg.Registration.StandingApproval != nil || tg.Registration.ConnectorKind != "builtin" ||
		!strings.Contains(tg.Registration.Description, "Claude Code 2.1.328") {
		t.Fatalf("%+v", tg)
	}
}
