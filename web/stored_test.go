package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/testenv"
	"github.com/jackc/pgx/v5"
)

// keyForms are the ways an API key could sit in the database: as text, the
// secret part alone, its bytes (a bytea reads back as hex), or re-encoded.
func keyForms(t *testing.T, key string) []string {
	t.Helper()
	secret := strings.TrimPrefix(key, "cs_")
	raw, err := base64.RawURLEncoding.DecodeString(secret)
	if err != nil || len(raw) < 16 {
		t.Fatalf("key %q does not have the expected form: %v", key, err)
	}
	return []string{key, secret, hex.EncodeToString([]byte(key)), hex.EncodeToString([]byte(secret)),
		hex.EncodeToString(raw), base64.StdEncoding.EncodeToString(raw), base64.RawStdEncoding.EncodeToString(raw)}
}

// tablesHolding lists the tables with a row whose JSON form (every column;
// bytea as lower-case hex) contains any of forms.
func tablesHolding(t *testing.T, e *testenv.Env, forms ...string) []string {
	t.Helper()
	ctx := context.Background()
	rows, err := e.DB.Pool.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) == 0 {
		t.Fatalf("tables %v: %v", tables, err)
	}
	var found []string
	for _, table := range tables {
		rows, err := e.DB.Pool.Query(ctx, `SELECT to_jsonb(t)::text FROM `+pgx.Identifier{table}.Sanitize()+` t`)
		if err != nil {
			t.Fatal(err)
		}
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
	rowsLoop:
		for _, text := range texts {
			for _, f := range forms {
				if strings.Contains(text, f) {
					found = append(found, table)
					break rowsLoop
				}
			}
		}
	}
	return found
}

// The search sees text columns and bytea columns alike: it finds what is
// stored openly (the key's prefix) and what is stored as bytes (its hash).
func assertKeySearchSees(t *testing.T, e *testenv.Env, key string) {
	t.Helper()
	if got := tablesHolding(t, e, key[:len("cs_")+6]); !slices.Contains(got, "api_keys") {
		t.Fatalf("the search misses the key prefix stored in api_keys.key_prefix: %v", got)
	}
	sum := sha256.Sum256([]byte(key))
	if got := tablesHolding(t, e, hex.EncodeToString(sum[:])); !slices.Contains(got, "api_keys") {
		t.Fatalf("the search misses the key hash stored in api_keys.key_hash: %v", got)
	}
}
