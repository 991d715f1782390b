package notify_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/db"
)

// device is a browser's side of a push subscription: the test holds its
// private key and auth secret, as a browser would, and runs the push
// service (an https endpoint) it subscribed through.
type device struct {
	priv   *ecdh.PrivateKey
	auth   []byte
	srv    *httptest.Server
	status atomic.Int32 // what the push service answers
	got    chan pushRequest
}

// pushRequest is one push as the push service received it.
type pushRequest struct {
	Header http.Header
	Body   []byte
	Path   string
}

func newDevice(t *testing.T) *device {
	t.Helper()
	d := &device{auth: make([]byte, 16), got: make(chan pushRequest, 16)}
	var err error
	if d.priv, err = ecdh.P256().GenerateKey(rand.Reader); err != nil {
		t.Fatal(err)
	}
	if _, err := rand.Read(d.auth); err != nil {
		t.Fatal(err)
	}
	d.status.Store(http.StatusCreated)
	d.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d.got <- pushRequest{Header: r.Header.Clone(), Body: body, Path: r.URL.Path}
		w.WriteHeader(int(d.status.Load()))
	}))
	t.Cleanup(d.srv.Close)
	return d
}

// subscription is what the browser hands the server.
func (d *device) subscription(subject, path string) db.PushSubscription {
	enc := base64.RawURLEncoding.EncodeToString
	return db.PushSubscription{Subject: subject, Endpoint: d.srv.URL + path, P256dh: enc(d.priv.PublicKey().Bytes()),
		Auth: enc(d.auth), DeviceName: "Firefox on Android"}
}

func (d *device) next(t *testing.T) pushRequest {
	t.Helper()
	select {
	case r := <-d.got:
		return r
	case <-time.After(15 * time.Second):
		t.Fatal("no push arrived")
	}
	return pushRequest{}
}

// decrypt opens an aes128gcm body (RFC 8188) encrypted for this device as
// RFC 8291 section 3 says, independently of the sending library.
func (d *device) decrypt(t *testing.T, body []byte) []byte {
	t.Helper()
	if len(body) < 21 {
		t.Fatalf("body too short: %d bytes", len(body))
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if idlen != 65 || len(body) < 21+idlen {
		t.Fatalf("key id length %d", idlen)
	}
	asPublic, ciphertext := body[21:21+idlen], body[21+idlen:]
	if uint32(len(ciphertext)) > rs {
		t.Fatalf("more than one record: %d bytes, record size %d", len(ciphertext), rs)
	}
	asKey, err := ecdh.P256().NewPublicKey(asPublic)
	if err != nil {
		t.Fatalf("the server's ephemeral key: %v", err)
	}
	ecdhSecret, err := d.priv.ECDH(asKey)
	if err != nil {
		t.Fatal(err)
	}
	// IKM = HKDF(auth_secret, ecdh_secret, "WebPush: info" || 0x00 || ua_public || as_public, 32)
	keyInfo := "WebPush: info\x00" + string(d.priv.PublicKey().Bytes()) + string(asPublic)
	ikm, err := hkdf.Key(sha256.New, ecdhSecret, d.auth, keyInfo, 32)
	if err != nil {
		t.Fatal(err)
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		t.Fatal(err)
	}
	cek, _ := hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16)
	nonce, _ := hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12)
	block, err := aes.NewCipher(cek)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := gcm.Open(nil, nonce, ciphertext, nil)
	if err != nil {
		t.Fatalf("decrypt: %v", err)
	}
	// The last record ends with the delimiter 0x02 followed by zero padding.
	plain = bytes.TrimRight(plain, "\x00")
	if len(plain) == 0 || plain[len(plain)-1] != 2 {
		t.Fatal("no last-record delimiter")
	}
	return plain[:len(plain)-1]
}

// checkVAPID verifies the Authorization header (RFC 8292): the JWT is
// signed with the key in k, which is wantKey, and names the push service
// as audience, a near expiry and the contact.
func checkVAPID(t *testing.T, header, endpointOrigin, wantKey, wantSub string) {
	t.Helper()
	rest, ok := strings.CutPrefix(header, "vapid ")
	if !ok {
		t.Fatalf("authorization %q", header)
	}
	var tok, k string
	for _, part := range strings.Split(rest, ",") {
		part = strings.TrimSpace(part)
		if v, ok := strings.CutPrefix(part, "t="); ok {
			tok = v
		} else if v, ok := strings.CutPrefix(part, "k="); ok {
			k = v
		}
	}
	if k != wantKey {
		t.Fatalf("k=%q, want the server's public key %q", k, wantKey)
	}
	raw, err := base64.RawURLEncoding.DecodeString(k)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("JWT %q", tok)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		t.Fatalf("signature: %v (%d bytes)", err, len(sig))
	}
	h := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, h[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("the VAPID JWT's signature does not verify with k")
	}
	var head struct{ Alg, Typ string }
	hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
	if err := json.Unmarshal(hb, &head); err != nil || head.Alg != "ES256" {
		t.Fatalf("JWT header %s", hb)
	}
	var claims struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}
	cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if err := json.Unmarshal(cb, &claims); err != nil {
		t.Fatal(err)
	}
	if claims.Aud != endpointOrigin {
		t.Fatalf("aud %q, want %q", claims.Aud, endpointOrigin)
	}
	if exp := time.Unix(claims.Exp, 0); !exp.After(time.Now()) || exp.After(time.Now().Add(24*time.Hour)) {
		t.Fatalf("exp %v is not within the next 24 hours", exp)
	}
	if claims.Sub != wantSub {
		t.Fatalf("sub %q, want %q", claims.Sub, wantSub)
	}
}

func origin(u string) string {
	i := strings.Index(u[len("https://"):], "/")
	if i < 0 {
		return u
	}
	return u[:len("https://")+i]
}
