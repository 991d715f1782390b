package dev

import (
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"sort"
	"sync"

	"github.com/oauth2-proxy/mockoidc"
)

// DemoUser is a person the development identity provider can sign in.
type DemoUser struct {
	Key string // what the sign-in page's link selects, e.g. "member"
	// Unverified makes the provider say email_verified=false (tests).
	Unverified bool
	Subject    string
	Email      string
	Name       string
	Role       string // shown on the picker: "member" or "admin"
	// Groups is the provider's groups claim: the person's teams.
	Groups []string
}

// DemoMember and DemoAdmin are the demo users of `countersign dev`.
var (
	DemoMember = DemoUser{Key: "member", Subject: "demo-member", Email: "maya@example.com", Name: "Maya Member", Role: "member",
		Groups: []string{"finance", "platform"}}
	DemoAdmin = DemoUser{Key: "admin", Subject: "demo-admin", Email: "avery@example.com", Name: "Avery Admin", Role: "admin"}
)

// The demo teams' other members, so that every approver rule can be tried
// locally: Finn and Fiona are in finance (with Maya), Sam in platform (with
// Maya). Two of finance approve what Maya's agent asks under a quorum rule.
var (
	DemoFinn  = DemoUser{Key: "finn", Subject: "demo-finn", Email: "finn@example.com", Name: "Finn Finance", Role: "member", Groups: []string{"finance"}}
	DemoFiona = DemoUser{Key: "fiona", Subject: "demo-fiona", Email: "fiona@example.com", Name: "Fiona Finance", Role: "member", Groups: []string{"finance"}}
	DemoSam   = DemoUser{Key: "sam", Subject: "demo-sam", Email: "sam@example.com", Name: "Sam Platform", Role: "member", Groups: []string{"platform"}}
)

// IdP is a development OpenID Connect provider (mockoidc) whose
// authorization endpoint shows a page listing demo users. Everything after
// the pick — code, token exchange, PKCE, nonce, signed ID token — is the real
// protocol.
type IdP struct {
	*mockoidc.MockOIDC

	mu    sync.Mutex // serialises queue-then-authorize so each pick gets its user
	users map[string]DemoUser
}

// StartIdP starts the provider on a free loopback port with the demo users.
func StartIdP() (*IdP, error) {
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		return nil, fmt.Errorf("dev: identity provider: %w", err)
	}
	p := &IdP{MockOIDC: m, users: map[string]DemoUser{}}
	for _, u := range []DemoUser{DemoMember, DemoAdmin, DemoFinn, DemoFiona, DemoSam} {
		p.AddUser(u)
	}
	if err := m.AddMiddleware(p.picker); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if err := m.Start(ln, nil); err != nil {
		return nil, err
	}
	return p, nil
}

// AddUser makes u selectable on the sign-in page (tests add more people).
func (p *IdP) AddUser(u DemoUser) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.users[u.Key] = u
}

// picker shows the demo users on the authorization endpoint, and queues the
// chosen one before mockoidc issues the code.
func (p *IdP) picker(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != mockoidc.AuthorizationEndpoint {
			next.ServeHTTP(w, r)
			return
		}
		key := r.URL.Query().Get("demo_user")
		p.mu.Lock()
		u, ok := p.users[key]
		if !ok {
			users := make([]DemoUser, 0, len(p.users))
			for _, u := range p.users {
				users = append(users, u)
			}
			p.mu.Unlock()
			sort.Slice(users, func(i, j int) bool {
				return users[i].Role > users[j].Role || users[i].Role == users[j].Role && users[i].Name < users[j].Name
			})
			p.renderPicker(w, r, users)
			return
		}
		defer p.mu.Unlock()
		p.QueueUser(&mockoidc.MockUser{Subject: u.Subject, Email: u.Email, EmailVerified: !u.Unverified, PreferredUsername: u.Name,
			Groups: u.Groups})
		next.ServeHTTP(w, r)
	})
}

type pickerUser struct {
	DemoUser
	URL string
}

func (p *IdP) renderPicker(w http.ResponseWriter, r *http.Request, users []DemoUser) {
	list := make([]pickerUser, 0, len(users))
	for _, u := range users {
		q := r.URL.Query()
		q.Set("demo_user", u.Key)
		list = append(list, pickerUser{DemoUser: u, URL: (&url.URL{Path: r.URL.Path, RawQuery: q.Encode()}).String()})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	w.Header().Set("Cache-Control", "no-store")
	_ = pickerPage.Execute(w, list)
}

var pickerPage = template.Must(template.New("picker").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Development sign-in</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;background:#f4f5f7;color:#1c2430;margin:0;display:grid;place-items:center;min-height:100vh}
main{background:#fff;border:1px solid #dde1e7;border-radius:12px;padding:28px;max-width:420px;width:calc(100% - 32px);box-sizing:border-box}
h1{font-size:1.25rem;margin:0 0 4px}p{color:#5b6675;margin:0 0 20px;font-size:.93rem}
a{display:flex;justify-content:space-between;align-items:center;gap:12px;padding:14px 16px;border:1px solid #dde1e7;border-radius:8px;margin-bottom:10px;text-decoration:none;color:inherit}
a:hover{border-color:#3656d6;background:#f6f8ff}a:focus-visible{outline:3px solid #3656d6;outline-offset:2px}
small{color:#5b6675;display:block}.role{font-size:.8rem;padding:2px 8px;border-radius:99px;background:#eef1f6}
</style></head><body><main>
<h1>Development identity provider</h1>
<p>This provider exists only in <code>countersign dev</code>. Pick who signs in.</p>
{{range .}}<a href="{{.URL}}" data-testid="demo-user-{{.Key}}"><span><strong>{{.Name}}</strong><small>{{.Email}}</small></span><span class="role">{{.Role}}</span></a>
{{end}}</main></body></html>`))

// SetEmailVerified changes whether the provider vouches for a user's email.
func (p *IdP) SetEmailVerified(key string, verified bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u := p.users[key]
	u.Unverified = !verified
	p.users[key] = u
}
