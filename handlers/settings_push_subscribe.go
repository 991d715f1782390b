package handlers

import (
	"crypto/ecdh"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/notify"
	"github.com/labstack/echo/v4"
)

// pushSubscriptionJSON is a browser's PushSubscription as JSON
// (PushSubscription.toJSON()).
type pushSubscriptionJSON struct {
	Endpoint string `json:"endpoint"`
	Keys     struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
}

// SettingsPushSubscribe records this browser's push subscription for the
// signed-in person. The body is the subscription's JSON; the CSRF token
// comes in the X-CSRF-Token header.
func (h *Handler) SettingsPushSubscribe(c echo.Context) error {
	if h.Settings.VAPIDPublicKey == nil {
		return echo.ErrNotFound
	}
	var in pushSubscriptionJSON
	if err := json.NewDecoder(io.LimitReader(c.Request().Body, 16<<10)).Decode(&in); err != nil {
		return c.JSON(http.StatusBadRequest, map[string]string{"error": "The body is not a push subscription."})
	}
	if msg := checkPushSubscription(in); msg != "" {
		return c.JSON(http.StatusUnprocessableEntity, map[string]string{"error": msg})
	}
	s, err := h.DB.SavePushSubscription(c.Request().Context(), db.PushSubscription{
		Subject: CurrentUser(c).Subject, Endpoint: in.Endpoint, P256dh: in.Keys.P256dh, Auth: in.Keys.Auth,
		DeviceName: DeviceName(c.Request().UserAgent())})
	if err != nil {
		return err
	}
	h.flash(c, "Push is on for "+s.DeviceName+".", false)
	return c.JSON(http.StatusCreated, map[string]any{"id": s.ID, "name": s.DeviceName})
}

// checkPushSubscription says what is wrong with a subscription, or "".
// Why so strict: the server posts to whatever endpoint is stored, so only
// what a push service's URL looks like is accepted — https, no user name
// or password, not localhost nor a loopback, private or link-local
// address (the sender checks resolved addresses too).
func checkPushSubscription(in pushSubscriptionJSON) string {
	u, err := url.Parse(in.Endpoint)
	if err != nil || len(in.Endpoint) > 2048 || notify.CheckPushEndpoint(u) != nil {
		return "The endpoint must be the push service's public https URL."
	}
	dec := func(s string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
		if err != nil {
			return nil
		}
		return b
	}
	if _, err := ecdh.P256().NewPublicKey(dec(in.Keys.P256dh)); err != nil {
		return "The subscription's p256dh key is not a P-256 public key."
	}
	if len(dec(in.Keys.Auth)) != 16 {
		return "The subscription's auth secret must be 16 bytes."
	}
	return ""
}
