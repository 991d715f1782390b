// Package views holds Countersign's templ components and their typed view
// models. Components never see Echo or pgx: handlers build a view model and
// render it.
package views

// Page is what the layout needs on every screen.
type Page struct {
	Title     string
	Active    string // navigation key: inbox, auto-approve, activity, playbooks, policies, audit, api-keys
	User      *UserView
	CSRFToken string
	Flash     *Flash
	// Pending is how many calls wait for the signed-in person, for the tab
	// title and the favicon's badge; the event stream keeps both current.
	Pending int
}

// baseTitle is the tab title without the count. A title may hold an
// untrusted name (a tool's, a playbook's): its hidden and direction-changing
// characters are shown as markers, since a title is plain text and a bidi
// control in it would reorder the tab's words.
func (p Page) baseTitle() string { return Marked(p.Title) + " · Countersign" }

// tabTitle is the tab title: the count of waiting calls first, so that it
// shows in a narrow tab, "(3) Inbox · Countersign".
func (p Page) tabTitle() string {
	if p.User != nil && p.Pending > 0 {
		return "(" + itoa(p.Pending) + ") " + p.baseTitle()
	}
	return p.baseTitle()
}

// favicon is the icon with a badge while calls wait. The script replaces
// it with one that shows the number.
func (p Page) favicon() string {
	if p.User != nil && p.Pending > 0 {
		return "/static/favicon-pending.svg"
	}
	return "/static/favicon.svg"
}

// UserView is the signed-in person as the layout shows them.
type UserView struct {
	Name    string
	Email   string
	IsAdmin bool
}

// Flash is a one-time message shown after a redirect.
type Flash struct {
	Message string
	Bad     bool
}

type navItem struct {
	Key, Label, Href string
}

func (p Page) nav() []navItem {
	items := []navItem{
		{"inbox", "Inbox", "/"},
		{"auto-approve", "Auto-approve", "/auto-approve"},
		{"activity", "Activity", "/activity"},
		{"playbooks", "Playbooks", "/playbooks"},
		{"settings", "Settings", "/settings"},
	}
	return items
}

func (p Page) adminNav() []navItem {
	if p.User == nil || !p.User.IsAdmin {
		return nil
	}
	return []navItem{
		{"policies", "Policies", "/admin/policies"},
		{"audit", "Audit", "/admin/audit"},
		{"insights", "Insights", "/admin/insights"},
		{"api-keys", "API keys", "/admin/api-keys"},
		{"webhooks", "Webhooks", "/admin/webhooks"},
		{"teams", "Teams", "/admin/teams"},
		{"pending", "Pending", "/admin/pending"},
	}
}

func current(active, key string) string {
	if active == key {
		return "page"
	}
	return "false"
}

func statusText(status int) string {
	return itoa(status)
}

func itoa(n int) string {
	return fmtInt(int64(n))
}
