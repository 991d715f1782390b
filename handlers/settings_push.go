package handlers

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/a-h/templ"
	"github.com/countersign/countersign/views"
	"github.com/labstack/echo/v4"
)

// pushDevices builds the Devices section of /settings: the person's
// subscribed browsers and phones, and what turning push on here needs.
// Nil when the server has no push.
func (h *Handler) pushDevices(c echo.Context) (templ.Component, error) {
	if h.Settings.VAPIDPublicKey == nil {
		return nil, nil
	}
	ctx := c.Request().Context()
	key, err := h.Settings.VAPIDPublicKey(ctx)
	if err != nil {
		return nil, err
	}
	subs, err := h.DB.PushSubscriptionsOf(ctx, CurrentUser(c).Subject)
	if err != nil {
		return nil, err
	}
	v := views.PushDevicesView{PublicKey: key, Now: h.Now()}
	v.CSRFToken, _ = c.Get(CtxCSRF).(string)
	for _, s := range subs {
		sum := sha256.Sum256([]byte(s.Endpoint))
		v.Devices = append(v.Devices, views.PushDevice{ID: s.ID, EndpointHash: hex.EncodeToString(sum[:]), Name: s.DeviceName,
			AddedAt: s.CreatedAt, LastSuccessAt: s.LastSuccessAt})
	}
	return views.PushDevices(v), nil
}

// DeviceName names a browser from its User-Agent for the device list
// ("Firefox on Android"); it is a label for people, not an identification.
func DeviceName(ua string) string {
	browser := "Browser"
	for _, b := range []struct{ token, name string }{
		{"Edg/", "Edge"}, {"OPR/", "Opera"}, {"SamsungBrowser/", "Samsung Internet"}, {"Firefox/", "Firefox"},
		{"FxiOS/", "Firefox"}, {"CriOS/", "Chrome"}, {"Chromium/", "Chromium"}, {"Chrome/", "Chrome"}, {"Safari/", "Safari"},
	} {
		if strings.Contains(ua, b.token) {
			browser = b.name
			break
		}
	}
	system := ""
	for _, o := range []struct{ token, name string }{
		{"Android", "Android"}, {"iPhone", "iPhone"}, {"iPad", "iPad"}, {"Windows", "Windows"}, {"CrOS", "ChromeOS"},
		{"Mac OS X", "macOS"}, {"Macintosh", "macOS"}, {"Linux", "Linux"},
	} {
		if strings.Contains(ua, o.token) {
			system = o.name
			break
		}
	}
	if system == "" {
		return browser
	}
	return browser + " on " + system
}
