package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
)

// checkPath is one of the check's paths: the tool called, by whom, and the
// answer expected.
type checkPath struct {
	tool, user, want string
}

// prepareCheckPaths sets the policies and the grant the three check paths
// need: search_messages allowed by policy; send_email allowed for one user
// by an "Always allow" grant; delete_message asking a person.
func (b *benchServer) prepareCheckPaths(ctx context.Context) ([]checkPath, error) {
	if _, err := b.db.SetToolPolicy(ctx, approval.SystemActor, "mail", "search_messages", approval.Policy{Mode: approval.ModeAllow}); err != nil {
		return nil, err
	}
	for _, t := range []string{"send_email", "delete_message"} {
		if _, err := b.db.SetToolPolicy(ctx, approval.SystemActor, "mail", t, approval.Policy{Mode: approval.ModeRequireApproval, StandingApproval: true}); err != nil {
			return nil, err
		}
	}
	id, err := b.openPending(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := b.db.Decide(ctx, id, b.reviewer, approval.AlwaysAllow, ""); err != nil {
		return nil, err
	}
	return []checkPath{
		{tool: "search_messages", user: dev.DemoMember.Subject, want: "allow"},
		{tool: "send_email", user: dev.DemoMember.Subject, want: "allow"},
		{tool: "delete_message", user: dev.DemoMember.Subject, want: "pending"},
	}, nil
}

// checkOnce sends one check of path p (call i) and fails unless the answer
// is the one expected.
func (b *benchServer) checkOnce(ctx context.Context, hc *http.Client, p checkPath, i int) error {
	return b.checkOnceAt(ctx, hc, b.base, p, i)
}

var callSeq atomic.Int64

// checkOnceAt is checkOnce against the instance at base.
func (b *benchServer) checkOnceAt(ctx context.Context, hc *http.Client, base string, p checkPath, _ int) error {
	// Numbered across measurements: a call id sent again while its item is
	// pending would get that item back.
	n := strconv.FormatInt(callSeq.Add(1), 10)
	body, _ := json.Marshal(client.Call{CallID: "tp-" + n, User: p.user, ConversationID: "tp", TurnID: "tp-" + n,
		Connector: "mail", Tool: p.tool, Arguments: `{"n":` + n + `}`})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/tool-calls", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+b.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out struct {
		Decision string `json:"decision"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return fmt.Errorf("status %d: %w", resp.StatusCode, err)
	}
	if out.Decision != p.want {
		return fmt.Errorf("%s: answered %q (status %d), want %q", p.tool, out.Decision, resp.StatusCode, p.want)
	}
	return nil
}

// getReady gets /readyz, which pings the database and then, in the bench
// (no identity provider), answers 503 for the provider: either answer
// after a successful ping is one HTTP request and one round trip.
func getReady(ctx context.Context, hc *http.Client, url string) error {
	status, body, err := get(ctx, hc, url)
	if err == nil && status != http.StatusOK && (status != http.StatusServiceUnavailable || strings.HasPrefix(string(body), "database")) {
		err = fmt.Errorf("status %d: %s", status, body)
	}
	return err
}

func getOK(ctx context.Context, hc *http.Client, url string) error {
	status, _, err := get(ctx, hc, url)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("status %d", status)
	}
	return err
}

// get reads url's answer in full.
func get(ctx context.Context, hc *http.Client, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}
