package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/countersign/countersign/docs"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/labstack/echo/v4"
)

// Contract checks runtime API traffic against the OpenAPI document
// (docs/openapi.yaml). Every Env installs one in front of its server, so
// every request an API or client test sends to /api/v1, and every answer,
// is validated; a mismatch fails the test that made it (reported when the
// Env stops). What counts as a mismatch:
//   - a route the document does not list, answered with anything but a
//     refusal (400, 401, 404 or 405);
//   - a request the document says is invalid (an unknown field, a broken
//     limit, no key) that the server accepted with a status below 400;
//   - an answer whose status the operation does not list, or whose body
//     does not match its schema (every object is closed: an undocumented
//     field is a mismatch).
type Contract struct {
	router routers.Router

	mu       sync.Mutex
	problems []string
}

var loadContract = sync.OnceValues(func() (routers.Router, error) {
	raw, err := docs.OpenAPIJSON()
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("openapi: load: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi: invalid document: %w", err)
	}
	doc.Servers = nil // match whatever host and port the test server has
	return gorillamux.NewRouter(doc)
})

// NewContract loads the OpenAPI document.
func NewContract() (*Contract, error) {
	r, err := loadContract()
	if err != nil {
		return nil, err
	}
	return &Contract{router: r}, nil
}

// Problems lists the mismatches seen so far.
func (k *Contract) Problems() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.problems...)
}

// Middleware validates every /api/v1 exchange. Install it with Echo.Pre so
// that it sees each request before routing and each answer as sent,
// errors included.
func (k *Contract) Middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if !strings.HasPrefix(req.URL.Path, "/api/v1/") {
			return next(c)
		}
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		rec := &recorder{ResponseWriter: c.Response().Writer}
		// A response written on a connection the handler took over (a
		// parked long poll) is checked when that connection closes.
		rec.hijacked = func(raw []byte) {
			resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), req)
			if err != nil {
				k.add(fmt.Sprintf("%s %s: unreadable answer on a taken-over connection: %v", req.Method, req.URL.Path, err))
				return
			}
			b, _ := io.ReadAll(resp.Body)
			k.add(k.Check(req, body, resp.StatusCode, resp.Header, b))
		}
		c.Response().Writer = rec
		if err := next(c); err != nil {
			c.Error(err)
		}
		if rec.taken || req.Context().Err() != nil {
			return nil // the caller hung up; nobody reads this answer
		}
		if p := k.Check(req, body, c.Response().Status, c.Response().Header(), rec.body.Bytes()); p != "" {
			k.mu.Lock()
			k.problems = append(k.problems, p)
			k.mu.Unlock()
		}
		return nil
	}
}

// Check validates one exchange and describes the mismatch, or returns "".
func (k *Contract) Check(req *http.Request, reqBody []byte, status int, header http.Header, respBody []byte) string {
	at := fmt.Sprintf("%s %s → %d", req.Method, req.URL.Path, status)
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	if len(reqBody) > 0 {
		// The API reads every body as JSON, whatever Content-Type says.
		r.Header.Set("Content-Type", "application/json")
	}
	route, params, err := k.router.FindRoute(r)
	if err != nil {
		switch status {
		case http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusMethodNotAllowed:
			return "" // refused: the server does not offer it either
		}
		return at + ": the route is not in docs/openapi.yaml"
	}
	// The router matches the escaped path and hands its parameters over
	// still percent-encoded; a path parameter's value is its decoded form
	// (RFC 3986, as the server reads it), decoded once.
	for name, v := range params {
		if d, err := url.PathUnescape(v); err == nil {
			params[name] = d
		}
	}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: bearerPresent}}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && status < 400 {
		return at + ": accepted a request that docs/openapi.yaml does not allow: " + oneLine(err)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	out.SetBodyBytes(respBody)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return at + ": the answer does not match docs/openapi.yaml: " + oneLine(err) + "\n  body: " + string(respBody)
	}
	return ""
}

// bearerPresent stands in for the server's key check: the document says a
// bearer key is required, and the server decides whether it is good.
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if !strings.HasPrefix(in.RequestValidationInput.Request.Header.Get("Authorization"), "Bearer ") {
		return errors.New("no bearer key")
	}
	return nil
}

func oneLine(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
}

// recorder keeps a copy of what the handler wrote.
type recorder struct {
	http.ResponseWriter
	body bytes.Buffer
	// hijacked checks the raw answer written on a taken-over connection;
	// taken says the handler took it.
	hijacked func([]byte)
	taken    bool
}

func (r *recorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Hijack takes the connection over, keeping what is written on it for the
// check.
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(r.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	r.taken = true
	return &teeConn{Conn: conn, done: r.hijacked}, rw, nil
}

// teeConn keeps what is written on a taken-over connection, and hands it
// to done when the connection closes.
type teeConn struct {
	net.Conn
	mu   sync.Mutex
	out  bytes.Buffer
	done func([]byte)
}

func (c *teeConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.out.Write(b)
	c.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *teeConn) Close() error {
	c.mu.Lock()
	raw := bytes.Clone(c.out.Bytes())
	c.mu.Unlock()
	err := c.Conn.Close()
	c.done(raw)
	return err
}

// add records problem p, unless it is empty.
func (k *Contract) add(p string) {
	if p == "" {
		return
	}
	k.mu.Lock()
	k.problems = append(k.problems, p)
	k.mu.Unlock()
}
