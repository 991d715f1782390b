package notify

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Why push endpoints are guarded: any signed-in person stores the URL the
// server posts to, so without a guard a member could make the server
// connect to its own loopback or to hosts on the internal network. Push
// services are public https hosts; nothing else is a valid endpoint.
// Webhooks are not guarded this way: only admins set them, and they may
// legitimately point at an internal receiver.

// ErrPrivateEndpoint refuses a push endpoint that is, or resolves to, a
// loopback, private, link-local or otherwise non-public address.
var ErrPrivateEndpoint = errors.New("the push endpoint is not a public address")

// CheckPushEndpoint says whether u may be a push endpoint as written:
// https, a host, no user name or password, not localhost, and not an IP
// literal outside public unicast space. A name is resolved only when the
// push is sent, where the dialer checks the address it connects to
// (PushDialControl).
func CheckPushEndpoint(u *url.URL) error {
	if u.Scheme != "https" || u.Host == "" || u.Opaque != "" {
		return errors.New("the push endpoint must be an https URL")
	}
	if u.User != nil {
		return errors.New("the push endpoint must not carry a user name or password")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return ErrPrivateEndpoint
	}
	if ip, err := netip.ParseAddr(host); err == nil && !PublicAddr(ip) {
		return ErrPrivateEndpoint
	}
	return nil
}

// nonPublic are ranges outside public unicast space that the netip
// predicates do not name.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: may reach an IPv4 inside
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("::ffff:0:0/96"),   // IPv4-mapped (checked unmapped)
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:10::/28"),    // ORCHID
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
}

// PublicAddr reports whether ip is a public unicast address: not
// loopback, private, link-local, multicast, unspecified or reserved.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() || !ip.IsGlobalUnicast() || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() ||
		ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// PushDialControl is the push client's net.Dialer Control: it runs after
// the name was resolved, on the address about to be connected, and
// refuses any that is not public — so a public name that resolves to
// 127.0.0.1 (or is rebound to it later) is refused too.
func PushDialControl(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !PublicAddr(ap.Addr()) {
		return ErrPrivateEndpoint
	}
	return nil
}

// guardedPushClient is the client pushes go out with: every connection
// passes PushDialControl, no proxy is used (a proxy would connect on the
// server's behalf, past the check), and no redirect is followed (a push
// service answers for itself).
func guardedPushClient() *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: PushDialControl}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        20,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	return &http.Client{Timeout: 15 * time.Second, Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
