package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/client"
)

// syncTimeout bounds one registration of the upstream's tools (and one
// answer of the upstream to the gateway's own tools/list).
const syncTimeout = 10 * time.Second

// listedTool is what the catalog reads of a tool in a tools/list result.
// The hints are pointers: an absent hint is not the same as false.
type listedTool struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Annotations *struct {
		Title           string `json:"title"`
		ReadOnlyHint    *bool  `json:"readOnlyHint"`
		DestructiveHint *bool  `json:"destructiveHint"`
		IdempotentHint  *bool  `json:"idempotentHint"`
		OpenWorldHint   *bool  `json:"openWorldHint"`
	} `json:"annotations"`
}

// syncCatalog lists the upstream's tools with requests of the gateway's own
// (the client's tools/list answers pass through untouched) and registers
// them as the connector. The annotations come from an untrusted server:
// Countersign uses them for the default policy of new tools only.
//
// force lists again even when the catalog is registered (the upstream said
// its tools changed): each announced change is followed by a sync that
// starts after it.
func (g *Gateway) syncCatalog(ctx context.Context, force bool) error {
	g.syncMu.Lock()
	defer g.syncMu.Unlock()
	if !force && g.synced.Load() {
		return nil
	}
	err := g.syncOnce(ctx)
	if err != nil && ctx.Err() == nil {
		// Calls still fail closed; the next call tries again.
		g.opt.Log.Warn("could not register the upstream's tools with Countersign", "connector", g.opt.Connector, "err", g.redact(err.Error()))
	}
	return err
}

func (g *Gateway) syncOnce(ctx context.Context) error {
	var tools []listedTool
	cursor := ""
	for page := 0; page < 100; page++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, err := g.askUpstream(ctx, methodListTools, params, syncTimeout)
		if err != nil {
			return err
		}
		var res struct {
			Tools      []listedTool `json:"tools"`
			NextCursor string       `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return err
		}
		tools = append(tools, res.Tools...)
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	// Each tool on its own merits: a tool Countersign refuses (its name
	// or its title breaks a rule of the runtime API, whose 400 names the
	// field) is left out and refused alone, and the rest are registered.
	names := make(map[string]bool, len(tools))
	kept := make([]listedTool, 0, len(tools))
	for _, t := range tools {
		if !names[t.Name] { // a name listed twice is one tool, as listed first
			kept = append(kept, t)
		}
		names[t.Name] = true
	}
	refused := map[string]string{}
	// Bounded: a Countersign that never answers must not keep the gateway
	// from serving (calls then fail closed and try the sync again).
	sctx, cancel := context.WithTimeout(ctx, min(syncTimeout, g.opt.Hold))
	defer cancel()
	for {
		conn := client.Connector{DisplayName: g.opt.Connector, Kind: "connector", Tools: make([]client.ConnectorTool, 0, len(kept))}
		for _, t := range kept {
			conn.Tools = append(conn.Tools, connectorTool(t))
		}
		err := g.opt.Client.SyncConnector(sctx, g.opt.Connector, conn)
		if err == nil {
			break
		}
		i, why, ok := refusedTool(err)
		if !ok || i >= len(kept) {
			return err
		}
		name := kept[i].Name
		refused[name] = why
		kept = append(kept[:i], kept[i+1:]...)
		g.opt.Log.Warn("Countersign cannot take one of the upstream's tools; its calls are refused, the other tools work",
			"connector", g.opt.Connector, "tool", name, "why", g.redact(why))
	}
	display := make(map[string]string, len(kept))
	for _, t := range kept {
		display[t.Name] = cmp.Or(connectorTool(t).DisplayName, t.Name)
	}
	g.mu.Lock()
	g.tools, g.refused, g.display = names, refused, display
	g.mu.Unlock()
	g.synced.Store(true)
	g.opt.Log.Info("registered the upstream's tools", "connector", g.opt.Connector, "tools", len(kept), "refused", len(refused))
	return nil
}

// refusedTool reads a catalog sync's 400 that names one tool's field
// ("tools[3].name must be …"): the tool's index and what is wrong.
func refusedTool(err error) (int, string, bool) {
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusBadRequest {
		return 0, "", false
	}
	rest, ok := strings.CutPrefix(ce.Message, "tools[")
	if !ok {
		return 0, "", false
	}
	num, why, ok := strings.Cut(rest, "].")
	i, err := strconv.Atoi(num)
	if !ok || err != nil || i < 0 {
		return 0, "", false
	}
	return i, why, true
}

// toolRefused is why Countersign refused the upstream's tool name, or "".
func (g *Gateway) toolRefused(name string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused[name]
}

// knownTool says whether the upstream lists name, registering the catalog
// first when it is not registered yet (or the upstream's tools changed).
// An error says the gateway could not tell.
func (g *Gateway) knownTool(ctx context.Context, name string) (bool, error) {
	if !g.synced.Load() {
		_ = g.syncCatalog(ctx, false)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tools == nil {
		return false, errNotListed
	}
	return g.tools[name], nil
}

var errNotListed = errorString("gateway: the upstream's tools are not listed yet")

type errorString string

func (e errorString) Error() string { return string(e) }

func connectorTool(t listedTool) client.ConnectorTool {
	ct := client.ConnectorTool{Name: t.Name, DisplayName: cut(t.Title, approval.MaxDisplayNameChars),
		Description: cut(t.Description, approval.MaxDescriptionChars)}
	if a := t.Annotations; a != nil {
		if ct.DisplayName == "" {
			ct.DisplayName = cut(a.Title, approval.MaxDisplayNameChars)
		}
		ct.Annotations = approval.Annotations{ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
			IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
	}
	return ct
}

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
