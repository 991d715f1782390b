package main

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestSoak is the bounded soak: three serve instances on a private cluster
// for 75 s, with an instance killed and restarted, the LISTEN connections
// terminated and Postgres restarted. It runs when COUNTERSIGN_SOAK=1 (CI
// sets it) and needs PostgreSQL's server binaries, as `countersign dev`
// does.
func TestSoak(t *testing.T) {
	if os.Getenv("COUNTERSIGN_SOAK") != "1" {
		t.Skip("set COUNTERSIGN_SOAK=1 to run the fault soak")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Soak(ctx, 75*time.Second, 15*time.Second, 24)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.String())
	if !rep.OK() {
		t.Fatal("soak targets missed")
	}
}
