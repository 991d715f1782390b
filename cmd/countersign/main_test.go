package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func runCmd(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	for _, k := range []string{"COUNTERSIGN_DATABASE_URL", "COUNTERSIGN_OIDC_ISSUER", "COUNTERSIGN_OIDC_CLIENT_ID", "COUNTERSIGN_OIDC_CLIENT_SECRET", "COUNTERSIGN_APPROVAL_TIMEOUT", "COUNTERSIGN_BASE_URL"} {
		t.Setenv(k, env[k])
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}, {"dev", "--help"}, {"migrate", "--help"},
		{"apikey", "--help"}, {"apikey", "create", "--help"}, {"audit", "--help"}, {"demo-agent", "--help"}, {"bench", "--help"}, {"version"}} {
		code, out, errb := runCmd(t, nil, args...)
		if code != 0 || out+errb == "" {
			t.Errorf("%v: exit %d", args, code)
		}
	}
	if code, _, _ := runCmd(t, nil, "frobnicate"); code != 2 {
		t.Errorf("unknown command exit %d", code)
	}
	if _, _, errb := runCmd(t, nil, "serve", "--help"); !strings.Contains(errb, "COUNTERSIGN_APPROVAL_TIMEOUT") {
		t.Error("serve --help does not list the configuration")
	}
}

func TestServeConfigErrors(t *testing.T) {
	code, _, errb := runCmd(t, nil, "serve")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	for _, v := range []string{"COUNTERSIGN_DATABASE_URL is required for serve", "COUNTERSIGN_OIDC_ISSUER is required for serve",
		"COUNTERSIGN_OIDC_CLIENT_ID is required for serve", "COUNTERSIGN_OIDC_CLIENT_SECRET is required for serve"} {
		if !strings.Contains(errb, v) {
			t.Errorf("missing %q in %q", v, errb)
		}
	}
	code, _, errb = runCmd(t, map[string]string{"COUNTERSIGN_APPROVAL_TIMEOUT": "soon", "COUNTERSIGN_BASE_URL": "localhost"}, "serve")
	if code != 1 || !strings.Contains(errb, "COUNTERSIGN_APPROVAL_TIMEOUT must be") || !strings.Contains(errb, "COUNTERSIGN_BASE_URL must be") {
		t.Fatalf("exit %d: %s", code, errb)
	}
}
