// Package appserver sits between an IDE client and Codex's `codex
// app-server` (JSON-RPC, one message a line, over stdio) and answers the
// app-server's approval requests through Countersign.
//
// Every line passes unchanged, byte for byte, in both directions, except
// the approval requests the proxy answers itself (Answered): the client
// never sees those, and the app-server gets the person's decision. A
// request of any other method or shape goes to the client as it came.
// The proxy fails closed: when Countersign cannot be asked, or answers
// anything the proxy does not understand, the answer is decline.
package appserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/countersign/countersign/client"
)

// ProtocolVersion is the Codex release whose app-server protocol the proxy
// was built and tested against (appserver/testdata holds its schema).
const ProtocolVersion = "0.169.0"

// Methods of the app-server the proxy reads.
const (
	methodInitialize      = "initialize"
	methodCommandApproval = "item/commandExecution/requestApproval"
	methodFileApproval    = "item/fileChange/requestApproval"
	methodItemStarted     = "item/started"
	methodItemCompleted   = "item/completed"
	methodResolved        = "serverRequest/resolved"
	methodTurnInterrupt   = "turn/interrupt"
	methodTurnCompleted   = "turn/completed"
)

// Answered are the server requests the proxy answers through Countersign.
var Answered = []string{methodCommandApproval, methodFileApproval, methodPermissionsApproval}

// Options configure a Proxy.
type Options struct {
	Client *client.Client
	User   string // OIDC subject of the person whose agent this is
	Log    *slog.Logger
}

// Proxy relays one client's session with one app-server.
type Proxy struct {
	opt Options
	// toServer and toClient serialise writes: answers are written from the
	// goroutines that wait for a person.
	toServer, toClient lockedWriter
	host               string

	mu         sync.Mutex
	clientName string               // from initialize's clientInfo
	changes    map[string]fileItem  // fileChange items by id, from item/started
	held       map[string]*heldItem // requests being decided, by JSON id
	own        map[string]bool      // the proxy's own requests awaiting an answer
	wg         sync.WaitGroup
}

// New returns a proxy.
func New(opt Options) *Proxy {
	if opt.Log == nil {
		opt.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	host, _ := os.Hostname()
	return &Proxy{opt: opt, host: host, changes: map[string]fileItem{}, held: map[string]*heldItem{}, own: map[string]bool{}}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) write(b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.w.Write(b)
	return err
}

// frame is what the proxy reads of a message; the message itself is
// relayed as its bytes.
type frame struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

func (f frame) request() bool { return len(f.ID) > 0 && string(f.ID) != "null" && f.Method != "" }

// idKey is a JSON-RPC id as a map key: its compact JSON text, so 7 and "7"
// stay two ids.
func idKey(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// Run relays between the client (clientIn, clientOut) and the app-server
// (serverIn, serverOut) until either side ends. When the client's input
// ends, serverIn is closed, so the app-server sees the end of its input
// too; Run returns once the app-server's output has ended.
func (p *Proxy) Run(ctx context.Context, clientIn io.Reader, clientOut io.Writer, serverIn io.WriteCloser, serverOut io.Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.toServer.w, p.toClient.w = serverIn, clientOut
	fromClient := make(chan error, 1)
	go func() {
		err := p.clientLoop(ctx, clientIn)
		_ = serverIn.Close()
		fromClient <- err
	}()
	err := p.serverLoop(ctx, serverOut)
	cancel() // the app-server is gone: nothing held can be answered
	p.wg.Wait()
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

// readLines calls each with every line of r, its newline included (the
// last line may have none).
func readLines(r io.Reader, each func([]byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if werr := each(line); werr != nil {
				return werr
			}
		}
		if err != nil {
			return err
		}
	}
}

// clientLoop relays the client's lines to the app-server unchanged,
// reading initialize's clientInfo and turn/interrupt on the way.
func (p *Proxy) clientLoop(ctx context.Context, r io.Reader) error {
	return readLines(r, func(line []byte) error {
		var f frame
		if json.Unmarshal(line, &f) == nil {
			switch f.Method {
			case methodInitialize:
				p.initialize(f.Params)
			case methodTurnInterrupt:
				p.interrupted(f.Params)
			}
		}
		return p.toServer.write(line)
	})
}

// serverLoop relays the app-server's lines to the client, except the
// approval requests the proxy answers.
func (p *Proxy) serverLoop(ctx context.Context, r io.Reader) error {
	return readLines(r, func(line []byte) error {
		var f frame
		if json.Unmarshal(line, &f) != nil {
			return p.toClient.write(line)
		}
		if p.ownAnswer(f) {
			return nil
		}
		if f.request() {
			if p.take(ctx, f) {
				return nil
			}
			return p.toClient.write(line)
		}
		switch f.Method {
		case methodItemStarted, methodItemCompleted:
			p.track(f.Method, f.Params)
		case methodResolved:
			p.resolved(f.Params)
		case methodTurnCompleted:
			p.turnEnded(f.Params)
		}
		return p.toClient.write(line)
	})
}

// initialize keeps the client's name for the cards.
func (p *Proxy) initialize(params json.RawMessage) {
	var in struct {
		ClientInfo struct {
			Name    string  `json:"name"`
			Title   *string `json:"title"`
			Version string  `json:"version"`
		} `json:"clientInfo"`
	}
	if json.Unmarshal(params, &in) != nil {
		return
	}
	name := in.ClientInfo.Name
	if in.ClientInfo.Title != nil && *in.ClientInfo.Title != "" {
		name = *in.ClientInfo.Title
	}
	if in.ClientInfo.Version != "" {
		name += " " + in.ClientInfo.Version
	}
	p.mu.Lock()
	p.clientName = name
	p.mu.Unlock()
}

// answer writes the app-server's answer to request f.
func (p *Proxy) answer(f frame, result any) {
	msg := map[string]any{"id": f.ID, "result": result}
	if f.JSONRPC != "" {
		msg["jsonrpc"] = f.JSONRPC
	}
	b, err := json.Marshal(msg)
	if err != nil {
		p.opt.Log.Error("could not write an answer", "err", err)
		return
	}
	if err := p.toServer.write(append(b, '\n')); err != nil {
		p.opt.Log.Warn("could not answer the app-server", "err", err)
	}
}
