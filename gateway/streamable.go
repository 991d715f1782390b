package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Streamable HTTP as the MCP specification describes it, from the client's
// side: every message is POSTed; a request is answered with JSON or with
// an SSE stream that may carry the server's own requests and notifications
// first; the standalone GET stream carries what the server sends outside
// any request (roots/list after initialized, log messages) and is resumed
// with Last-Event-ID when it breaks; the session id the server gives with
// its initialize answer goes with every later request, and when the server
// answers 404 for it (the session expired) a new session is started with
// the client's own initialize and the request is sent again. Every
// message keeps its bytes, as on stdio.
//
// (The SDK's client transport opens the GET stream only for its own
// client sessions, which the gateway is not, and ends on a 16 MiB answer.)
const (
	headerSession  = "Mcp-Session-Id"
	headerProtocol = "Mcp-Protocol-Version"
	headerLastID   = "Last-Event-ID"
	// noStandaloneStream: from this protocol version on, there is no GET
	// stream (SEP-2575).
	noStandaloneStream = "2026-07-28"
)

// streamableTransport is Options.Upstream's transport for StreamableHTTP.
type streamableTransport struct {
	endpoint string
	hc       *http.Client
	maxFrame int
}

func (t *streamableTransport) setMaxFrame(n int) { t.maxFrame = n }

// Connect implements mcp.Transport; nothing is sent until the first message.
func (t *streamableTransport) Connect(context.Context) (mcp.Connection, error) {
	ctx, cancel := context.WithCancel(context.Background())
	max := t.maxFrame
	if max <= 0 {
		max = DefaultMaxFrame
	}
	return &httpConn{endpoint: t.endpoint, hc: t.hc, max: max, ctx: ctx, cancel: cancel,
		in: make(chan jsonrpc.Message, 64)}, nil
}

type httpConn struct {
	endpoint string
	hc       *http.Client
	max      int
	ctx      context.Context // the connection's life; Close ends it
	cancel   context.CancelFunc
	in       chan jsonrpc.Message

	mu        sync.Mutex
	session   string
	version   string
	initRaw   []byte // the client's initialize, for a new session
	initDone  bool   // the client sent notifications/initialized
	streaming bool   // the standalone GET stream is running
	reinitN   int
	closeOnce sync.Once
}

// Read implements mcp.Connection.
func (c *httpConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.ctx.Done():
		return nil, io.EOF
	}
}

// deliver hands one message the server sent to Read.
func (c *httpConn) deliver(m jsonrpc.Message) {
	select {
	case c.in <- m:
	case <-c.ctx.Done():
	}
}

// Write implements mcp.Connection. A request is POSTed in the background
// (its answer may take as long as the call); a notification or an answer
// is POSTed before Write returns, so that they keep their order.
func (c *httpConn) Write(_ context.Context, m jsonrpc.Message) error {
	if c.ctx.Err() != nil {
		return errUpstreamStopped
	}
	data := rawOf(m)
	if data == nil {
		var err error
		if data, err = jsonrpc.EncodeMessage(m); err != nil {
			return err
		}
	}
	req, isReq := m.(*jsonrpc.Request)
	if isReq && req.Method == methodInitialize && req.IsCall() {
		c.mu.Lock()
		c.initRaw = data
		c.mu.Unlock()
	}
	if isReq && req.IsCall() {
		go c.post(req, data, true)
		return nil
	}
	c.post(req, data, true)
	if isReq && req.Method == methodInitialized {
		c.mu.Lock()
		c.initDone = true
		c.mu.Unlock()
	}
	return nil
}

// post sends one message; for a request, its answer (or an error of the
// gateway's in its place) reaches Read. retry: a 404 for the session
// starts a new one and sends the message again, once.
func (c *httpConn) post(req *jsonrpc.Request, data []byte, retry bool) {
	call := req != nil && req.IsCall()
	fail := func(msg string) {
		if call {
			c.deliver(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}})
		}
	}
	resp, err := c.do(http.MethodPost, bytes.NewReader(data), func(h http.Header) {
		h.Set("Content-Type", "application/json")
		h.Set("Accept", "application/json, text/event-stream")
	}, req != nil && req.Method == methodInitialize)
	if err != nil {
		if c.ctx.Err() == nil {
			fail("The MCP server could not be reached, so the request was not sent. It is tried again on the next request.")
		}
		return
	}
	defer resp.Body.Close()
	sent := resp.Header.Get(headerSession)
	switch {
	case resp.StatusCode == http.StatusNotFound && c.sessionID() != "" && retry && !(req != nil && req.Method == methodInitialize):
		// The session expired: a new one, then the same message again.
		if err := c.newSession(); err != nil {
			fail("The MCP server ended the session and a new one could not be started, so the request was not sent.")
			return
		}
		c.post(req, data, false)
		return
	case resp.StatusCode == http.StatusAccepted:
		return
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		fail("The MCP server answered HTTP " + strconv.Itoa(resp.StatusCode) + ", so the request was not run.")
		return
	}
	if req != nil && req.Method == methodInitialize && sent != "" {
		c.mu.Lock()
		c.session = sent
		c.mu.Unlock()
	}
	var onAnswer func(jsonrpc.Message)
	if req != nil && req.Method == methodInitialize {
		onAnswer = func(m jsonrpc.Message) { c.initialized(m) }
	}
	answered := c.readBody(resp, req, onAnswer)
	if call && !answered && c.ctx.Err() == nil {
		fail("The MCP server ended its answer stream without answering, so the request may or may not have taken effect.")
	}
}

// readBody delivers what a POST's answer holds (JSON or an SSE stream)
// and says whether the request was answered. An SSE stream that breaks
// with event ids is resumed with GET and Last-Event-ID.
func (c *httpConn) readBody(resp *http.Response, req *jsonrpc.Request, onAnswer func(jsonrpc.Message)) bool {
	isAnswer := func(m jsonrpc.Message) bool {
		r, ok := m.(*jsonrpc.Response)
		return ok && req != nil && r.ID == req.ID
	}
	handle := func(m jsonrpc.Message) bool {
		if isAnswer(m) && onAnswer != nil {
			onAnswer(m)
		}
		c.deliver(m)
		return isAnswer(m)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.max)+1))
		switch {
		case err != nil:
			return false
		case len(body) > c.max:
			n, _ := io.Copy(io.Discard, resp.Body)
			if req != nil && req.IsCall() {
				c.deliver(&jsonrpc.Response{ID: req.ID, Extra: frameTooLarge{size: len(body) + int(n), limit: c.max}})
				return true
			}
			return false
		case len(bytes.TrimSpace(body)) == 0:
			return false
		}
		answered := false
		for _, m := range decodeFrame(body) {
			answered = handle(m) || answered
		}
		return answered
	}
	last, answered := c.readEvents(resp.Body, handle)
	for tries := 0; !answered && last != "" && tries < 5 && c.ctx.Err() == nil; tries++ {
		r, err := c.get(last)
		if err != nil || r.StatusCode != http.StatusOK {
			if r != nil {
				r.Body.Close()
			}
			time.Sleep(time.Duration(tries+1) * 200 * time.Millisecond)
			continue
		}
		var l string
		l, answered = c.readEvents(r.Body, handle)
		r.Body.Close()
		if l != "" {
			last = l
		}
	}
	return answered
}

// readEvents reads an SSE stream, handing each message on; it returns the
// last event id and whether handle said the request was answered (the
// stream then ends).
func (c *httpConn) readEvents(body io.Reader, handle func(jsonrpc.Message) bool) (string, bool) {
	br := bufio.NewReaderSize(body, 64<<10)
	var last, event string
	var data []byte
	var scan *envelopeScan
	size := 0
	for {
		line, err := readLine(br)
		if err != nil {
			return last, false
		}
		if len(line) == 0 {
			if event == "" || event == "message" {
				var m jsonrpc.Message
				switch {
				case scan != nil:
					m = scan.message(frameTooLarge{size: size, limit: c.max})
				case len(bytes.TrimSpace(data)) > 0:
					ms := decodeFrame(data)
					for _, x := range ms[:len(ms)-1] {
						if handle(x) {
							return last, true
						}
					}
					m = ms[len(ms)-1]
				}
				if m != nil && handle(m) {
					return last, true
				}
			}
			event, data, scan, size = "", nil, nil, 0
			continue
		}
		field, value, _ := strings.Cut(string(line), ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			event = value
		case "id":
			last = value
		case "data":
			size += len(value) + 1
			if scan == nil && size > c.max {
				scan = &envelopeScan{}
				scan.feed(data)
				data = nil
			}
			if scan != nil {
				scan.feed([]byte(value))
				continue
			}
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
		}
	}
}

// readLine reads one SSE line of any length (without its line break).
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return bytes.TrimRight(line, "\r\n"), nil
	}
}

// initialized notes the initialize answer's protocol version and opens the
// standalone stream, before the client can send notifications/initialized
// (after which the server may send requests of its own).
func (c *httpConn) initialized(m jsonrpc.Message) {
	r, ok := m.(*jsonrpc.Response)
	if !ok || r.Error != nil {
		return
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(r.Result, &res)
	c.mu.Lock()
	c.version = res.ProtocolVersion
	start := !c.streaming && res.ProtocolVersion < noStandaloneStream
	c.streaming = c.streaming || start
	c.mu.Unlock()
	if start {
		opened := make(chan struct{})
		go c.standalone(opened)
		select {
		case <-opened:
		case <-time.After(5 * time.Second):
		}
	}
}

// standalone keeps the GET stream open, resuming it after a break with the
// last event id, until the connection closes or the server has none (405).
func (c *httpConn) standalone(opened chan struct{}) {
	once := sync.OnceFunc(func() { close(opened) })
	defer once()
	last := ""
	for failures := 0; c.ctx.Err() == nil && failures < 10; {
		resp, err := c.get(last)
		if err != nil {
			failures++
			c.sleep(time.Duration(failures) * 500 * time.Millisecond)
			continue
		}
		if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotFound {
			resp.Body.Close()
			return // no stream, or the session ended (the next POST starts one)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			failures++
			c.sleep(time.Duration(failures) * 500 * time.Millisecond)
			continue
		}
		once()
		failures = 0
		l, _ := c.readEvents(resp.Body, func(m jsonrpc.Message) bool { c.deliver(m); return false })
		resp.Body.Close()
		if l != "" {
			last = l
		}
		c.sleep(100 * time.Millisecond)
	}
}

func (c *httpConn) sleep(d time.Duration) {
	select {
	case <-time.After(d):
	case <-c.ctx.Done():
	}
}

// get opens the GET stream, resuming after last when it is set.
func (c *httpConn) get(last string) (*http.Response, error) {
	return c.do(http.MethodGet, nil, func(h http.Header) {
		h.Set("Accept", "text/event-stream")
		if last != "" {
			h.Set(headerLastID, last)
		}
	}, false)
}

// do sends one HTTP request with the session's headers.
func (c *httpConn) do(method string, body io.Reader, set func(http.Header), initialize bool) (*http.Response, error) {
	r, err := http.NewRequestWithContext(c.ctx, method, c.endpoint, body)
	if err != nil {
		return nil, err
	}
	set(r.Header)
	c.mu.Lock()
	if s := c.session; s != "" && !initialize {
		r.Header.Set(headerSession, s)
	}
	if v := c.version; v != "" && !initialize {
		r.Header.Set(headerProtocol, v)
	}
	c.mu.Unlock()
	return c.hc.Do(r)
}

func (c *httpConn) sessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// newSession starts a new session with the client's own initialize (its
// answer stays here) and, when the client had, notifications/initialized.
func (c *httpConn) newSession() error {
	c.mu.Lock()
	raw, done := c.initRaw, c.initDone
	c.session, c.streaming = "", false
	c.reinitN++
	id, _ := jsonrpc.MakeID(ownPrefix + "session-" + strconv.Itoa(c.reinitN))
	c.mu.Unlock()
	if raw == nil {
		return errors.New("gateway: no initialize to start a session with")
	}
	var init jsonrpc.Request
	if m, err := jsonrpc.DecodeMessage(raw); err == nil {
		if r, ok := m.(*jsonrpc.Request); ok {
			init = *r
		}
	}
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: id, Method: methodInitialize, Params: init.Params})
	if err != nil {
		return err
	}
	resp, err := c.do(http.MethodPost, bytes.NewReader(data), func(h http.Header) {
		h.Set("Content-Type", "application/json")
		h.Set("Accept", "application/json, text/event-stream")
	}, true)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New("gateway: the server refused a new session: HTTP " + strconv.Itoa(resp.StatusCode))
	}
	c.mu.Lock()
	c.session = resp.Header.Get(headerSession)
	c.mu.Unlock()
	// The answer is the gateway's; the rest of the stream (if any) is not
	// the client's either.
	var answer jsonrpc.Message
	keep := func(m jsonrpc.Message) bool {
		if r, ok := m.(*jsonrpc.Response); ok && r.ID == id {
			answer = m
			return true
		}
		return false
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		c.readEvents(resp.Body, keep)
	} else if body, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.max))); err == nil {
		for _, m := range decodeFrame(body) {
			keep(m)
		}
	}
	if answer == nil {
		return errors.New("gateway: the server did not answer the new session's initialize")
	}
	c.initialized(answer)
	if done {
		c.post(&jsonrpc.Request{Method: methodInitialized}, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), false)
	}
	return nil
}

// Close implements mcp.Connection: the session is ended with DELETE.
func (c *httpConn) Close() error {
	c.closeOnce.Do(func() {
		if s := c.sessionID(); s != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if r, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.endpoint, nil); err == nil {
				r.Header.Set(headerSession, s)
				if resp, err := c.hc.Do(r); err == nil {
					resp.Body.Close()
				}
			}
		}
		c.cancel()
	})
	return nil
}

// SessionID implements mcp.Connection.
func (c *httpConn) SessionID() string { return c.sessionID() }
