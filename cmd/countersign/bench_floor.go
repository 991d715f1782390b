package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/countersign/countersign/client"
	"github.com/jackc/pgx/v5/pgxpool"
)

// oneSelect is the one-select limit: a plain net/http server that reads a
// check's JSON body, runs one indexed SELECT (the API key by its hash) and
// answers JSON. No check can be faster than this on the same machine, so
// the check allowed by policy is compared with it.
type oneSelect struct {
	base string
	srv  *http.Server
}

// startOneSelect serves the one-select limit on a loopback port, with its
// own pool of workers connections.
func startOneSelect(pool *pgxpool.Pool) (*oneSelect, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /check", func(w http.ResponseWriter, r *http.Request) {
		var call client.Call
		if err := json.NewDecoder(r.Body).Decode(&call); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		h := sha256.Sum256([]byte(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")))
		var id int64
		err := pool.QueryRow(r.Context(), `SELECT id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`, h[:]).Scan(&id)
		if err != nil {
			http.Error(w, "no key", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"call_id": call.CallID, "decision": "allow", "via": "policy"})
	})
	s := &oneSelect{base: "http://" + ln.Addr().String(), srv: &http.Server{Handler: mux}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *oneSelect) close() { _ = s.srv.Close() }

var floorSeq atomic.Int64

// once sends one check-shaped request to the one-select server.
func (s *oneSelect) once(ctx context.Context, hc *http.Client, key string) error {
	n := strconv.FormatInt(floorSeq.Add(1), 10)
	body, _ := json.Marshal(client.Call{CallID: "fl-" + n, User: "floor", ConversationID: "fl", TurnID: "fl-" + n,
		Connector: "mail", Tool: "search_messages", Arguments: `{"n":` + n + `}`})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/check", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out struct {
		Decision string `json:"decision"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Decision != "allow" {
		return fmt.Errorf("one-select floor: status %d, %v", resp.StatusCode, err)
	}
	return nil
}
