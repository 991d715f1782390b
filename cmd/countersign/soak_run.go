package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
)

// soakCall is one runtime's call and what became of it.
type soakCall struct {
	callID     string
	approvalID string
	start, end time.Time
	allowed    bool
	answered   bool // allowed or refused with a code; false: never answered
	code       string
}

// Soak runs the soak for d with runtimes concurrent runtimes and a wait cap
// of capWait, and reports what it saw.
func Soak(ctx context.Context, d, capWait time.Duration, runtimes int) (SoakReport, error) {
	s, err := newSoak(ctx, capWait)
	if err != nil {
		return SoakReport{}, err
	}
	defer s.close()
	stopCalls := make(chan struct{})
	var seq atomic.Int64
	var wg sync.WaitGroup
	for r := 0; r < runtimes; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for {
				select {
				case <-stopCalls:
					return
				default:
				}
				s.runtimeCall(ctx, r, int(seq.Add(1)))
			}
		}(r)
	}
	decideCtx, stopDeciding := context.WithCancel(ctx)
	var dwg sync.WaitGroup
	for i := 0; i < 3; i++ {
		dwg.Add(1)
		go func(i int) { defer dwg.Done(); s.decider(decideCtx, i) }(i)
	}
	faultErr := make(chan error, 1)
	go func() { faultErr <- s.injectFaults(ctx, d) }()
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	close(stopCalls)
	wg.Wait()
	stopDeciding()
	dwg.Wait()
	if err := <-faultErr; err != nil {
		return SoakReport{}, fmt.Errorf("soak: fault injection: %w", err)
	}
	// Let the sweeps expire what was left undecided, then look.
	time.Sleep(3 * time.Second)
	return s.report(ctx, d, runtimes)
}

// runtimeCall is one call as a runtime makes it: Gate on one instance; if
// the connection is lost, go on with the same call (joining the item it may
// have opened) or item on the next instance until it is answered.
func (s *soak) runtimeCall(ctx context.Context, r, n int) {
	c := &soakCall{callID: "soak-" + strconv.Itoa(n), start: time.Now()}
	call := client.Call{CallID: c.callID, User: dev.DemoMember.Subject, ConversationID: "soak-" + strconv.Itoa(r),
		TurnID: "turn-" + strconv.Itoa(n), Connector: "mail", Tool: "send_email", Arguments: `{"n":` + strconv.Itoa(n) + `}`}
	giveUp := c.start.Add(s.cap + 90*time.Second)
	for i := r; time.Now().Before(giveUp) && ctx.Err() == nil; i++ {
		base := s.instance(i % 3).base
		cl := client.New(base, s.key)
		cl.PollWait = 10 * time.Second
		var out client.Outcome
		var err error
		if c.approvalID == "" {
			out, err = cl.Gate(ctx, call)
			// A check whose answer was lost may have opened an item that a
			// person has decided since; the retry joins it, as the API asks
			// of a runtime that sends the same call again.
			call.AttachToPending = true
		} else {
			out, err = s.resume(ctx, cl, call, c.approvalID)
		}
		if out.ApprovalID != "" {
			c.approvalID = out.ApprovalID
		}
		if err == nil {
			c.allowed, c.answered, c.code = out.Allowed, true, out.Code
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.end = time.Now()
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

// resume waits on an item already created and claims it when approved, as
// a runtime does after losing its connection mid-wait.
func (s *soak) resume(ctx context.Context, cl *client.Client, call client.Call, id string) (client.Outcome, error) {
	out := client.Outcome{ApprovalID: id}
	for {
		var st struct {
			Status string `json:"status"`
			Code   string `json:"code"`
		}
		if err := cl.Do(ctx, http.MethodGet, "/api/v1/approvals/"+id+"?wait=10s", nil, &st); err != nil {
			return out, err
		}
		switch st.Status {
		case "pending":
			continue
		case "approved":
			err := cl.Do(ctx, http.MethodPost, "/api/v1/approvals/"+id+"/claim",
				map[string]string{"call_id": call.CallID, "arguments_digest": approval.Digest(call.Arguments)}, nil)
			out.Allowed = err == nil
			if err != nil {
				var ae *client.Error
				if !errors.As(err, &ae) || ae.Status >= 500 {
					return out, err
				}
				out.Code = ae.Code
			}
			return out, nil
		default:
			out.Code = st.Code
			if out.Code == "" {
				out.Code = st.Status
			}
			return out, nil
		}
	}
}

// decider i decides the pending items whose id falls to it: most are
// approved, some rejected, and some left to expire.
func (s *soak) decider(ctx context.Context, i int) {
	for ctx.Err() == nil {
		rows, err := s.store.Pool.Query(ctx, `SELECT id::text FROM approvals WHERE status = 'pending' AND expires_at > now()
			AND abs(hashtext(id::text)) % 3 = $1 ORDER BY created_at LIMIT 20`, i)
		var ids []string
		if err == nil {
			for rows.Next() {
				var id string
				if rows.Scan(&id) == nil {
					ids = append(ids, id)
				}
			}
			rows.Close()
		}
		for _, id := range ids {
			if hashString(id)%10 == 3 { // one in ten is left to expire
				continue
			}
			dec := approval.Approve
			if hashString(id)%5 == 0 {
				dec = approval.Reject
			}
			if _, err := s.store.Decide(ctx, id, s.owner, dec, ""); err == nil {
				s.decideMu.Lock()
				s.decided[id] = dec
				s.decideMu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func hashString(s string) uint32 {
	var h uint32 = 2166136261
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}
