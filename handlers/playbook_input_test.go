package handlers_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/countersign/countersign/dev"
)

// A settings number RFC 8785 would round is refused, naming the field: two
// such values would share a fingerprint and changing one into the other
// would lapse no pre-approval.
func TestPlaybookPutInexactNumber(t *testing.T) {
	l := newLoop(t)
	for _, n := range []string{"12345678901234567890", "1e400"} {
		def := dev.DemoPlaybook()
		def.Settings = json.RawMessage(`{"pay_to_account":` + n + `}`)
		status, out := l.API(l.Key, http.MethodPut, "/api/v1/playbooks/"+dev.DemoPlaybookID, map[string]any{"owner": "o", "definition": def})
		e, _ := out["error"].(map[string]any)
		if status != http.StatusBadRequest || errCode(out) != "invalid_request" ||
			e["message"] != "settings.pay_to_account: a number that cannot be represented exactly; send it as a string" {
			t.Fatalf("%s: %d %v", n, status, out)
		}
	}
	fps := map[any]bool{}
	for _, v := range []string{`"12345678901234567890"`, `"12345678901234567999"`, `9007199254740992`, `9007199254740994`} {
		def := dev.DemoPlaybook()
		def.Settings = json.RawMessage(`{"pay_to_account":` + v + `}`)
		status, out := l.API(l.Key, http.MethodPut, "/api/v1/playbooks/"+dev.DemoPlaybookID, map[string]any{"owner": "o", "definition": def})
		if status != http.StatusOK || fps[out["fingerprint"]] {
			t.Fatalf("%s: %d %v (a fingerprint seen before)", v, status, out)
		}
		fps[out["fingerprint"]] = true
	}
}

// Starting a run takes no body or an empty object; anything else is refused
// as every other endpoint refuses it.
func TestPlaybookRunBodyStrict(t *testing.T) {
	l := newLoop(t)
	l.putPlaybook(t, dev.DemoMember.Subject, dev.DemoPlaybook())
	l.approveAndEnable(t)
	path := "/api/v1/playbooks/" + dev.DemoPlaybookID + "/runs"
	for _, body := range []any{"not json", `{"preapproved":[{"connector":"files","tool":"delete_file"}]}`, `[]`, `{} {}`, `null`} {
		if status, out := l.API(l.Key, http.MethodPost, path, body); status != http.StatusBadRequest || errCode(out) != "invalid_request" {
			t.Errorf("%v: %d %v", body, status, out)
		}
	}
	for _, body := range []any{nil, "", "{}", " { } "} {
		if status, out := l.API(l.Key, http.MethodPost, path, body); status != http.StatusOK {
			t.Errorf("%q: %d %v", body, status, out)
		}
	}
}
