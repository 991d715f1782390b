package main

import (
	"os"
	"path/filepath"
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
		"MaxFrameTooSmall":    {"mcp", "--connector", "c", "--api-key", "k", "--user", "u", "--max-frame", "100", "--", "server"},
		"MaxFrameNotASize":    {"mcp", "--connector", "c", "--api-key", "k", "--user", "u", "--max-frame", "lots", "--", "server"},
	} {
		if code, _, _ := runCmd(t, env, args...); code != 2 {
			t.Errorf("%s: exit %d, want 2", name, code)
		}
	}
}

func TestMCPMaxFrame(t *testing.T) {
	for in, want := range map[string]int{"1024": 1024, "64KiB": 64 << 10, "256MiB": 256 << 20, "2 GiB": 2 << 30} {
		var f frameSize
		if err := f.Set(in); err != nil || int(f) != want {
			t.Errorf("%q: %d %v, want %d", in, f, err, want)
		}
	}
	for _, in := range []string{"", "1023", "0KiB", "-1MiB", "1.5MiB", "2TiB", "2048GiB"} {
		var f frameSize
		if err := f.Set(in); err == nil {
			t.Errorf("%q: accepted as %d", in, f)
		}
	}
}

// An agent's own connector name is refused: a full sync would retire its
// built-in tools and put the server's under their policies.
func TestMCPAgentConnectorRefused(t *testing.T) {
	for _, name := range []string{"claude-code", "codex"} {
		code, _, errb := runCmd(t, map[string]string{}, "mcp", "--connector", name, "--api-key", "k", "--user", "u", "--", "server")
		if code == 0 || !strings.Contains(errb, "belongs to the agent's own tools") {
			t.Errorf("%s: exit %d %q", name, code, errb)
		}
	}
}

func TestMCPWrapperLine(t *testing.T) {
	got := mcpWrapperLine("http://localhost:8080", "/data/dev-api-key")
	want := "countersign mcp --url http://localhost:8080 --api-key-file /data/dev-api-key --user demo-member --connector filesystem -- "
	if !strings.HasPrefix(got, want) {
		t.Fatalf("%q", got)
	}
}

// The gateway's help and its key-file errors never print the key.
func TestMCPKeyNotShown(t *testing.T) {
	const secret = "cs_mcpsecret_71c3e9a5b0d2"
	t.Setenv("COUNTERSIGN_API_KEY", secret)
	t.Setenv("COUNTERSIGN_USER", "")
	if _, out, errb := runCmd(t, map[string]string{}, "mcp", "--help"); strings.Contains(out+errb, secret) {
		t.Fatalf("help prints the key: %q", errb)
	}
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errb := runCmd(t, map[string]string{}, "mcp", "--connector", "c", "--user", "u", "--api-key-file", path, "--", "server")
	if code == 0 || !strings.Contains(errb, "chmod 600") || strings.Contains(out+errb, secret) {
		t.Fatalf("readable key file: exit %d %q %q", code, out, errb)
	}
}
