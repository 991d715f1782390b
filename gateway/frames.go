package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxFrame is the largest JSON-RPC frame (one line of the stdio
// transport, one message over HTTP) the gateway reads, unless
// Options.MaxFrame says otherwise: 256 MiB.
const DefaultMaxFrame = 256 << 20

// Frames is an mcp.Transport of newline-delimited JSON-RPC over a reader
// and a writer (the gateway's stdin and stdout, a child's pipes). Unlike
// the SDK's transports it keeps each frame's bytes: a message the gateway
// relays is written exactly as it was read. A frame larger than MaxFrame
// is skipped without being held in memory and read as a frameTooLarge
// message naming its id and method where they could be found, so that the
// request alone gets an error and the session goes on.
type Frames struct {
	Reader   io.ReadCloser
	Writer   io.WriteCloser
	MaxFrame int // 0 means Options.MaxFrame (the gateway's), else DefaultMaxFrame
}

// Stdio is Frames over the process's stdin and stdout.
func Stdio() *Frames {
	return &Frames{Reader: os.Stdin, Writer: nopWriteCloser{os.Stdout}}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func (f *Frames) setMaxFrame(n int) {
	if f.MaxFrame == 0 {
		f.MaxFrame = n
	}
}

// Connect implements mcp.Transport.
func (f *Frames) Connect(context.Context) (mcp.Connection, error) {
	return newFrameConn(f.Reader, f.Writer, f.MaxFrame, nil), nil
}

// maxFrameSetter is a transport whose frame limit the gateway sets.
type maxFrameSetter interface{ setMaxFrame(int) }

// rawFrame is a message's bytes as read (in jsonrpc Extra): written again
// unchanged when the message is relayed.
type rawFrame []byte

// frameTooLarge (in jsonrpc Extra) marks a message that was not read
// because its frame is larger than the limit; only its id and method, if
// found, are set.
type frameTooLarge struct {
	size, limit int
}

// badFrame (in jsonrpc Extra) marks a frame that is not a JSON-RPC message.
type badFrame struct{ err error }

type frameConn struct {
	r       *bufio.Reader
	rc      io.Closer
	w       io.WriteCloser
	wmu     sync.Mutex
	max     int
	closeFn func() error

	in        chan frameOrErr
	queue     []jsonrpc.Message
	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

type frameOrErr struct {
	msgs []jsonrpc.Message
	err  error
}

func newFrameConn(r io.ReadCloser, w io.WriteCloser, max int, closeFn func() error) *frameConn {
	if max <= 0 {
		max = DefaultMaxFrame
	}
	c := &frameConn{r: bufio.NewReaderSize(r, 64<<10), rc: r, w: w, max: max, closeFn: closeFn,
		in: make(chan frameOrErr), closed: make(chan struct{})}
	go c.readLoop()
	return c
}

// readLoop reads frames in the background, so that Read can end with its
// context or Close.
func (c *frameConn) readLoop() {
	for {
		msgs, err := c.readFrame()
		if err == nil && len(msgs) == 0 {
			continue
		}
		select {
		case c.in <- frameOrErr{msgs, err}:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// readFrame reads one line; a line over the limit is skipped, scanned for
// its id and method on the way.
func (c *frameConn) readFrame() ([]jsonrpc.Message, error) {
	var buf []byte
	var scan *envelopeScan
	total := 0
	for {
		chunk, err := c.r.ReadSlice('\n')
		total += len(chunk)
		if scan == nil && total > c.max+2 { // the line break is not part of the frame
			scan = &envelopeScan{}
			scan.feed(buf)
			buf = nil
		}
		if scan != nil {
			scan.feed(chunk)
		} else {
			buf = append(buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !(errors.Is(err, io.EOF) && total > 0) {
			return nil, err
		}
		break
	}
	if scan != nil {
		return []jsonrpc.Message{scan.message(frameTooLarge{size: total, limit: c.max})}, nil
	}
	line := bytes.TrimRight(buf, "\r\n")
	if len(bytes.TrimSpace(line)) > c.max {
		scan = &envelopeScan{}
		scan.feed(line)
		return []jsonrpc.Message{scan.message(frameTooLarge{size: len(line), limit: c.max})}, nil
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, nil
	}
	return decodeFrame(line), nil
}

// decodeFrame decodes one frame, or each message of a batch; each keeps
// its own bytes.
func decodeFrame(line []byte) []jsonrpc.Message {
	trimmed := bytes.TrimSpace(line)
	if trimmed[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(trimmed, &batch); err != nil || len(batch) == 0 {
			return []jsonrpc.Message{&jsonrpc.Request{Extra: badFrame{errors.New("gateway: an empty or malformed batch")}}}
		}
		var out []jsonrpc.Message
		for _, raw := range batch {
			out = append(out, decodeOne(raw))
		}
		return out
	}
	return []jsonrpc.Message{decodeOne(line)}
}

func decodeOne(raw []byte) jsonrpc.Message {
	m, err := jsonrpc.DecodeMessage(raw)
	if err != nil {
		return &jsonrpc.Request{Extra: badFrame{err}}
	}
	keep := rawFrame(bytes.Clone(bytes.TrimSpace(raw)))
	switch m := m.(type) {
	case *jsonrpc.Request:
		m.Extra = keep
	case *jsonrpc.Response:
		m.Extra = keep
	}
	return m
}

// Read implements mcp.Connection.
func (c *frameConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case f := <-c.in:
		if f.err != nil {
			return nil, f.err
		}
		c.queue = f.msgs[1:]
		return f.msgs[0], nil
	}
}

// Write implements mcp.Connection: a relayed message as it was read,
// the gateway's own encoded.
func (c *frameConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data := rawOf(m)
	if data == nil {
		var err error
		if data, err = jsonrpc.EncodeMessage(m); err != nil {
			return fmt.Errorf("gateway: encode a message: %w", err)
		}
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(data); err != nil {
		return err
	}
	_, err := c.w.Write([]byte{'\n'})
	return err
}

// rawOf is the bytes a message was read as, or nil.
func rawOf(m jsonrpc.Message) []byte {
	switch m := m.(type) {
	case *jsonrpc.Request:
		if r, ok := m.Extra.(rawFrame); ok {
			return r
		}
	case *jsonrpc.Response:
		if r, ok := m.Extra.(rawFrame); ok {
			return r
		}
	}
	return nil
}

// Close implements mcp.Connection.
func (c *frameConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.closeFn != nil {
			c.closeErr = c.closeFn()
			return
		}
		c.closeErr = errors.Join(c.w.Close(), c.rc.Close())
	})
	return c.closeErr
}

// SessionID implements mcp.Connection.
func (c *frameConn) SessionID() string { return "" }

// envelopeScan finds the top-level "id" and "method" of a JSON object fed
// to it in pieces, keeping nothing else: how an over-limit frame is
// answered without holding it.
type envelopeScan struct {
	depth              int
	inStr, esc         bool
	inKey, expectKey   bool
	key, val           []byte
	capturing, tooLong bool
	id, method         []byte
}

const maxEnvelopeValue = 1024

func (s *envelopeScan) feed(p []byte) {
	for i := 0; i < len(p); i++ {
		if s.inStr && !s.inKey && !s.capturing && !s.esc {
			// The bulk of a large frame: string text nobody keeps.
			j := bytes.IndexAny(p[i:], `"\\`)
			if j < 0 {
				return
			}
			i += j
		}
		b := p[i]
		if s.inStr {
			switch {
			case s.inKey && !s.esc && b == '"':
				s.inKey, s.inStr = false, false
				continue
			case s.inKey:
				if len(s.key) < 64 {
					s.key = append(s.key, b)
				}
			default:
				s.add(b)
			}
			switch {
			case s.esc:
				s.esc = false
			case b == '\\':
				s.esc = true
			case b == '"':
				s.inStr = false
			}
			continue
		}
		switch {
		case b == ' ' || b == '\t' || b == '\r' || b == '\n':
			continue
		case s.depth == 1 && s.expectKey && b == '"':
			s.inStr, s.inKey, s.expectKey = true, true, false
			s.key = s.key[:0]
			continue
		case s.depth == 1 && b == ':':
			k := string(s.key)
			s.capturing, s.tooLong, s.val = k == "id" || k == "method", false, s.val[:0]
			continue
		case s.depth == 1 && (b == ',' || b == '}'):
			if s.capturing && !s.tooLong {
				if string(s.key) == "id" {
					s.id = bytes.Clone(s.val)
				} else {
					s.method = bytes.Clone(s.val)
				}
			}
			s.capturing, s.expectKey = false, b == ','
			if b == '}' {
				s.depth = 0
			}
			continue
		case b == '{' || b == '[':
			s.depth++
			if s.depth == 1 {
				s.expectKey = b == '{'
				continue
			}
		case b == '}' || b == ']':
			s.depth--
		case b == '"':
			s.inStr = true
		}
		s.add(b)
	}
}

func (s *envelopeScan) add(b byte) {
	if !s.capturing || s.tooLong {
		return
	}
	if len(s.val) >= maxEnvelopeValue {
		s.tooLong = true
		return
	}
	s.val = append(s.val, b)
}

// message is what the scan found, marked with extra.
func (s *envelopeScan) message(extra any) jsonrpc.Message {
	var id jsonrpc.ID
	if len(s.id) > 0 {
		var v any
		if json.Unmarshal(s.id, &v) == nil {
			if n, ok := v.(float64); ok && n != float64(int64(n)) {
				v = nil // a fractional id is no id
			}
			id, _ = jsonrpc.MakeID(v)
		}
	}
	var method string
	if len(s.method) > 0 && json.Unmarshal(s.method, &method) != nil {
		method = ""
	}
	if method == "" && id.IsValid() {
		return &jsonrpc.Response{ID: id, Extra: extra}
	}
	return &jsonrpc.Request{ID: id, Method: method, Extra: extra}
}

// sizeText is n bytes in words a person reads.
func sizeText(n int) string {
	if n >= 1<<20 {
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.Itoa(n) + " bytes"
}
