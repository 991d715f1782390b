package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"

	"github.com/alexedwards/scs/v2"
	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/handlers"
	"github.com/labstack/echo/v4"
)

// securityHeaders sets a strict CSP with a per-response nonce, and the other
// headers Echo's Secure middleware does not send.
func securityHeaders(secure bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			var b [18]byte
			_, _ = rand.Read(b[:])
			nonce := base64.StdEncoding.EncodeToString(b[:])
			c.Set(handlers.CtxNonce, nonce)
			h := c.Response().Header()
			h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; style-src 'self'; "+
				"img-src 'self' data:; connect-src 'self'; worker-src 'self'; manifest-src 'self'; form-action 'self'; frame-ancestors 'none'; object-src 'none'; base-uri 'none'")
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Referrer-Policy", "same-origin")
			h.Set("X-Frame-Options", "DENY")
			h.Set("Cross-Origin-Opener-Policy", "same-origin")
			h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
			if secure {
				h.Set("Strict-Transport-Security", "max-age=63072000; includeSubDomains")
			}
			return next(c)
		}
	}
}

// sessionMiddleware loads and saves the scs session around the rest of the
// chain. Errors are rendered inside it, so that a flash or a used-up login
// flow set before the error is still saved.
func sessionMiddleware(sm *scs.SessionManager) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			sm.LoadAndSave(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c.SetRequest(r)
				c.SetResponse(echo.NewResponse(w, c.Echo()))
				c.Set(handlers.CtxSession, true)
				if err := next(c); err != nil {
					c.Error(err)
				}
			})).ServeHTTP(c.Response(), c.Request())
			return nil
		}
	}
}

// loadUser puts the signed-in user, if any, and the session's CSRF token in
// the request context. The admin role is decided here, on every request,
// from the admin list as configured now and the stored verified email, so
// that removing someone from the list takes effect on their next request.
func loadUser(sm *scs.SessionManager, store *db.DB, isAdminEmail func(string) bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ctx := c.Request().Context()
			if id := sm.GetInt64(ctx, handlers.SessUserID); id != 0 {
				u, err := store.UserByID(ctx, id)
				switch {
				case err == nil:
					u.IsAdmin = u.EmailVerified && isAdminEmail(u.Email)
					c.Set(handlers.CtxUser, &u)
				case approval.KindOf(err) == approval.KindNotFound:
					_ = sm.Destroy(ctx)
				default:
					return err
				}
			}
			token := sm.GetString(ctx, handlers.SessCSRF)
			if token == "" && c.Get(handlers.CtxUser) != nil {
				token = randomString()
				sm.Put(ctx, handlers.SessCSRF, token)
			}
			c.Set(handlers.CtxCSRF, token)
			return next(c)
		}
	}
}

// csrfProtect checks every state-changing browser request: it must not come
// from another site (Sec-Fetch-Site / Origin), and it must carry the token
// bound to this session, in the csrf_token field of the POST body or the
// X-CSRF-Token header. The URL query is never read: a token in a URL leaks
// through logs and Referer.
func csrfProtect(base *url.URL) echo.MiddlewareFunc {
	origin := base.Scheme + "://" + base.Host
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			switch r.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
				return next(c)
			}
			forbidden := approval.Errorf(approval.KindForbidden, "csrf_failed",
				"This form has expired or came from another site. Reload the page and try again.")
			if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
				return forbidden
			}
			if o := r.Header.Get("Origin"); o != "" && o != "null" && !strings.EqualFold(o, origin) && !sameHost(o, r.Host) {
				return forbidden
			}
			want, _ := c.Get(handlers.CtxCSRF).(string)
			got := r.Header.Get("X-CSRF-Token")
			if got == "" {
				got = r.PostFormValue("csrf_token")
			}
			if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
				return forbidden
			}
			return next(c)
		}
	}
}

// noStore keeps browsers and proxies from storing responses that show calls,
// admin data or the runtime API's answers.
func noStore(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "no-store")
		return next(c)
	}
}

// sameHost accepts an Origin naming the host the request was sent to, for
// deployments reached under more than one name.
func sameHost(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}

// requireUser sends signed-out browsers to the sign-in page.
func requireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if handlers.CurrentUser(c) != nil {
			return next(c)
		}
		r := c.Request()
		if r.Method == http.MethodGet && r.Header.Get("HX-Request") == "" && !strings.HasPrefix(r.URL.Path, "/events") {
			return c.Redirect(http.StatusSeeOther, "/signin?next="+url.QueryEscape(r.URL.RequestURI()))
		}
		if r.Header.Get("HX-Request") != "" {
			c.Response().Header().Set("HX-Redirect", "/signin")
		}
		return approval.Errorf(approval.KindUnauthorized, approval.CodeUnauthorized, "Your session has ended. Please sign in again.")
	}
}

// requireAdmin answers 404 to non-admins: the admin screens' existence is
// not confirmed to them.
func requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if u := handlers.CurrentUser(c); u == nil || !u.IsAdmin {
			return echo.ErrNotFound
		}
		return next(c)
	}
}

// requireAPIKey authenticates the runtime API with a bearer key.
func requireAPIKey(store *db.DB) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			key, err := bearerKey(c)
			if err != nil {
				return err
			}
			k, err := store.AuthenticateAPIKey(c.Request().Context(), key)
			if err != nil {
				return err
			}
			c.Set(handlers.CtxAPIKey, &k)
			return next(c)
		}
	}
}

// bearerAPIKey passes the request's bearer key on unchecked, to a handler
// that authenticates it in the same round trip as its own first read (the
// check); a request without one is refused at once.
func bearerAPIKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		key, err := bearerKey(c)
		if err != nil {
			return err
		}
		c.Set(handlers.CtxBearerKey, key)
		return next(c)
	}
}

func bearerKey(c echo.Context) (string, error) {
	key, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
	if !ok {
		return "", approval.Errorf(approval.KindUnauthorized, approval.CodeUnauthorized,
			"A valid API key is required: send Authorization: Bearer <key>.")
	}
	return strings.TrimSpace(key), nil
}

func randomString() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
