package web

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/countersign/countersign/db"
	"github.com/labstack/echo/v4"
)

// Build says which build of Countersign runs: the module version, the
// version control revision it was built from, and the schema version it
// knows. It comes from the Go build information (go build records the
// revision of a git checkout unless -buildvcs=false).
type Build struct {
	// Version is the module version ("v1.4.0" for go install …@v1.4.0,
	// "(devel)" for a build in a checkout), or the one set with
	// -ldflags "-X main.version=…".
	Version string
	// Revision is the commit, "" when the build recorded none.
	Revision string
	// Time is the commit's time, zero when unknown.
	Time time.Time
	// Modified: the checkout had changes that are not committed.
	Modified bool
	// Go is the toolchain.
	Go string
	// Schema is the newest migration the binary holds.
	Schema int64
}

// ReadBuild reads this binary's build information. A non-empty, non-"dev"
// override (main.version, set by a release build's ldflags) wins over the
// module version.
func ReadBuild(override string) Build {
	b := Build{Version: "(devel)", Schema: db.KnownSchemaVersion()}
	if info, ok := debug.ReadBuildInfo(); ok {
		b.Go = info.GoVersion
		if v := info.Main.Version; v != "" {
			b.Version = v
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.time":
				b.Time, _ = time.Parse(time.RFC3339, s.Value)
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if override != "" && override != "dev" {
		b.Version = override
	}
	return b
}

// String is the one-line form: version, revision (with "-dirty" when the
// checkout had uncommitted changes) and schema.
func (b Build) String() string {
	rev := b.Revision
	if rev == "" {
		rev = "unknown revision"
	} else if b.Modified {
		rev += "-dirty"
	}
	return fmt.Sprintf("%s %s schema %d", b.Version, rev, b.Schema)
}

// Lines is the long form `countersign version` prints.
func (b Build) Lines() string {
	var s strings.Builder
	fmt.Fprintf(&s, "countersign %s\n", b.Version)
	rev := b.Revision
	if rev == "" {
		rev = "unknown (built without version control information)"
	}
	fmt.Fprintf(&s, "revision  %s\n", rev)
	if !b.Time.IsZero() {
		fmt.Fprintf(&s, "committed %s\n", b.Time.UTC().Format(time.RFC3339))
	}
	if b.Modified {
		fmt.Fprintln(&s, "modified  yes: built from a checkout with uncommitted changes")
	}
	fmt.Fprintf(&s, "schema    %d\n", b.Schema)
	if b.Go != "" {
		fmt.Fprintf(&s, "go        %s\n", b.Go)
	}
	return s.String()
}

// version answers an admin which build this instance runs and at which
// schema version its database is.
func (s *Server) version(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	body := s.build.Lines()
	var current int64
	if err := s.db.Pool.QueryRow(ctx, `SELECT COALESCE(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&current); err != nil {
		body += "database  unreachable\n"
	} else {
		body += fmt.Sprintf("database  schema %d\n", current)
	}
	return c.String(http.StatusOK, body)
}
