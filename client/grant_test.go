package client_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// The claim's grant reaches the Outcome only for "always", and only a
// grant that is one kind of scope.
func TestGateGrant(t *testing.T) {
	grant := `,"grant":{"scope":{"shell":{"argument":"command","rules":[{"words":["npm","test"],"options":true}]}}}`
	for _, c := range []struct {
		name, scope, grant string
		want               bool
	}{
		{"Always", "always", grant, true},
		{"Once", "once", grant, false},
		{"NoGrant", "always", "", false},
		{"NoKind", "always", `,"grant":{"scope":{}}`, false},
		{"BothKinds", "always", `,"grant":{"scope":{"shell":{"argument":"command","rules":[]},"args":{"fixed":{}}}}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := wellBehaved(t)
			s.wait = answer(http.StatusOK, strings.Replace(approvedState, `"once"`, `"`+c.scope+`"`, 1))
			s.claim = answer(http.StatusOK, strings.Replace(consumedState, `"scope":"once"`, `"scope":"`+c.scope+`"`+c.grant, 1))
			out, err := s.start(t).Gate(context.Background(), gateCall)
			if err != nil || !out.Allowed || out.Scope != c.scope {
				t.Fatalf("%+v %v", out, err)
			}
			if got := out.Grant != nil; got != c.want {
				t.Fatalf("grant %+v, want one: %v", out.Grant, c.want)
			}
			if c.want && (out.Grant.Scope.Shell == nil || strings.Join(out.Grant.Scope.Shell.Rules[0].Words, " ") != "npm test" ||
				!out.Grant.Scope.Shell.Rules[0].Options || out.Grant.ExpiresAt != nil) {
				t.Fatalf("grant %+v", out.Grant.Scope.Shell)
			}
		})
	}
}
