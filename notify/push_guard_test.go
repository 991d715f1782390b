package notify_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/db"
	"github.com/countersign/countersign/notify"
)

func TestCheckPushEndpoint(t *testing.T) {
	for _, raw := range []string{
		"https://127.0.0.1:18997/internal-admin", "https://user:pw@push.example.net/x", "https://user@push.example.net/x",
		"https://localhost/x", "https://LOCALHOST./x", "https://push.localhost/x", "https://[::1]/x", "https://10.1.2.3/x",
		"https://192.168.0.1/x", "https://172.16.0.1/x", "https://169.254.169.254/latest", "https://[fe80::1%25eth0]/x",
		"https://0.0.0.0/x", "https://[::]/x", "https://[::ffff:127.0.0.1]/x", "https://100.64.0.1/x", "http://push.example.net/x",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if notify.CheckPushEndpoint(u) == nil {
			t.Errorf("%s accepted", raw)
		}
	}
	for _, raw := range []string{"https://fcm.googleapis.com/fcm/send/abc", "https://updates.push.services.mozilla.com/wpush/v2/x",
		"https://8.8.8.8/x", "https://[2606:4700::1111]/x"} {
		u, _ := url.Parse(raw)
		if err := notify.CheckPushEndpoint(u); err != nil {
			t.Errorf("%s refused: %v", raw, err)
		}
	}
}

// The dialer check runs on the resolved address: a loopback or private
// one is refused before any connection is made.
func TestPushDialControl(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:443", "[::1]:443", "10.0.0.7:443", "169.254.169.254:443", "[::ffff:127.0.0.1]:443", "nonsense"} {
		if err := notify.PushDialControl("tcp", addr, nil); !errors.Is(err, notify.ErrPrivateEndpoint) {
			t.Errorf("%s: err = %v, want refused", addr, err)
		}
	}
	if err := notify.PushDialControl("tcp", "93.184.215.14:443", nil); err != nil {
		t.Errorf("public address refused: %v", err)
	}
	if notify.PublicAddr(netip.MustParseAddr("127.0.0.1")) {
		t.Error("loopback is public")
	}
}

// A server's push channel (no options) never connects to a device whose
// endpoint is on a loopback address, even one stored before endpoints
// were checked: the push is refused for good and the service sees nothing.
func TestPushRefusesLoopbackEndpoint(t *testing.T) {
	f := newFixture(t)
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	d := newDevice(t)
	d.srv = srv
	sub := f.subscribe(t, d, "/push/internal")
	res, err := f.check("send_email", `{"to":"a@example.org"}`, "")
	if err != nil || res.Approval == nil {
		t.Fatal(err)
	}
	p := notify.NewPush(f.store, notify.NewVAPID(f.store, nil), "ops@example.com", f.base, f.clock.Now, notify.PushOptions{})
	exp := res.Approval.ExpiresAt
	delivery := db.Delivery{ApprovalID: res.Approval.ID, Status: string(approval.StatusPending), ExpiresAt: &exp}
	got := p.Send(context.Background(), strconv.FormatInt(sub.ID, 10), []db.Delivery{delivery})
	if !errors.Is(got.Err, notify.ErrPrivateEndpoint) || !got.Permanent {
		t.Fatalf("send to a loopback endpoint: %+v", got)
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("the server connected %d times to a loopback endpoint", n)
	}
}
