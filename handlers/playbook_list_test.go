package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/internal/testenv"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
)

// queryCounter counts the statements a pool sends.
type queryCounter struct{ n atomic.Int64 }

func (q *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	q.n.Add(1)
	return ctx
}

func (q *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// listQueries registers playbooks playbooks of pairs tools each that need
// approval, renders the playbooks list for their owner, and returns how
// many statements the list took.
func listQueries(t *testing.T, playbooks, pairs int) int64 {
	t.Helper()
	ctx := context.Background()
	store, url := testenv.OpenDB(t)
	sync := db.ConnectorSync{Name: "crm", DisplayName: "CRM", Kind: "connector"}
	for i := range pairs {
		sync.Tools = append(sync.Tools, db.ToolSync{Name: fmt.Sprintf("write_%d", i), DisplayName: fmt.Sprintf("Write %d", i)})
	}
	if err := store.SyncConnector(ctx, approval.SystemActor, sync); err != nil {
		t.Fatal(err)
	}
	def := approval.Definition{Name: "Sync", Steps: []approval.Step{{ID: "s", Title: "S", WorkType: approval.WorkType{ID: "w", Version: "1"}}}}
	for _, tool := range sync.Tools {
		def.Steps[0].Tools = append(def.Steps[0].Tools, approval.Pair{Connector: "crm", Tool: tool.Name})
	}
	for i := range playbooks {
		def.Name = fmt.Sprintf("Sync %d", i)
		if _, err := store.UpsertPlaybook(ctx, approval.SystemActor, fmt.Sprintf("pb-%d", i), "owner-1", def); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	counter := &queryCounter{}
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	h := &handlers.Handler{DB: &db.DB{Pool: pool}, Now: time.Now}
	rec := httptest.NewRecorder()
	c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/playbooks", nil), rec)
	c.Set(handlers.CtxUser, &db.User{Subject: "owner-1"})
	if err := h.PlaybookList(c); err != nil {
		t.Fatal(err)
	}
	body := rec.Body.String()
	if rec.Code != http.StatusOK || strings.Count(body, `data-testid="playbook-row"`) != playbooks {
		t.Fatalf("list: %d, %d rows", rec.Code, strings.Count(body, `data-testid="playbook-row"`))
	}
	if want := fmt.Sprintf("%d of %d need approval", pairs, pairs); strings.Count(body, want) != playbooks {
		t.Fatalf("each row should say %q", want)
	}
	return counter.n.Load()
}

// The playbooks list reads a fixed number of statements, whatever the
// number of playbooks and of pairs each uses.
func TestPlaybookListQueryCount(t *testing.T) {
	one := listQueries(t, 1, 1)
	many := listQueries(t, 5, 3)
	if one != many {
		t.Fatalf("the list took %d statements for 1 playbook with 1 pair, %d for 5 playbooks with 3 pairs each", one, many)
	}
}
