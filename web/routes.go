package web

import (
	iofs "io/fs"
	"net/http"
	"strings"

	"github.com/countersign/countersign/static"
	"github.com/labstack/echo/v4"
)

// routes is the sitemap. Browser routes need a signed-in user unless they
// are in the public group; only POST, PUT and DELETE change state, and every
// browser POST passes the CSRF check. The runtime API is authenticated by
// bearer key and has no cookies, so it has no CSRF check.
func (s *Server) routes() {
	e, h := s.Echo, s.Handler
	e.Use(s.common()...)

	// Operations and assets: no session.
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", s.metrics.handler())
	e.GET("/static/*", staticHandler())
	e.GET("/sw.js", h.ServiceWorker)
	e.GET("/manifest.webmanifest", h.Manifest)

	s.apiRoutes()

	// Browser: session and CSRF on everything below.
	browser := e.Group("", sessionMiddleware(s.Sessions), noStore, loadUser(s.Sessions, s.db, s.cfg.IsAdminEmail), csrfProtect(s.cfg.BaseURL))

	// Public browser routes, the only ones reachable signed out.
	browser.GET("/signin", h.SignInPage)
	browser.GET("/auth/login", h.Login)
	browser.GET("/auth/callback", h.Callback)

	user := browser.Group("", requireUser)
	s.userRoutes(user)
	s.adminRoutes(user)

	// Unknown pages pass through the browser middleware, so that the 404
	// page of a signed-in person keeps the navigation.
	browser.RouteNotFound("/*", func(echo.Context) error { return echo.ErrNotFound })
}

// apiRoutes is the runtime API. Its contract is public; everything else
// needs a key.
func (s *Server) apiRoutes() {
	e, h := s.Echo, s.Handler
	e.GET("/api/v1/openapi.json", h.APIOpenAPI, noStore)
	e.HEAD("/api/v1/openapi.json", h.APIOpenAPI, noStore)
	// The check authenticates its key in the round trip that reads the tool.
	e.POST("/api/v1/tool-calls", h.APIToolCallCheck, noStore, bearerAPIKey)
	api := e.Group("/api/v1", noStore, requireAPIKey(s.db))
	api.PUT("/connectors/:connector", h.APIConnectorPut)
	api.DELETE("/connectors/:connector", h.APIConnectorDelete)
	api.PUT("/connectors/:connector/tools/:tool", h.APIToolPut)
	api.GET("/approvals/:id", h.APIApprovalGet)
	api.POST("/approvals/:id/claim", h.APIApprovalClaim)
	api.POST("/turns/cancel", h.APITurnCancel)
	api.PUT("/playbooks/:id", h.APIPlaybookPut)
	api.POST("/playbooks/:id/enable", h.APIPlaybookEnable)
	api.POST("/playbooks/:id/runs", h.APIPlaybookRun)
	api.Any("/*", s.apiNoRoute)
}

// userRoutes are the screens of a signed-in person: the inbox, an item,
// standing grants, playbooks and settings.
func (s *Server) userRoutes(user *echo.Group) {
	h := s.Handler
	user.GET("/", h.InboxList)
	user.GET("/approvals/:id", h.ApprovalShow)
	user.GET("/approvals/:id/values/:n", h.ApprovalValue)
	user.POST("/approvals/:id/decision", h.ApprovalDecide)
	user.POST("/approvals/batch", h.ApprovalBatch)
	user.GET("/events", h.Events)
	user.POST("/auth/logout", h.Logout)
	user.GET("/auto-approve", h.AutoApproveList)
	user.POST("/auto-approve/:grant/revoke", h.GrantRevoke)
	user.POST("/auto-approve/:grant/clear", h.GrantClear)
	user.POST("/auto-approve/connector/:connector/revoke", h.GrantRevokeConnector)
	user.POST("/auto-approve/clear-lapsed", h.GrantClearLapsed)
	user.GET("/activity", h.ActivityList)
	user.POST("/activity/grants/:grant/revoke", h.ActivityGrantRevoke)
	user.GET("/playbooks", h.PlaybookList)
	user.GET("/playbooks/:id", h.PlaybookShow)
	user.POST("/playbooks/:id/enable", h.PlaybookEnable)
	user.POST("/playbooks/:id/disable", h.PlaybookDisable)
	user.POST("/playbooks/:id/schedule", h.PlaybookSchedule)
	user.POST("/playbooks/:id/approve", h.PlaybookApprove)
	user.POST("/playbooks/:id/preapprovals/:tool/revoke", h.PreApprovalRevoke)
	user.GET("/settings", h.SettingsShow)
	user.POST("/settings/email", h.SettingsEmail)
	user.POST("/settings/push", h.SettingsPushSubscribe)
	user.POST("/settings/push/:id/remove", h.SettingsPushRemove)
	// Passkeys (issue 33).
	user.POST("/settings/passkeys/options", h.SettingsPasskeyOptions)
	user.POST("/settings/passkeys", h.SettingsPasskeyAdd)
	user.POST("/settings/passkeys/:id/remove", h.SettingsPasskeyRemove)
	// While you're away: a delegate decides for the person until a time.
	user.POST("/settings/away", h.SettingsAwayStart)
	user.POST("/settings/away/:id/end", h.SettingsAwayEnd)
}

// adminRoutes are the admin screens under /admin, and their short names.
func (s *Server) adminRoutes(user *echo.Group) {
	h := s.Handler
	// Admin screens by their short names, as a person may type them: each
	// leads to its page under /admin (404 there for anyone not an admin).
	for _, name := range []string{"policies", "audit", "insights", "api-keys", "webhooks"} {
		target := "/admin/" + name
		user.GET("/"+name, func(c echo.Context) error { return c.Redirect(http.StatusSeeOther, target) })
	}

	admin := user.Group("/admin", requireAdmin)
	admin.GET("/policies", h.PolicyList)
	admin.GET("/policies/:id", h.PolicyEdit)
	admin.POST("/policies/:id", h.PolicyUpdate)
	admin.POST("/policies/:id/grants/:grant/revoke", h.PolicyGrantRevoke)
	admin.GET("/audit", h.AuditList)
	admin.GET("/audit.csv", h.AuditExport)
	admin.GET("/audit/verify", h.AuditVerify)
	admin.GET("/version", s.version)
	admin.GET("/insights", h.InsightsShow)
	admin.GET("/api-keys", h.APIKeysList)
	admin.POST("/api-keys", h.APIKeyCreate)
	admin.POST("/api-keys/:id/revoke", h.APIKeyRevoke)
	admin.POST("/api-keys/:id/first-time-users", h.APIKeyFirstTimeUsers)
	admin.GET("/webhooks", h.WebhooksList)
	admin.POST("/webhooks", h.WebhookCreate)
	admin.POST("/webhooks/:id/test", h.WebhookSendTestEvent)
	admin.POST("/webhooks/:id/delete", h.WebhookDelete)
	// Passkey step-up (issue 33).
	admin.GET("/policies/:id/proof", h.PolicyProofEdit)
	admin.POST("/policies/:id/proof", h.PolicyProofUpdate)
	admin.GET("/passkeys", h.AdminPasskeys)
	admin.POST("/passkeys/reset", h.AdminPasskeysReset)
	// Who decides: teams and the read-only overview of what waits.
	admin.GET("/teams", h.TeamList)
	admin.POST("/teams", h.TeamCreate)
	admin.POST("/teams/description", h.TeamDescribe)
	admin.POST("/teams/members", h.TeamMemberAdd)
	admin.POST("/teams/members/remove", h.TeamMemberRemove)
	admin.GET("/pending", h.PendingOverview)
	// Delegations: admins see who decides for whom, and end them.
	admin.GET("/delegations", h.AdminDelegationsList)
	admin.POST("/delegations/:id/end", h.AdminDelegationEnd)
}

// staticHandler serves the embedded assets. Directories are not listed:
// only a named file is served, anything else is 404.
func staticHandler() echo.HandlerFunc {
	fs := http.StripPrefix("/static/", http.FileServerFS(static.FS))
	return func(c echo.Context) error {
		name := strings.TrimPrefix(c.Request().URL.Path, "/static/")
		if fi, err := iofs.Stat(static.FS, name); name == "" || err != nil || fi.IsDir() {
			return echo.ErrNotFound
		}
		// Asset names carry their version, so they may be cached for long;
		// app.css and app.js change with releases and are revalidated.
		c.Response().Header().Set("Cache-Control", "public, max-age=300")
		fs.ServeHTTP(c.Response(), c.Request())
		return nil
	}
}
