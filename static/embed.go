// Package static holds the vendored browser assets (htmx 2.0.11 and its SSE
// extension 2.2.4, from npm) and Countersign's stylesheet and script,
// embedded into the binary so the product works offline.
package static

import "embed"

// FS is every static asset, served under /static/.
//
//go:embed *.js *.css *.svg *.png *.webmanifest
var FS embed.FS

// Asset names, used by the layout.
const (
	HTMX    = "htmx-2.0.11.min.js"
	HTMXSSE = "htmx-ext-sse-2.2.4.js"
	CSS     = "app.css"
	JS      = "app.js"
	// Expand and Request are ES modules, one per behaviour: folded values
	// expanding in place, and a request page's live reload.
	Expand  = "expand.js"
	Request = "request.js"
	// Keys is the inbox's keyboard (j/k, a, r, x, ?).
	Keys = "keys.js"
	// Panes is the dense inbox: the compact list beside the cards.
	Panes = "panes.js"
	// Batch decides the calls picked in the list in one step.
	Batch = "batch.js"
	// Disclose folds and unfolds the rows a Details button controls (the
	// audit's events).
	Disclose = "disclose.js"
	// Passkey adds a passkey on Settings and signs a step-up approval.
	Passkey = "passkey.js"
	// Away shows delegation end times in the reader's time zone and sends
	// it with the "While you're away" form.
	Away = "away.js"
	// ServiceWorker is served at /sw.js, so that its scope is the whole
	// app; Manifest at /manifest.webmanifest.
	ServiceWorker = "sw.js"
	Manifest      = "manifest.webmanifest"
)
