// Package hook answers a coding agent's pre-tool-use hook — Claude Code's
// PreToolUse, Codex's PreToolUse (or its PermissionRequest) — by asking
// Countersign, with the same check, wait and claim as client.Gate.
//
// The hook is one process per tool call. It exits 0 only with a decision
// the agent understands (for Codex's PreToolUse an allow is a quiet exit
// 0); every failure exits 2 with a one-line reason on stderr, which both
// agents treat as "do not run".
package hook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

// DefaultWait is how long the hook waits for a person. Claude Code's
// command hooks were cut off after 60 s by default (600 s in current
// releases); an agent that cuts a hook off lets the call continue to its
// own prompt, so the hook answers well before the shorter of the two.
const DefaultWait = 50 * time.Second

// Exit codes.
const (
	ExitDecided = 0 // a decision is on stdout
	ExitFailed  = 2 // no decision: the agent does not run the call
)

// Config is one hook run's configuration.
type Config struct {
	Client  *client.Client
	User    string // OIDC subject of the person whose agent this is
	Dialect string // ClaudeCode, Codex or CodexPermissionRequest
	// Wait bounds the whole run from the first byte read: reading the
	// input, the diff, the check, the person's answer and the claim. When
	// it passes with the item still pending, the answer is deny (or defer)
	// with the item's link; the same call made again attaches to it. The
	// agent's own hook timeout must be longer (docs/agents.md).
	Wait time.Duration
	// Defer answers "defer" instead of deny when Wait passes (Claude Code
	// in -p runs: the run stops and --resume asks again).
	Defer bool
	// Files says which files the hook may read to show an edit's diff.
	Files Files
}

// Run reads one hook input from stdin, asks Countersign and writes the
// agent's answer to stdout. It returns the exit code; on ExitFailed it has
// written one line to stderr.
//
// It answers within cfg.Wait of being called, whatever the input names:
// nothing it does — reading the input, reading files, diffing, asking —
// runs past that clock. When ctx ends first (the process was sent SIGTERM
// or SIGINT) it answers at once with the agent's deny.
//
// Nothing it writes contains the API key: an agent may hand both stdout
// and stderr to the model, so the key is replaced wherever a message from
// elsewhere (the server, the network) might carry it.
func Run(ctx context.Context, cfg Config, stdin io.Reader, stdout, stderr io.Writer) int {
	if cfg.Wait <= 0 {
		cfg.Wait = DefaultWait
	}
	start := time.Now()
	runCtx, cancel := context.WithDeadline(ctx, start.Add(cfg.Wait))
	defer cancel()
	type answer struct {
		out []byte
		err error
	}
	done := make(chan answer, 1)
	go func() {
		out, err := decide(runCtx, cfg, start, stdin)
		done <- answer{out, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-runCtx.Done():
		grace := 200 * time.Millisecond // a request ending at the deadline says so itself
		if ctx.Err() != nil {
			grace = 0
		}
		select {
		case a = <-done:
		case <-time.After(grace):
			a.out, a.err = stopped(ctx, cfg)
		}
	}
	if a.err == nil {
		_, a.err = stdout.Write(redact(a.out, cfg))
	}
	if a.err != nil {
		line := "countersign hook: " + oneLine(string(redact([]byte(a.err.Error()), cfg))) + " — the call did not run.\n"
		_, _ = stderr.Write([]byte(line))
		return ExitFailed
	}
	return ExitDecided
}

// stopped is the answer when the run did not end by itself: stopped by a
// signal (the agent's deny, at once), or out of time.
func stopped(ctx context.Context, cfg Config) ([]byte, error) {
	if ctx.Err() == nil {
		return nil, fmt.Errorf("the hook did not finish within --wait (%s)", cfg.Wait)
	}
	d, err := dialectFor(cfg.Dialect)
	if err != nil {
		return nil, err
	}
	return d.answer(deny, "The Countersign hook was stopped before Countersign decided, so the call did not run.")
}

// redact replaces the API key in b. A key is long and random, so a
// message never holds it by chance; this guards against one that echoes it.
func redact(b []byte, cfg Config) []byte {
	if cfg.Client == nil || len(cfg.Client.APIKey) < 8 {
		return b
	}
	return bytes.ReplaceAll(b, []byte(cfg.Client.APIKey), []byte("[API key]"))
}

// diffShare is the part of the wait the diff may take, at most
// maxDiffTime: the rest is for asking and for the person.
func diffShare(wait time.Duration) time.Duration {
	return min(wait/4, maxDiffTime)
}

func decide(ctx context.Context, cfg Config, start time.Time, stdin io.Reader) ([]byte, error) {
	d, err := dialectFor(cfg.Dialect)
	if err != nil {
		return nil, err
	}
	if cfg.Defer && !d.canDefer {
		return nil, fmt.Errorf("%s has no defer answer", cfg.Dialect)
	}
	if cfg.Client == nil || cfg.Client.BaseURL == "" || cfg.Client.APIKey == "" || cfg.User == "" {
		return nil, errors.New("set COUNTERSIGN_URL, COUNTERSIGN_USER and COUNTERSIGN_API_KEY_FILE (or COUNTERSIGN_API_KEY), or --url, --user and --api-key-file")
	}
	in, err := readInput(stdin)
	if err != nil {
		return nil, err
	}
	call, target, err := d.call(in, cfg.User)
	if err != nil {
		return nil, err
	}
	var pre map[string]string
	call.Context, pre = contextOf(in, cfg.Files, start.Add(diffShare(cfg.Wait)), cfg.Client.APIKey)
	out, err := gate(ctx, cfg.Client, call, target, start.Add(personWait(cfg.Wait)))
	if err != nil {
		return nil, failure(cfg.Client.BaseURL, err)
	}
	if out.Allowed && out.Via == "person" && !approvedAsSent(call.Context, out.PreImages) {
		// The server says the person approved other files' contents than
		// the diff this hook sent: not the edit about to run.
		return d.answer(deny, "Countersign's approval names other file contents than the diff this call sent, so the call did not run. Make the call again to be asked anew.")
	}
	if out.Allowed && out.Via == "person" && len(pre) > 0 {
		// The person approved the diff of the files as they were read: a
		// file changed since would take an edit nobody saw.
		if p := changedSince(in.Cwd, cfg.Files, pre, start.Add(cfg.Wait)); p != "" {
			return d.answer(deny, askAgain(ctx, cfg, in, call, p, pre[p], start))
		}
	}
	switch {
	case out.Allowed:
		return d.answer(allow, allowedReason(out))
	case out.Code == client.CodeApprovalPending && cfg.Defer:
		return d.answer(deferred, out.Message)
	}
	return d.answer(deny, out.Message)
}

// askAgain opens a new item for the call, with the diff of the files as
// they are now, and is the deny's reason: the file changed after the
// approval. The new item has a call id of its own (the approved one is
// used up); the agent's retry of the same call attaches to it.
func askAgain(ctx context.Context, cfg Config, in Input, call client.Call, path, was string, start time.Time) string {
	msg := "The file " + path + " changed after you approved — asking again"
	again := call
	again.CallID = call.CallID + "-changed"
	var now map[string]string
	again.Context, now = contextOf(in, cfg.Files, time.Now().Add(min(diffShare(cfg.Wait), max(time.Until(start.Add(cfg.Wait))/2, 0))), cfg.Client.APIKey)
	again.Reason = driftReason(was, now[path], call.Reason)
	out, err := cfg.Client.GateWithin(ctx, again, time.Millisecond)
	if err == nil && out.URL != "" {
		msg += " at " + out.URL
	}
	return msg + ". The call did not run; make the same call again to run it once the new diff is approved."
}

// DriftNote starts the reason of the item a changed file asks again with:
// the card and the audit say why this call is asked twice.
const DriftNote = "The file changed after the first approval"

// driftReason is the new item's reason: the drift, by the file's SHA-256
// before and after (hashes only, never contents), then the agent's own
// words when both fit in a reason.
func driftReason(was, now, words string) string {
	short := func(h string) string {
		if h == "" {
			return "none"
		}
		return h[:min(len(h), 12)] + "…"
	}
	note := DriftNote + " (sha256 " + short(was) + " → " + short(now) + ")."
	if words == "" {
		return note
	}
	if both := note + "\n\n" + words; approval.CheckFields(approval.Field{Name: "reason", Value: both, Rule: approval.RuleReason}) == nil {
		return both
	}
	return note
}

// approvedAsSent reports whether the pre-image hashes the claim says the
// person approved are those of the diff this hook sent (nil: a server that
// does not say, not checked).
func approvedAsSent(sent *client.CallContext, approved []approval.PreImage) bool {
	if approved == nil {
		return true
	}
	var want []approval.PreImage
	if sent != nil {
		want = approval.PreviewDiff(sent.Diff).PreImages()
	}
	return slices.Equal(want, approved)
}

// personWait leaves time after the person's answer for the claim.
func personWait(wait time.Duration) time.Duration {
	return wait - min(5*time.Second, wait/5)
}

// gate asks once; a tool the server does not know yet is registered —
// which never changes the policy of a tool it knows — and asked again.
// Registering only on unknown_tool keeps the usual call to one request.
func gate(ctx context.Context, c *client.Client, call client.Call, t Target, stopAt time.Time) (client.Outcome, error) {
	out, err := c.GateWithin(ctx, call, until(stopAt))
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != approval.CodeUnknownTool {
		return out, err
	}
	if _, err := c.RegisterTool(ctx, t.Connector, t.Registration); err != nil {
		return client.Outcome{}, fmt.Errorf("could not register %s · %s: %w", t.Connector, t.Tool, err)
	}
	return c.GateWithin(ctx, call, until(stopAt))
}

// until is the wait left before stopAt, never 0 (which GateWithin reads
// as "no bound").
func until(stopAt time.Time) time.Duration {
	return max(time.Until(stopAt), time.Millisecond)
}

func allowedReason(out client.Outcome) string {
	switch out.Via {
	case "person":
		return "Approved in Countersign (" + out.Scope + ")."
	case string(approval.ViaJoined):
		return "Approved in Countersign (once, asked when the call passed another Countersign guard)."
	}
	return "Allowed by Countersign (" + out.Via + ")."
}

// failure is the reason a run ends without a decision, in words for the
// model and the person reading the agent's output.
func failure(base string, err error) error {
	var ce *client.Error
	var re *client.RedirectError
	switch {
	case errors.As(err, &re):
		return fmt.Errorf("Countersign at %s answered %d, a redirect to %q, and the hook follows no redirect: if that address is your Countersign, set --url (COUNTERSIGN_URL) to it", base, re.Status, re.Location)
	case errors.As(err, &ce) && ce.Status == 401:
		return errors.New("Countersign refused the API key")
	case errors.As(err, &ce) && ce.Message != "":
		return fmt.Errorf("Countersign answered %d %s: %s", ce.Status, ce.Code, ce.Message)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("Countersign at %s did not answer in time", base)
	}
	return fmt.Errorf("could not ask Countersign at %s: %w", base, err)
}

// oneLine keeps a reason on one line: control characters become spaces.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 500 {
		s = string(r[:500]) + "…"
	}
	return s
}
