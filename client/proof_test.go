package client_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// A call that asked for a passkey does not run on an approval the claim
// says was made without one; one made with it runs, and says so.
func TestGateProof(t *testing.T) {
	call := gateCall
	call.Proof = "passkey"
	t.Run("ErrSession", func(t *testing.T) {
		s := wellBehaved(t)
		s.claim = answer(http.StatusOK, strings.Replace(consumedState, `"consumed"`, `"consumed","proof":"session"`, 1))
		out, err := s.start(t).Gate(context.Background(), call)
		failure{why: "without the passkey"}.assert(t, out, err)
	})
	t.Run("OK", func(t *testing.T) {
		s := wellBehaved(t)
		s.claim = answer(http.StatusOK, strings.Replace(consumedState, `"consumed"`, `"consumed","proof":"passkey"`, 1))
		out, err := s.start(t).Gate(context.Background(), call)
		if err != nil || !out.Allowed || out.Proof != "passkey" {
			t.Fatalf("%+v %v", out, err)
		}
	})
}
