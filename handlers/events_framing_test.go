package handlers_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sseEvent is one dispatched server-sent event.
type sseEvent struct{ Name, Data string }

// readSSE parses a stream as the HTML standard's event-stream parser does:
// a line ends at CRLF, at LF or at a lone CR; "field: value" lines fill the
// event; a blank line dispatches it (when it has data); lines starting with
// a colon are comments. It sends each event on the returned channel and
// closes it when the stream ends.
func readSSE(r io.Reader) <-chan sseEvent {
	out := make(chan sseEvent, 16)
	go func() {
		defer close(out)
		br := bufio.NewReader(r)
		name, data := "", []string(nil)
		for {
			line, err := readSSELine(br)
			if err != nil {
				return
			}
			if line == "" {
				if data != nil {
					if name == "" {
						name = "message"
					}
					out <- sseEvent{Name: name, Data: strings.Join(data, "\n")}
				}
				name, data = "", nil
				continue
			}
			if strings.HasPrefix(line, ":") {
				continue
			}
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				name = value
			case "data":
				data = append(data, value)
			}
		}
	}()
	return out
}

// readSSELine reads one line ended by CRLF, LF or a lone CR.
func readSSELine(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		c, err := br.ReadByte()
		if err != nil {
			return "", err
		}
		switch c {
		case '\n':
			return b.String(), nil
		case '\r':
			if next, err := br.Peek(1); err == nil && next[0] == '\n' {
				_, _ = br.ReadByte()
			}
			return b.String(), nil
		}
		b.WriteByte(c)
	}
}

// openSSE connects the member's event stream and returns a function that
// yields the next event as a browser would see it.
func openSSE(t *testing.T, l *loop) func() sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, l.BaseURL+"/events", nil)
	resp, err := l.Member.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.StatusCode)
	}
	events := readSSE(resp.Body)
	return func() sseEvent {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the stream ended")
			}
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
		}
		return sseEvent{}
	}
}

// A carriage return in a value or in the agent's reason must not end a
// data line early: the live card shows every argument, and arrives at all.
func TestEventStreamCarriageReturn(t *testing.T) {
	l := newLoop(t)
	next := openSSE(t, l)
	if ev := next(); ev.Name != "sync" {
		t.Fatal("first event", ev.Name)
	}

	t.Run("ArgumentValue", func(t *testing.T) {
		id := l.pending(t, l.call("mail", "send_email", `{"to":"finance@acme.example\r","bcc":"attacker@evil.example","body":"hello"}`))
		ev := next()
		if ev.Name != "new" || !strings.Contains(ev.Data, id) {
			t.Fatalf("event %q: %s", ev.Name, ev.Data)
		}
		for _, want := range []string{"finance@acme.example", ">bcc<", "attacker@evil.example", ">body<", "hello", `name="decision"`} {
			if !strings.Contains(ev.Data, want) {
				t.Errorf("the live card lacks %q:\n%s", want, ev.Data)
			}
		}
	})
	t.Run("Reason", func(t *testing.T) {
		call := l.call("mail", "send_email", `{"to":"ops@acme.example"}`)
		call["reason"] = "Routine cleanup\revent: ignored"
		id := l.pending(t, call)
		ev := next()
		if ev.Name != "new" || !strings.Contains(ev.Data, id) {
			t.Fatalf("the card did not arrive as a new card: event %q: %s", ev.Name, ev.Data)
		}
		for _, want := range []string{"Routine cleanup", "event: ignored", "ops@acme.example"} {
			if !strings.Contains(ev.Data, want) {
				t.Errorf("the live card lacks %q:\n%s", want, ev.Data)
			}
		}
	})
}
