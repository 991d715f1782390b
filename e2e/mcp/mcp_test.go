// Package mcpe2e drives `countersign mcp` with real third-party MCP
// software from npm: the reference filesystem server as the upstream and a
// client on the official TypeScript SDK (client.mjs). Install them with
// `npm ci` in this directory; without them the test is skipped, unless
// COUNTERSIGN_E2E=1, where it fails.
package mcpe2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/dev"
	"github.com/countersign/countersign/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// step is one line client.mjs prints.
type step struct {
	Step     string          `json:"step"`
	IsError  bool            `json:"isError"`
	Text     string          `json:"text"`
	Code     *string         `json:"code"`
	Progress int             `json:"progress"`
	Message  string          `json:"message"`
	Tools    []string        `json:"tools"`
	Write    json.RawMessage `json:"write_file"`
}

func requireTools(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = exec.LookPath("npm")
	}
	if err == nil {
		_, err = os.Stat("node_modules/@modelcontextprotocol/server-filesystem/package.json")
	}
	if err == nil {
		_, err = os.Stat("node_modules/@modelcontextprotocol/sdk/package.json")
	}
	if err != nil {
		if os.Getenv("COUNTERSIGN_E2E") == "1" {
			t.Fatalf("the MCP end-to-end needs node, npm and `npm ci` in e2e/mcp: %v", err)
		}
		t.Skipf("node, npm or e2e/mcp/node_modules missing (%v); run `npm ci` in e2e/mcp", err)
	}
	return node
}

func TestFilesystemServerThroughGateway(t *testing.T) {
	node := requireTools(t)
	e := testenv.NewEnv(t)
	member := e.NewBrowser()
	member.SignIn("member")

	bin := filepath.Join(t.TempDir(), "countersign")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/countersign").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the filesystem\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", bin, dir)
	cmd.Env = append(os.Environ(), "COUNTERSIGN_URL="+e.BaseURL, "COUNTERSIGN_API_KEY="+e.APIKey(),
		"COUNTERSIGN_USER="+dev.DemoMember.Subject)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	steps := map[string]step{}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		t.Log(sc.Text())
		var s step
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("client printed %q: %v", sc.Text(), err)
		}
		steps[s.Step] = s
		// The gateway reports progress once the item is pending: the
		// person decides now, in the browser.
		switch s.Step {
		case "write-approved:progress":
			if _, err := os.Stat(filepath.Join(dir, "approved.txt")); err == nil {
				t.Fatal("the file was written before approval")
			}
			decide(t, member, pending(t, e), url.Values{"decision": {"approve"}})
		case "write-rejected:progress":
			decide(t, member, pending(t, e), url.Values{"decision": {"reject"}, "reason": {"Not in this folder"}})
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("client: %v\n%s", err, stderr.String())
	}
	t.Logf("gateway and client stderr:\n%s", stderr.String())

	if l := steps["list"]; !strings.Contains(strings.Join(l.Tools, ","), "read_text_file") || !strings.Contains(string(l.Write), `"destructiveHint":true`) {
		t.Fatalf("list: %+v", l)
	}
	if r := steps["read"]; r.IsError || r.Text != "hello from the filesystem\n" {
		t.Fatalf("read: %+v", r)
	}
	if n := count(t, e, `SELECT count(*) FROM approvals WHERE tool = 'read_text_file'`); n != 0 {
		t.Fatalf("the read asked a person (%d items)", n)
	}
	if w := steps["write-approved"]; w.IsError || !strings.Contains(w.Text, "Successfully wrote") || w.Progress == 0 {
		t.Fatalf("approved write: %+v", w)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "approved.txt")); err != nil || string(b) != "written after approval\n" {
		t.Fatalf("approved.txt: %q %v", b, err)
	}
	if w := steps["write-rejected"]; !w.IsError || w.Code == nil || *w.Code != "approval_denied" || !strings.Contains(w.Text, "Not in this folder") {
		t.Fatalf("rejected write: %+v", w)
	}
	if _, err := os.Stat(filepath.Join(dir, "rejected.txt")); err == nil {
		t.Fatal("the rejected write happened")
	}
	if n := count(t, e, `SELECT count(*) FROM approvals WHERE tool = 'write_file' AND status = 'consumed'`); n != 1 {
		t.Fatalf("%d consumed write items", n)
	}
}

func pending(t *testing.T, e *testenv.Env) string {
	t.Helper()
	var id string
	err := e.DB.Pool.QueryRow(context.Background(),
		`SELECT id::text FROM approvals WHERE tool = 'write_file' AND status = 'pending'`).Scan(&id)
	if err != nil {
		t.Fatalf("no pending write_file item: %v", err)
	}
	return id
}

func decide(t *testing.T, b *testenv.Browser, id string, form url.Values) {
	t.Helper()
	if resp, body := b.PostForm("/approvals/"+id+"/decision", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("decision: %d %s", resp.StatusCode, body)
	}
}

func count(t *testing.T, e *testenv.Env, q string) int {
	t.Helper()
	var n int
	if err := e.DB.Pool.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
