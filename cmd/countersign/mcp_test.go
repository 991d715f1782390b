package main

import (
	"strings"
	"testing"
)

func TestMCPFlags(t *testing.T) {
	env := map[string]string{}
	t.Setenv("COUNTERSIGN_API_KEY", "")
	t.Setenv("COUNTERSIGN_USER", "")
	if code, _, errb := runCmd(t, env, "mcp", "--help"); code != 0 || !strings.Contains(errb, "--connector") {
		t.Fatalf("help: exit %d %q", code, errb)
	}
	for name, args := range map[string][]string{
		"NoConnector":         {"mcp", "--api-key", "k", "--user", "u", "--", "server"},
		"NoKey":               {"mcp", "--connector", "c", "--user", "u", "--", "server"},
		"NoUser":              {"mcp", "--connector", "c", "--api-key", "k", "--", "server"},
		"NoUpstream":          {"mcp", "--connector", "c", "--api-key", "k", "--user", "u"},
		"CommandAndURL":       {"mcp", "--connector", "c", "--api-key", "k", "--user", "u", "--upstream", "http://x", "--", "server"},
		"BadHeader":           {"mcp", "--connector", "c", "--api-key", "k", "--user", "u", "--upstream", "http://x", "--header", "nocolon"},
		"NonPositiveHoldTime": {"mcp", "--connector", "c", "--api-key", "k", "--user", "u", "--hold", "0s", "--", "server"},
	} {
		if code, _, _ := runCmd(t, env, args...); code != 2 {
			t.Errorf("%s: exit %d, want 2", name, code)
		}
	}
}

func TestMCPWrapperLine(t *testing.T) {
	got := mcpWrapperLine("http://localhost:8080", "cs_key")
	want := "countersign mcp --url http://localhost:8080 --api-key cs_key --user demo-member --connector filesystem -- "
	if !strings.HasPrefix(got, want) {
		t.Fatalf("%q", got)
	}
}
