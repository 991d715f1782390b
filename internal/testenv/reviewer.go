package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// PendingCall is what a reviewer sees of a pending item.
type PendingCall struct {
	ID, CallID, Connector, Tool string
	Args                        map[string]string // the preview's lines, key → shown value
}

// Rule decides a pending item: "approve", "approve_conversation",
// "always" or "reject" (with a reason), or "" to leave it.
type Rule func(PendingCall) (decision, reason string)

// Reviewer is a signed-in person who decides pending items in the browser
// (the real decision form, with its CSRF token) by a rule, until stopped.
// It runs off the test goroutine, so it never calls T.Fatal: Stop returns
// the first error it met.
type Reviewer struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	err    error
}

// StartReviewer signs the demo user with key ("member" or "admin") in and
// decides that user's pending items by rule.
func (e *Env) StartReviewer(key string, rule Rule) *Reviewer {
	e.T.Helper()
	b := e.NewBrowser()
	b.SignIn(key)
	csrf := b.CSRF()
	subject := "demo-" + key
	ctx, cancel := context.WithCancel(context.Background())
	r := &Reviewer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		decided := map[string]bool{}
		for ctx.Err() == nil {
			if err := r.round(ctx, e, b, csrf, subject, rule, decided); err != nil && ctx.Err() == nil {
				r.mu.Lock()
				r.err = errors.Join(r.err, err)
				r.mu.Unlock()
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return r
}

// Stop ends the reviewer and returns the first error it met, if any.
func (r *Reviewer) Stop() error {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *Reviewer) round(ctx context.Context, e *Env, b *Browser, csrf, subject string, rule Rule, decided map[string]bool) error {
	rows, err := e.DB.Pool.Query(ctx, `
		SELECT a.id::text, a.call_id, a.connector, a.tool, l->>'key', l->>'value'
		FROM approvals a LEFT JOIN LATERAL jsonb_array_elements(COALESCE(a.preview->'lines', '[]'::jsonb)) l ON true
		WHERE a.owner_subject = $1 AND a.status = 'pending' ORDER BY a.created_at`, subject)
	if err != nil {
		return err
	}
	var order []string
	calls := map[string]*PendingCall{}
	for rows.Next() {
		var p PendingCall
		var k, v *string
		if err := rows.Scan(&p.ID, &p.CallID, &p.Connector, &p.Tool, &k, &v); err != nil {
			rows.Close()
			return err
		}
		if calls[p.ID] == nil {
			p.Args = map[string]string{}
			calls[p.ID] = &p
			order = append(order, p.ID)
		}
		if k != nil && v != nil {
			calls[p.ID].Args[*k] = *v
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range order {
		if decided[id] {
			continue
		}
		decision, reason := rule(*calls[id])
		if decision == "" {
			continue
		}
		decided[id] = true
		form := url.Values{"decision": {decision}, "reason": {reason}, "csrf_token": {csrf}}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.BaseURL+"/approvals/"+id+"/decision", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", e.BaseURL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err := b.Client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			return fmt.Errorf("reviewer: deciding %s (%s) answered %d", id, calls[id].CallID, resp.StatusCode)
		}
	}
	return nil
}
