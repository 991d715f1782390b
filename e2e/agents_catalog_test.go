package e2e

import (
	"encoding/json"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// uncatalogued are tools the pinned CLIs offer that hook/tools.tsv does not
// describe yet: each asks a person as a tool of unknown behaviour. A tool
// a newer CLI adds fails TestAgentCLIs/ToolCatalog until it is described
// there or named here.
var uncatalogued = map[string][]string{
	// "never call this tool": it keeps ToolSearch's deferred loading on.
	"claude-code": {"DeferredToolPlaceholder"},
}

// catalogued reads hook/tools.tsv: agent connector → tool names.
func catalogued(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("../hook/tools.tsv")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, "\t")
		if strings.HasPrefix(line, "#") || len(f) < 2 {
			continue
		}
		out[f[0]] = append(out[f[0]], f[1])
	}
	return out
}

// offered is the tool names the agent's first model request offers, as its
// hooks name them: Codex's shell tools reach hooks as Bash. Codex's typed
// tools without a name (web_search, tool_search) are left out: they are not
// function calls a hook is asked about by name.
func offered(t *testing.T, m *fakeModel) []string {
	t.Helper()
	reqs := m.requests()
	if len(reqs) == 0 {
		t.Fatal("the CLI sent the model nothing")
	}
	var req struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(reqs[0].Body), &req); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range req.Tools {
		switch tool.Name {
		case "":
		case "exec_command", "shell", "local_shell":
			names = append(names, "Bash")
		default:
			names = append(names, tool.Name)
		}
	}
	sort.Strings(names)
	return names
}

// catalogScenarios: the built-in tool catalog follows the pinned CLIs:
// every tool they offer the model is described in hook/tools.tsv or listed
// as uncatalogued.
func catalogScenarios(t *testing.T, s *agentSetup) {
	known := catalogued(t)
	check := func(t *testing.T, agent string, names []string) {
		t.Logf("%s offers %s", agent, strings.Join(names, ", "))
		for _, name := range names {
			if !slices.Contains(known[agent], name) && !slices.Contains(uncatalogued[agent], name) {
				t.Errorf("%s · %s is neither in hook/tools.tsv nor listed as uncatalogued", agent, name)
			}
		}
		for _, name := range uncatalogued[agent] {
			if slices.Contains(known[agent], name) || !slices.Contains(names, name) {
				t.Errorf("%s · %s is listed as uncatalogued but is catalogued or no longer offered", agent, name)
			}
		}
	}
	t.Run("ClaudeCode", func(t *testing.T) {
		c := s.startClaude(t, s.e.BaseURL)
		c.wait(t)
		check(t, "claude-code", offered(t, c.model))
	})
	t.Run("Codex", func(t *testing.T) {
		c := s.startCodex(t, s.e.BaseURL, "")
		c.wait(t)
		check(t, "codex", offered(t, c.model))
	})
}
