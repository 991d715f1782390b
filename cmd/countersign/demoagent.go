package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/dev"
)

func runDemoAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo-agent", "countersign demo-agent --url URL --api-key KEY --user SUBJECT [--interval 8s]", stderr, false)
	base := fs.String("url", "http://localhost:8080", "Countersign's base URL")
	key := fs.String("api-key", os.Getenv("COUNTERSIGN_API_KEY"), "runtime API key (or COUNTERSIGN_API_KEY)")
	user := fs.String("user", dev.DemoMember.Subject, "OIDC subject of the user who owns the demo conversations")
	interval := fs.Duration("interval", 8*time.Second, "time between calls")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *key == "" || *interval <= 0 {
		fs.Usage()
		return errUsage
	}
	return dev.RunAgent(ctx, dev.AgentOptions{Client: client.New(*base, *key), User: *user, Interval: *interval, Out: stdout})
}
