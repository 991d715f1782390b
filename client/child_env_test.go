package client

import (
	"slices"
	"testing"
)

// A program a guard starts never gets the key, its file's path or any
// other COUNTERSIGN_* variable; everything else is passed on in order.
func TestChildEnv(t *testing.T) {
	env := []string{"PATH=/usr/bin", "COUNTERSIGN_API_KEY=cs_secret", "HOME=/home/a",
		"COUNTERSIGN_API_KEY_FILE=/home/a/.config/countersign/key", "COUNTERSIGN_URL=http://x", "MY_COUNTERSIGN_NOTE=kept"}
	got := ChildEnv(env)
	want := []string{"PATH=/usr/bin", "HOME=/home/a", "MY_COUNTERSIGN_NOTE=kept"}
	if !slices.Equal(got, want) {
		t.Fatalf("ChildEnv = %q, want %q", got, want)
	}
}
