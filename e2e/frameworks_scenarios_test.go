package e2e

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// openAIAgentsScenarios drives @openai/agents with the adapter
// (sdk/typescript/e2e/openai-agents.mjs): the scenarios every framework
// has, and an approval raised by an agent used as a tool.
func openAIAgentsScenarios(t *testing.T, s *frameworkSetup) {
	s.approvalScenarios(t, "openai-agents.mjs", "agents")
	nestedAgentScenario(t, s)
}

// approvalScenarios are what every framework's script must pass: approve →
// the tool runs once, after the claim; reject with words → the tool does
// not run and the words reach the model; the process stops while pending,
// the person approves, a new process resumes from the saved state and the
// tool runs once; the same resumed state replayed runs nothing.
func (s *frameworkSetup) approvalScenarios(t *testing.T, script, prefix string, common ...string) {
	sendEmail := toolCall{Name: "send_email", Input: `{"to":"finance@acme.example","subject":"Invoice 7"}`}
	run := func(t *testing.T, model, scenario string, extra ...string) (*nodeRun, string) {
		effectsFile := filepath.Join(t.TempDir(), "effects")
		env := append([]string{"MODEL=" + model, "CONVERSATION=conv-" + model, "EFFECTS_FILE=" + effectsFile}, append(common, extra...)...)
		return s.start(t, script, scenario, env...), effectsFile
	}

	t.Run("ApproveRunsOnce", func(t *testing.T) {
		model := prefix + "-approve"
		s.model.script(model, sendEmail)
		r, file := run(t, model, "run")
		callID := s.model.callID(model, 0)
		// The person takes a moment: the runtime waits live, on one
		// long-poll the server holds, not by asking again and again.
		s.waitStatus(t, callID, "pending")
		time.Sleep(1500 * time.Millisecond)
		s.decide(t, callID, "approve", "")
		said := r.finish(t)
		if got := effects(t, file); len(got) != 1 {
			t.Fatalf("the tool ran %d times, want once: %q", len(got), got)
		}
		if n := strings.Count(s.e.Logs(), "method=GET path=/api/v1/approvals/"+s.approvalID(t, callID)+" "); n != 1 {
			t.Fatalf("the runtime read the item %d times while the person decided, want one long-poll", n)
		}
		if said["interruptions"] != `["send_email"]` || said["final"] != `"`+closing+`"` {
			t.Fatalf("the run: %v", said)
		}
		if out := s.model.toolOutputs(t, model)[callID]; out != "sent to finance@acme.example" {
			t.Fatalf("the model was sent %q, want the tool's own output", out)
		}
		if got := s.status(t, callID); got != "consumed" {
			t.Fatalf("the approval is %q, want consumed (claimed before the tool ran)", got)
		}
	})

	t.Run("RejectWithWords", func(t *testing.T) {
		model := prefix + "-reject"
		s.model.script(model, sendEmail)
		r, file := run(t, model, "run")
		callID := s.model.callID(model, 0)
		s.decide(t, callID, "reject", rejectWords)
		r.finish(t)
		if got := effects(t, file); len(got) != 0 {
			t.Fatalf("a rejected tool ran: %q", got)
		}
		saw := decodeSaw(t, s.model.toolOutputs(t, model)[callID])
		if saw.Code != "approval_denied" || saw.UserWords != rejectWords || !strings.Contains(saw.Message, rejectWords) {
			t.Fatalf("the model's next request carried %+v, want approval_denied with the person's words %q", saw, rejectWords)
		}
	})

	t.Run("FailsClosed", func(t *testing.T) {
		// Countersign cannot be reached: the tool does not run, and the
		// model is told policy_unavailable.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := "http://" + ln.Addr().String()
		_ = ln.Close()
		model := prefix + "-unreachable"
		s.model.script(model, sendEmail)
		r, file := run(t, model, "run", "FAIL_CLOSED=1", "COUNTERSIGN_URL="+closed)
		r.finish(t)
		if got := effects(t, file); len(got) != 0 {
			t.Fatalf("the tool ran without Countersign: %q", got)
		}
		if saw := decodeSaw(t, s.model.toolOutputs(t, model)[s.model.callID(model, 0)]); saw.Code != "policy_unavailable" {
			t.Fatalf("the model was told %+v, want policy_unavailable", saw)
		}
	})

	t.Run("RestartResumeReplay", func(t *testing.T) {
		model := prefix + "-restart"
		s.model.script(model, sendEmail)
		dir := t.TempDir()
		files := []string{"STATE_FILE=" + filepath.Join(dir, "state.json"), "RESUMED_FILE=" + filepath.Join(dir, "resumed.json")}
		effectsFile := filepath.Join(dir, "effects")
		env := append([]string{"MODEL=" + model, "CONVERSATION=conv-" + model, "EFFECTS_FILE=" + effectsFile}, append(common, files...)...)
		callID := s.model.callID(model, 0)

		said := s.start(t, script, "start", env...).finish(t)
		if said["pending"] != "1" || s.status(t, callID) != "pending" {
			t.Fatalf("the first process did not leave the call pending: %v, item %q", said, s.status(t, callID))
		}
		// The program is gone; the person approves.
		s.decide(t, callID, "approve", "")
		said = s.start(t, script, "resume", env...).finish(t)
		if got := effects(t, effectsFile); len(got) != 1 || said["pending"] != "0" || said["final"] != `"`+closing+`"` {
			t.Fatalf("the resumed process: the tool ran %d times (want once), %v", len(got), said)
		}
		// The same resumed state again: the claim refuses, nothing runs.
		s.start(t, script, "replay", env...).finish(t)
		if got := effects(t, effectsFile); len(got) != 1 {
			t.Fatalf("a replayed state ran the tool again: %d runs", len(got))
		}
		if saw := decodeSaw(t, s.model.toolOutputs(t, model)[callID]); saw.Code != "already_consumed" {
			t.Fatalf("the replay told the model %+v, want already_consumed", saw)
		}
		if n := s.items(t, "conv-"+model); n != 1 {
			t.Fatalf("the conversation has %d items, want the one question", n)
		}
	})

}

// nestedAgentScenario: the tool belongs to an agent used as a tool; its
// approval surfaces on the outer run and is resolved there.
func nestedAgentScenario(t *testing.T, s *frameworkSetup) {
	sendEmail := toolCall{Name: "send_email", Input: `{"to":"finance@acme.example","subject":"Invoice 7"}`}
	t.Run("NestedAgentApprovalOnOuterRun", func(t *testing.T) {
		model := "agents-nested"
		effectsFile := filepath.Join(t.TempDir(), "effects")
		s.model.script(model, toolCall{Name: "mailer", Input: `{"input":"Send invoice 7 to finance."}`})
		s.model.script(model+"-inner", sendEmail)
		r := s.start(t, "openai-agents.mjs", "nested", "MODEL="+model, "CONVERSATION=conv-"+model, "EFFECTS_FILE="+effectsFile)
		callID := s.model.callID(model+"-inner", 0)
		s.decide(t, callID, "approve", "")
		said := r.finish(t)
		if said["interruptions"] != `["send_email"]` {
			t.Fatalf("the inner agent's approval did not surface on the outer run: %v", said)
		}
		if got := effects(t, effectsFile); len(got) != 1 {
			t.Fatalf("the nested tool ran %d times, want once", len(got))
		}
		if got := s.status(t, callID); got != "consumed" {
			t.Fatalf("the nested approval is %q, want consumed", got)
		}
	})
}
