package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/labstack/echo/v4"
)

// TestNullIsNotAbsent: one rule for every body — null is refused, naming
// the field, wherever the contract does not declare the field nullable.
func TestNullIsNotAbsent(t *testing.T) {
	check := func() any { return &checkBody{} }
	toolPut := func() any { return &toolPutBody{} }
	sync := func() any { return &connectorBody{} }
	playbook := func() any { return &playbookBody{} }
	cases := []struct {
		body  string
		into  func() any
		field string // "" when accepted
	}{
		{`{"standing_approval":null}`, toolPut, "standing_approval"},
		{`{"tools":[{"name":"t","standing_approval":null}]}`, sync, "tools[0].standing_approval"},
		{`{"connector_kind":null}`, toolPut, "connector_kind"},
		{`{"display_name":null}`, toolPut, "display_name"},
		{`{"display_name":null,"kind":"connector"}`, sync, "display_name"},
		{`{"annotations":null}`, toolPut, "annotations"},
		{`{"annotations":{"readOnlyHint":null}}`, toolPut, "annotations.readOnlyHint"},
		{`{"tools":[{"name":"t","annotations":null}]}`, sync, "tools[0].annotations"},
		{`{"call_id":"c","reason":null}`, check, "reason"},
		{`{"arguments":null}`, check, "arguments"},
		{`{"attach_to_pending":null}`, check, "attach_to_pending"},
		{`{"playbook_run_id":null}`, check, "playbook_run_id"},
		{`{"runtime":null}`, check, "runtime"},
		{`{"runtime":{"host":null}}`, check, "runtime.host"},
		{`{"context":null}`, check, "context"},
		{`{"context":{"diff":null}}`, check, "context.diff"},
		{`{"user":null}`, check, "user"},
		{`{"tools":[null]}`, sync, "tools[0]"},
		{`{"definition":{"steps":null}}`, playbook, "definition.steps"},
		{`{"definition":{"settings":null}}`, playbook, "definition.settings"},
		// Declared nullable, or free-form.
		{`{"kind":"connector","tools":null}`, sync, ""},
		{`{"definition":{"steps":[{"id":"s","tools":null}]}}`, playbook, ""},
		{`{"definition":{"steps":[{"id":"s","title":null}]}}`, playbook, "definition.steps[0].title"},
		{`{"definition":{"settings":{"a":null,"b":[null]}}}`, playbook, ""},
		// null inside the arguments' text is text.
		{`{"arguments":"{\"x\":null}"}`, check, ""},
	}
	for _, tc := range cases {
		c := echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body)), httptest.NewRecorder())
		err := decodeJSON(c, tc.into(), "/arguments")
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.body, err)
			}
			continue
		}
		want := "The field " + tc.field + " must not be null"
		if e := approval.AsError(err); e == nil || e.Kind != approval.KindInvalid || !strings.HasPrefix(e.Message, want) {
			t.Errorf("%s: %v, want %q", tc.body, err, want)
		}
	}
}
