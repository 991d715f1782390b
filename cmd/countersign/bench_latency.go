package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

// latency runs iterations of: a runtime calls Gate, a person approves, the
// runtime gets its answer. With tune == nil the runtime is the polling
// baseline. Up to parallel iterations run at once.
func (b *benchServer) latency(ctx context.Context, iterations, parallel int, tune func(*client.Client)) ([]time.Duration, error) {
	var mu sync.Mutex
	var out []time.Duration
	var firstErr error
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := 0; i < iterations; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			d, err := b.once(ctx, tune)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			if err == nil {
				out = append(out, d)
			}
		}()
	}
	wg.Wait()
	return out, firstErr
}

func (b *benchServer) once(ctx context.Context, tune func(*client.Client)) (time.Duration, error) {
	call := b.nextCall()
	c := client.New(b.base, b.key)
	type result struct {
		at  time.Time
		ok  bool
		err error
	}
	res := make(chan result, 1)
	if tune != nil {
		tune(c)
		go func() {
			out, err := c.Gate(ctx, call)
			res <- result{time.Now(), out.Allowed, err}
		}()
	} else {
		go func() {
			ok, err := pollingGate(ctx, b.base, b.key, call)
			res <- result{time.Now(), ok, err}
		}()
	}
	id, err := b.waitPending(ctx, call.CallID)
	if err != nil {
		return 0, err
	}
	// Let the runtime settle into its wait before deciding.
	time.Sleep(time.Duration(50+time.Now().UnixNano()%200) * time.Millisecond)
	start := time.Now()
	if _, err := b.db.Decide(ctx, id, b.reviewer, approval.Approve, ""); err != nil {
		return 0, err
	}
	r := <-res
	if r.err != nil || !r.ok {
		return 0, fmt.Errorf("gate did not allow: %v", r.err)
	}
	return r.at.Sub(start), nil
}

func (b *benchServer) waitPending(ctx context.Context, callID string) (string, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var id string
		err := b.db.Pool.QueryRow(ctx, `SELECT id::text FROM approvals WHERE call_id = $1`, callID).Scan(&id)
		if err == nil {
			return id, nil
		}
		if time.Now().After(deadline) {
			return "", errors.New("no pending item appeared")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// pollingGate is the baseline runtime: check, then read the item every
// 500 ms until it is decided, then claim.
func pollingGate(ctx context.Context, base, key string, call client.Call) (bool, error) {
	var first struct {
		Approval struct {
			ID string `json:"id"`
		} `json:"approval"`
	}
	if err := doJSON(ctx, base, key, http.MethodPost, "/api/v1/tool-calls", call, &first); err != nil {
		return false, err
	}
	for {
		var st struct {
			Status string `json:"status"`
		}
		if err := doJSON(ctx, base, key, http.MethodGet, "/api/v1/approvals/"+first.Approval.ID, nil, &st); err != nil {
			return false, err
		}
		if st.Status != "pending" {
			err := doJSON(ctx, base, key, http.MethodPost, "/api/v1/approvals/"+first.Approval.ID+"/claim",
				map[string]string{"call_id": call.CallID, "arguments_digest": approval.Digest(call.Arguments)}, nil)
			return err == nil && st.Status == "approved", err
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func pctD(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

func pct(ds []time.Duration, p int) string {
	return pctD(ds, p).Round(10 * time.Microsecond).String()
}
