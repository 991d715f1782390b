package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/dev"
)

// devKeyFile is where dev keeps its runtime key, in its data folder. The
// database stores only the key's hash, so the key itself is kept here (mode
// 0600) to print the same one on every run.
const devKeyFile = "dev-api-key"

// handover is what `countersign dev` tells an integrator once it is ready.
// Add a field and a line in printHandover for anything more to hand over.
type handover struct {
	BaseURL     string
	APIKey      string
	KeyFile     string
	DatabaseURL string
	Users       []dev.DemoUser
}

// printHandover writes the base URL, the runtime key, the demo users'
// subjects and the database URL, with the variables runtimes read.
func printHandover(w io.Writer, h handover) {
	fmt.Fprintf(w, "\nCountersign is running: open %s\n", h.BaseURL)
	fmt.Fprintln(w, "Sign in on the development sign-in page as:")
	for _, u := range h.Users {
		fmt.Fprintf(w, "  %-12s subject %-12s (%s)\n", u.Name, u.Subject, u.Role)
	}
	fmt.Fprintln(w, "\nFor your agent runtime (docs/api.md; examples/ in the repository):")
	fmt.Fprintf(w, "  export COUNTERSIGN_URL=%s\n", h.BaseURL)
	keyFile := h.KeyFile
	if abs, err := filepath.Abs(keyFile); err == nil {
		keyFile = abs
	}
	if h.APIKey != "" {
		// The key itself is not printed: this output may be read by an
		// agent, and the hook and the gateway read the file (0600).
		fmt.Fprintf(w, "  export COUNTERSIGN_API_KEY_FILE=%s   # the runtime key, the same on every run\n", shellWord(keyFile))
		fmt.Fprintf(w, "  export COUNTERSIGN_API_KEY=\"$(cat %s)\"   # for runtimes that take the key itself\n", shellWord(keyFile))
	}
	if len(h.Users) > 0 {
		fmt.Fprintf(w, "  export COUNTERSIGN_USER=%s   # the \"user\" of a check: whose inbox is asked\n", h.Users[0].Subject)
	}
	fmt.Fprintf(w, "  API contract: %s/api/v1/openapi.json\n", h.BaseURL)
	if h.APIKey != "" && len(h.Users) > 0 {
		fmt.Fprintln(w)
		printHookLines(w, h.BaseURL, keyFile, h.Users[0].Subject)
		fmt.Fprintln(w, "MCP gateway (paste as the server's command in your MCP client; see docs/agents.md):")
		fmt.Fprintln(w, "  "+mcpWrapperLine(h.BaseURL, keyFile))
	}
	fmt.Fprintf(w, "\nDatabase: %s\n", h.DatabaseURL)
	fmt.Fprintln(w, "  (for countersign apikey create and audit verify: export COUNTERSIGN_DATABASE_URL=<that URL>)")
	fmt.Fprintln(w, "\nPress Ctrl-C to stop.")
}

// devAPIKey returns the runtime key kept in path if the database still
// accepts it; otherwise it creates a new key and keeps it there.
func devAPIKey(ctx context.Context, store *db.DB, path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		key := strings.TrimSpace(string(b))
		_, err := store.AuthenticateAPIKey(ctx, key)
		if err == nil {
			return key, nil
		}
		if approval.KindOf(err) != approval.KindUnauthorized {
			return "", err
		}
		// A new database, or the key was revoked: make another.
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	// The demo people sign in only when someone opens the inbox: a dev
	// runtime's items may wait for them.
	key, _, err := store.CreateAPIKeyWith(ctx, "dev runtime (countersign dev)", nil, db.APIKeyOptions{AllowFirstTimeUsers: true, Replace: true})
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("keep the dev API key: %w", err)
	}
	return key, os.Chmod(path, 0o600) // an existing file keeps its mode on write
}

// redactedURL hides a password in a database URL given from outside.
func redactedURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unreadable database URL)"
	}
	return u.Redacted()
}
