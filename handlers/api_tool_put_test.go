package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

func (l *loop) putTool(t *testing.T, connector, tool string, body any) (int, map[string]any) {
	t.Helper()
	return l.API(l.Key, http.MethodPut, "/api/v1/connectors/"+connector+"/tools/"+tool, body)
}

func (l *loop) toolPolicy(t *testing.T, connector, tool string) (mode string, standing bool, retired bool) {
	t.Helper()
	if err := l.DB.Pool.QueryRow(context.Background(), `SELECT mode, standing_approval, retired_at IS NOT NULL FROM tools WHERE connector = $1 AND name = $2`,
		connector, tool).Scan(&mode, &standing, &retired); err != nil {
		t.Fatal(err)
	}
	return mode, standing, retired
}

// TestRegisterTool: one tool at a time, under the full sync's rules.
func TestRegisterTool(t *testing.T) {
	l := newLoop(t)
	ctx := context.Background()
	yes, no := true, false

	t.Run("NewToolsGetDefaults", func(t *testing.T) {
		out, err := l.Client.RegisterTool(ctx, "mail", client.ToolRegistration{Name: "forward_email",
			Annotations: approval.Annotations{DestructiveHint: &no}, StandingApproval: &no})
		if err != nil || !out.Created || out.ConnectorCreated || out.Mode != "require_approval" {
			t.Fatalf("%+v %v", out, err)
		}
		if mode, standing, _ := l.toolPolicy(t, "mail", "forward_email"); mode != "require_approval" || standing {
			t.Fatalf("forward_email: %s standing=%v", mode, standing)
		}
		if status, out := l.putTool(t, "mail", "list_folders", map[string]any{"annotations": map[string]any{"readOnlyHint": true}}); status != http.StatusOK || out["mode"] != "allow" || out["created"] != true {
			t.Fatal(status, out)
		}
		if out := l.check(t, l.call("mail", "list_folders", `{}`)); out["decision"] != "allow" {
			t.Fatal(out)
		}
		// No annotations at all: unknown behaviour — ask, with no standing
		// approval until an admin classifies the tool.
		if status, out := l.putTool(t, "mail", "mystery", map[string]any{}); status != http.StatusOK || out["mode"] != "require_approval" {
			t.Fatal(status, out)
		}
		if _, standing, _ := l.toolPolicy(t, "mail", "mystery"); standing {
			t.Fatal("a tool of unknown behaviour offers standing approval")
		}
	})

	t.Run("OtherToolsUntouched", func(t *testing.T) {
		var n int
		if err := l.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM tools WHERE connector = 'mail' AND retired_at IS NOT NULL`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d mail tools retired (%v)", n, err)
		}
		if out := l.check(t, l.call("mail", "search_messages", `{"query":"x"}`)); out["decision"] != "allow" {
			t.Fatal(out)
		}
	})

	t.Run("LooserAnnotationsNeverLoosen", func(t *testing.T) {
		if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "system", "run_command", approval.Policy{Mode: approval.ModeBlock}); err != nil {
			t.Fatal(err)
		}
		loose := map[string]any{"annotations": map[string]any{"readOnlyHint": true, "destructiveHint": false}, "standing_approval": true}
		for _, p := range [][2]string{{"mail", "send_email"}, {"system", "run_command"}, {"mail", "forward_email"}} {
			before, standingBefore, _ := l.toolPolicy(t, p[0], p[1])
			if status, out := l.putTool(t, p[0], p[1], loose); status != http.StatusOK || out["created"] != false {
				t.Fatal(p, status, out)
			}
			if after, standing, _ := l.toolPolicy(t, p[0], p[1]); after != before || standing != standingBefore {
				t.Fatalf("%v loosened: %s→%s standing %v→%v", p, before, after, standingBefore, standing)
			}
		}
		if out := l.check(t, l.call("system", "run_command", `{"command":"ls"}`)); out["code"] != "blocked_by_policy" {
			t.Fatal(out)
		}
		if out := l.check(t, l.call("mail", "send_email", `{"to":"x@y.z"}`)); out["decision"] != "pending" {
			t.Fatal(out)
		}
	})

	t.Run("RetiredComesBackWithItsPolicy", func(t *testing.T) {
		if _, err := l.Client.RegisterTool(ctx, "notes", client.ToolRegistration{Name: "erase", ConnectorDisplayName: "Notes", ConnectorKind: "builtin"}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.DB.SetToolPolicy(ctx, approval.SystemActor, "notes", "erase", approval.Policy{Mode: approval.ModeBlock}); err != nil {
			t.Fatal(err)
		}
		if err := l.Client.SyncConnector(ctx, "notes", client.Connector{DisplayName: "Notes", Kind: "builtin"}); err != nil {
			t.Fatal(err)
		}
		if _, _, retired := l.toolPolicy(t, "notes", "erase"); !retired {
			t.Fatal("setup: not retired")
		}
		out, err := l.Client.RegisterTool(ctx, "notes", client.ToolRegistration{Name: "erase", Annotations: approval.Annotations{ReadOnlyHint: &yes}})
		if err != nil || !out.Restored || out.Created || out.Mode != "block" {
			t.Fatalf("%+v %v", out, err)
		}
	})

	t.Run("NewConnector", func(t *testing.T) {
		out, err := l.Client.RegisterTool(ctx, "claude-code", client.ToolRegistration{Name: "Bash", ConnectorDisplayName: "Claude Code", ConnectorKind: "builtin"})
		if err != nil || !out.ConnectorCreated || !out.Created {
			t.Fatalf("%+v %v", out, err)
		}
		// The connector keeps its name and kind when a later tool says otherwise.
		if _, err := l.Client.RegisterTool(ctx, "claude-code", client.ToolRegistration{Name: "Read", ConnectorDisplayName: "Other", ConnectorKind: "connector"}); err != nil {
			t.Fatal(err)
		}
		var display, kind string
		if err := l.DB.Pool.QueryRow(ctx, `SELECT display_name, kind FROM connectors WHERE name = 'claude-code'`).Scan(&display, &kind); err != nil || display != "Claude Code" || kind != "builtin" {
			t.Fatalf("%s %s %v", display, kind, err)
		}
		if status, out := l.putTool(t, "fresh", "t1", map[string]any{}); status != http.StatusOK || out["connector_created"] != true {
			t.Fatal(status, out)
		}
		if err := l.DB.Pool.QueryRow(ctx, `SELECT display_name, kind FROM connectors WHERE name = 'fresh'`).Scan(&display, &kind); err != nil || display != "fresh" || kind != "connector" {
			t.Fatalf("defaults: %s %s %v", display, kind, err)
		}
	})

	t.Run("ErrDeletedConnector", func(t *testing.T) {
		if status, _ := l.API(l.Key, http.MethodDelete, "/api/v1/connectors/fresh", nil); status != http.StatusNoContent {
			t.Fatal(status)
		}
		status, out := l.putTool(t, "fresh", "t2", map[string]any{})
		if status != http.StatusConflict || errCode(out) != "connector_deleted" {
			t.Fatal(status, out)
		}
		var deleted bool
		if err := l.DB.Pool.QueryRow(ctx, `SELECT deleted_at IS NOT NULL FROM connectors WHERE name = 'fresh'`).Scan(&deleted); err != nil || !deleted {
			t.Fatal("a single tool brought a deleted connector back", err)
		}
	})

	t.Run("ErrBadInput", func(t *testing.T) {
		cases := []struct {
			connector, tool string
			body            any
			field           string
		}{
			{"-mail", "t", map[string]any{}, "connector"},
			{"mail", "bad%20name", map[string]any{}, "tool"},
			{"mail", "t", map[string]any{"display_name": "a\u0007b"}, "display_name"},
			{"mail", "t", map[string]any{"description": strings.Repeat("x", 2001)}, "description"},
			{"mail", "t", map[string]any{"connector_display_name": "a\u0000b"}, "connector_display_name"},
			{"mail", "t", map[string]any{"connector_kind": "plugin"}, "connector_kind"},
			{"mail", "t", map[string]any{"annotations": map[string]any{"readOnlyHint": "yes"}}, "annotations.readOnlyHint"},
			{"mail", "t", map[string]any{"standing_approval": "no"}, "standing_approval"},
			{"mail", "t", map[string]any{"name": "t"}, "name"},
			{"mail", "t", `{"display_name":"a","Display_Name":"b"}`, "Display_Name"},
		}
		for _, c := range cases {
			status, out := l.putTool(t, c.connector, c.tool, c.body)
			msg, _ := out["error"].(map[string]any)["message"].(string)
			if status != http.StatusBadRequest || !strings.Contains(msg, c.field) {
				t.Errorf("%s/%s %v: %d %v", c.connector, c.tool, c.body, status, out)
			}
		}
		var n int
		if err := l.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM tools WHERE name = 't'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("a refused registration stored a tool: %d %v", n, err)
		}
	})

	t.Run("Audited", func(t *testing.T) {
		var n int
		if err := l.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'tool registered' AND connector = 'mail' AND tool = 'forward_email'`).Scan(&n); err != nil || n != 2 {
			t.Fatalf("forward_email: %d audit lines (new, then annotations changed) %v", n, err)
		}
	})
}
