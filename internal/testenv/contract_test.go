package testenv

import (
	"net/http"
	"strings"
	"testing"
)

// TestContractCatchesDrift feeds the contract exchanges that drift from the
// document, one kind each, and some that do not.
func TestContractCatchesDrift(t *testing.T) {
	k, err := NewContract()
	if err != nil {
		t.Fatal(err)
	}
	approval := `{"id":"5b0c2c7e-8f1a-4b6e-9d3c-1a2b3c4d5e6f","call_id":"c1","status":"pending","expires_at":"2026-11-30T10:10:00Z","expires_in_ms":1000,"arguments_digest":"sha256:abababababababababababababababababababababababababababababababab",` +
		`"elicitation":{"id":"5b0c2c7e-8f1a-4b6e-9d3c-1a2b3c4d5e6f","type":"elicitation","elicitation_type":"tool_call_approval","message":"m","name":"mail.send",` +
		`"arguments":{"parsed":true,"lines":[{"key":"to","value":"x","length":1,"shortened":false}]}}}`
	check := `{"call_id":"c1","user":"u","conversation_id":"v","turn_id":"t","connector":"mail","tool":"send","arguments":"{}"}`
	cases := []struct {
		name, method, path, reqBody string
		noKey                       bool
		status                      int
		respBody                    string
		want                        string // part of the problem; "" for none
	}{
		{"OK", "GET", "/api/v1/approvals/5b0c2c7e-8f1a-4b6e-9d3c-1a2b3c4d5e6f", "", false, 200, approval, ""},
		{"OKCheck", "POST", "/api/v1/tool-calls", check, false, 200, `{"call_id":"c1","decision":"allow","via":"policy"}`, ""},
		{"OKRefusedBadRequest", "POST", "/api/v1/tool-calls", `{"colour":1}`, false, 400,
			`{"error":{"code":"invalid_request","message":"Unknown field colour."}}`, ""},
		{"OKUnknownRouteRefused", "GET", "/api/v1/nope", "", false, 404, `{"error":{"code":"not_found","message":"x"}}`, ""},
		{"ErrUndocumentedRouteServerError", "GET", "/api/v1/nope", "", false, 500, `{"error":{"code":"internal_error","message":"x"}}`, "route is not in"},
		{"ErrUndocumentedRoute", "PUT", "/api/v1/connectors/mail/widgets/send", `{}`, false, 200, `{}`, "route is not in"},
		{"ErrUndocumentedRequestField", "POST", "/api/v1/tool-calls", strings.Replace(check, `}`, `,"priority":"high"}`, 1),
			false, 200, `{"call_id":"c1","decision":"allow","via":"policy"}`, "accepted a request"},
		{"ErrNoKeyAccepted", "GET", "/api/v1/approvals/5b0c2c7e-8f1a-4b6e-9d3c-1a2b3c4d5e6f", "", true, 200, approval, "accepted a request"},
		{"ErrUndocumentedResponseField", "GET", "/api/v1/approvals/5b0c2c7e-8f1a-4b6e-9d3c-1a2b3c4d5e6f", "", false, 200,
			strings.Replace(approval, `"status"`, `"mood":"calm","status"`, 1), "does not match"},
		{"ErrUndocumentedStatus", "GET", "/api/v1/approvals/5b0c2c7e-8f1a-4b6e-9d3c-1a2b3c4d5e6f", "", false, 409,
			`{"error":{"code":"not_approved","message":"x"}}`, "does not match"},
		{"ErrUndocumentedCode", "GET", "/api/v1/approvals/5b0c2c7e-8f1a-4b6e-9d3c-1a2b3c4d5e6f", "", false, 404,
			`{"error":{"code":"approval_pending","message":"x"}}`, "does not match"},
		{"ErrMissingField", "POST", "/api/v1/tool-calls", check, false, 200, `{"decision":"allow"}`, "does not match"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, "http://127.0.0.1:1"+tc.path, nil)
			if !tc.noKey {
				req.Header.Set("Authorization", "Bearer cs_x")
			}
			h := http.Header{"Content-Type": {"application/json"}}
			got := k.Check(req, []byte(tc.reqBody), tc.status, h, []byte(tc.respBody))
			if tc.want == "" && got != "" {
				t.Fatalf("unexpected problem: %s", got)
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("problem %q, want one about %q", got, tc.want)
			}
		})
	}
}
