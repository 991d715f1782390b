package approval

import (
	"strings"
	"testing"
)

func TestLateDecision(t *testing.T) {
	cases := []struct {
		status      Status
		scope       Scope
		by          string
		code, words string
	}{
		{StatusApproved, ScopeOnce, "you", CodeAlreadyDecided, "already answered: approved once by you"},
		{StatusApproved, ScopeConversation, "Ada", CodeAlreadyDecided, "already answered: allowed in this conversation by Ada"},
		{StatusApproved, ScopeAlways, "", CodeAlreadyDecided, "already answered: always allowed."},
		{StatusConsumed, ScopeOnce, "you", CodeAlreadyDecided, "approved once by you, and the call has run"},
		{StatusRejected, "", "you", CodeAlreadyDecided, "already answered: rejected by you. The call did not run"},
		{StatusExpired, "", "", CodeExpired, "expired before it was answered"},
		{StatusCancelled, "", "", CodeAlreadyDecided, "cancelled before it was answered"},
	}
	for _, c := range cases {
		t.Run(string(c.status)+"_"+string(c.scope), func(t *testing.T) {
			e := LateDecision(c.status, c.scope, c.by)
			if e.Kind != KindConflict || e.Code != c.code || !strings.Contains(e.Message, c.words) {
				t.Fatalf("%+v", e)
			}
			if c.status != StatusExpired && strings.Contains(e.Message, "expired") {
				t.Fatalf("%s says expired: %s", c.status, e.Message)
			}
		})
	}
}
