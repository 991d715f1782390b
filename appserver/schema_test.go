package appserver

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The protocol shapes the proxy relies on, checked against the schema the
// pinned Codex (e2e/agents, @openai/codex 0.169.0) generates: an upgrade
// that renames or drops one fails here.

// codexSchema generates the pinned app-server's JSON schema into a folder.
func codexSchema(t *testing.T) string {
	t.Helper()
	bin, _ := filepath.Abs("../e2e/agents/node_modules/.bin/codex")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("COUNTERSIGN_E2E") == "1" {
			t.Fatalf("the schema check needs `npm ci` in e2e/agents: %v", err)
		}
		t.Skipf("no pinned codex (%v); run `npm ci` in e2e/agents", err)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), ProtocolVersion) {
		t.Fatalf("the pinned codex is %q (%v), the proxy was tested with %s", out, err, ProtocolVersion)
	}
	dir := t.TempDir()
	if out, err := exec.Command(bin, "app-server", "generate-json-schema", "--out", dir).CombinedOutput(); err != nil {
		t.Fatalf("generate-json-schema: %v\n%s", err, out)
	}
	return dir
}

// schema is one generated file, with the bundle's definitions to resolve
// references against.
type schema struct {
	t    *testing.T
	name string
	root map[string]any
}

func loadSchema(t *testing.T, dir, name string) schema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	return schema{t: t, name: name, root: root}
}

// resolve follows $ref, allOf of one and anyOf with null to the object.
func (s schema) resolve(v any) map[string]any {
	m, _ := v.(map[string]any)
	for range 10 {
		if ref, ok := m["$ref"].(string); ok {
			def := strings.TrimPrefix(ref, "#/definitions/")
			defs, _ := s.root["definitions"].(map[string]any)
			m, _ = defs[def].(map[string]any)
			continue
		}
		for _, k := range []string{"allOf", "anyOf"} {
			if list, ok := m[k].([]any); ok {
				for _, x := range list {
					if xm, _ := x.(map[string]any); xm["type"] != "null" {
						m = xm
						break
					}
				}
			}
		}
		if _, ok := m["$ref"]; !ok {
			return m
		}
	}
	return m
}

func (s schema) props(m map[string]any) map[string]any {
	p, _ := s.resolve(m)["properties"].(map[string]any)
	return p
}

// hasProps fails unless the object has every property, the required ones
// among its required.
func (s schema) hasProps(where string, m map[string]any, names []string, required ...string) {
	s.t.Helper()
	p := s.props(m)
	for _, n := range names {
		if _, ok := p[n]; !ok {
			s.t.Errorf("%s %s: no property %q", s.name, where, n)
		}
	}
	var req []string
	for _, r := range s.resolve(m)["required"].([]any) {
		req = append(req, r.(string))
	}
	for _, r := range required {
		if !slices.Contains(req, r) {
			s.t.Errorf("%s %s: %q is not required", s.name, where, r)
		}
	}
}

// variants are the string values and object keys of a oneOf.
func (s schema) variants(m map[string]any) []string {
	var out []string
	list, _ := s.resolve(m)["oneOf"].([]any)
	if e, ok := s.resolve(m)["enum"].([]any); ok {
		list = append(list, map[string]any{"enum": e})
	}
	for _, x := range list {
		xm := s.resolve(x)
		if e, ok := xm["enum"].([]any); ok {
			for _, v := range e {
				out = append(out, v.(string))
			}
		}
		for k := range s.props(xm) {
			out = append(out, k)
		}
	}
	return out
}

func (s schema) hasVariants(where string, m map[string]any, want ...string) {
	s.t.Helper()
	got := s.variants(m)
	for _, w := range want {
		if !slices.Contains(got, w) {
			s.t.Errorf("%s %s: no %q among %v", s.name, where, w, got)
		}
	}
}

// jsonNames are the JSON names of a struct's fields.
func jsonNames(v any, except ...string) []string {
	var out []string
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" && !slices.Contains(except, name) {
			out = append(out, name)
		}
	}
	return out
}

func TestProtocolShapesOfPinnedCodex(t *testing.T) {
	dir := codexSchema(t)

	cmd := loadSchema(t, dir, "CommandExecutionRequestApprovalParams")
	// availableDecisions is sent but not in the generated schema (0.169.0).
	cmd.hasProps("params", cmd.root, jsonNames(commandParams{}, "availableDecisions"), "threadId", "turnId", "itemId")
	cmd.hasVariants("kind", cmd.props(cmd.root)["kind"].(map[string]any), kindCommand, kindHumanCommand)
	nac := cmd.props(cmd.root)["networkApprovalContext"]
	cmd.hasProps("networkApprovalContext", nac.(map[string]any), []string{"host", "protocol"}, "host", "protocol")

	cres := loadSchema(t, dir, "CommandExecutionRequestApprovalResponse")
	cres.hasProps("response", cres.root, []string{"decision"}, "decision")
	decision := cres.props(cres.root)["decision"].(map[string]any)
	cres.hasVariants("decision", decision, decisionAccept, decisionAcceptForSession, decisionDecline, decisionCancel, "acceptWithExecpolicyAmendment")
	for _, x := range cres.resolve(decision)["oneOf"].([]any) {
		if p := cres.props(x.(map[string]any)); p["acceptWithExecpolicyAmendment"] != nil {
			cres.hasProps("acceptWithExecpolicyAmendment", p["acceptWithExecpolicyAmendment"].(map[string]any),
				[]string{"execpolicy_amendment"}, "execpolicy_amendment")
		}
	}

	file := loadSchema(t, dir, "FileChangeRequestApprovalParams")
	file.hasProps("params", file.root, jsonNames(fileParams{}), "threadId", "turnId", "itemId")
	fres := loadSchema(t, dir, "FileChangeRequestApprovalResponse")
	fres.hasVariants("decision", fres.props(fres.root)["decision"].(map[string]any), decisionAccept, decisionAcceptForSession, decisionDecline, decisionCancel)

	req := loadSchema(t, dir, "ServerRequest")
	req.hasVariants("methods", methodsOf(req), methodCommandApproval, methodFileApproval)
	note := loadSchema(t, dir, "ServerNotification")
	note.hasVariants("methods", methodsOf(note), methodItemStarted, methodItemCompleted, methodResolved, methodTurnCompleted)
	creq := loadSchema(t, dir, "ClientRequest")
	creq.hasVariants("methods", methodsOf(creq), methodInitialize, methodTurnInterrupt)

	v2 := loadSchema(t, dir, "codex_app_server_protocol.v2.schemas")
	defs := v2.root["definitions"].(map[string]any)
	def := func(name string) map[string]any {
		d, ok := defs[name].(map[string]any)
		if !ok {
			t.Fatalf("no definition %s", name)
		}
		return d
	}
	v2.hasProps("ServerRequestResolvedNotification", def("ServerRequestResolvedNotification"), []string{"requestId", "threadId"}, "requestId")
	v2.hasProps("ItemStartedNotification", def("ItemStartedNotification"), []string{"item", "threadId", "turnId"}, "item")
	v2.hasProps("TurnCompletedNotification", def("TurnCompletedNotification"), []string{"threadId", "turn"}, "threadId", "turn")
	v2.hasProps("Turn", def("Turn"), []string{"id"}, "id")
	v2.hasProps("TurnInterruptParams", def("TurnInterruptParams"), []string{"threadId", "turnId"}, "threadId", "turnId")
	v2.hasProps("ClientInfo", def("ClientInfo"), []string{"name", "title", "version"}, "name")
	v2.hasProps("FileUpdateChange", def("FileUpdateChange"), []string{"path", "kind", "diff"}, "path", "kind", "diff")
	v2.hasVariants("PatchChangeKind", def("PatchChangeKind"), "type")
	for _, x := range def("PatchChangeKind")["oneOf"].([]any) {
		for _, k := range v2.variants(v2.props(x.(map[string]any))["type"].(map[string]any)) {
			if !slices.Contains([]string{"add", "delete", "update"}, k) {
				t.Errorf("PatchChangeKind: unknown kind %q", k)
			}
		}
	}
	var fileItem map[string]any
	for _, x := range def("ThreadItem")["oneOf"].([]any) {
		if ty, ok := v2.props(x.(map[string]any))["type"].(map[string]any); ok && slices.Contains(v2.variants(ty), "fileChange") {
			fileItem = x.(map[string]any)
		}
	}
	if fileItem == nil {
		t.Fatal("ThreadItem: no fileChange item")
	}
	v2.hasProps("fileChange item", fileItem, []string{"id", "changes", "status"}, "id", "changes")
	v2.hasVariants("PatchApplyStatus", def("PatchApplyStatus"), "completed", "declined")
	v2.hasVariants("CommandExecutionStatus", def("CommandExecutionStatus"), "completed", "declined")
}

// methodsOf is a ServerRequest/ServerNotification/ClientRequest union as
// its methods.
func methodsOf(s schema) map[string]any {
	var e []any
	for _, x := range s.root["oneOf"].([]any) {
		m := s.props(x.(map[string]any))["method"].(map[string]any)
		for _, v := range m["enum"].([]any) {
			e = append(e, v)
		}
	}
	return map[string]any{"enum": e}
}
