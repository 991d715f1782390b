package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/db"
)

// TestVersionFromCleanClone: `countersign version` of a binary built by
// `go build` in a fresh clone of this repository prints the commit it was
// built from and the schema it knows, and says "modified" once the
// checkout has uncommitted changes. The build asks for version control
// information explicitly (-buildvcs=true), whatever GOFLAGS says (CI turns
// it off for the rest).
func TestVersionFromCleanClone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command twice")
	}
	for _, tool := range []string{"git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not built from a git checkout: %v", err)
	}
	clone := filepath.Join(t.TempDir(), "countersign")
	run := func(dir string, env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	run("", nil, "git", "clone", "--quiet", strings.TrimSpace(string(top)), clone)
	rev := strings.TrimSpace(run(clone, nil, "git", "rev-parse", "HEAD"))
	bin := filepath.Join(t.TempDir(), "countersign")
	build := func() string {
		// -trimpath keeps the clone's packages in the build cache's keys
		// of the checkout's own, so only the link is new.
		run(clone, []string{"GOFLAGS=-buildvcs=true", "CGO_ENABLED=0"}, "go", "build", "-trimpath", "-o", bin, "./cmd/countersign")
		return run(clone, nil, bin, "version")
	}

	out := build()
	first, _, _ := strings.Cut(out, "\n")
	// Go 1.24 and later name a clean checkout's build by a pseudo-version
	// of its commit; earlier ones say (devel).
	if first != "countersign (devel)" && !(strings.HasPrefix(first, "countersign v") && strings.Contains(first, rev[:12]) && !strings.Contains(first, "dirty")) {
		t.Errorf("version of a clean clone's build starts %q, want the module version", first)
	}
	for _, want := range []string{"revision  " + rev + "\n", "schema    " + strconv.FormatInt(db.KnownSchemaVersion(), 10) + "\n", "committed 20"} {
		if !strings.Contains(out, want) {
			t.Errorf("version of a clean clone's build does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "modified") {
		t.Errorf("a clean clone's build says it is modified:\n%s", out)
	}

	if err := os.WriteFile(filepath.Join(clone, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = build()
	if !strings.Contains(out, "revision  "+rev+"\n") || !strings.Contains(out, "modified  yes") {
		t.Errorf("version of a build with uncommitted changes:\n%s", out)
	}
}
