package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/web"
	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"
)

// SoftAuthenticator is a passkey in software for Go-level tests: an ECDSA
// P-256 key that makes real WebAuthn assertions (the signature over the
// authenticator data and the client data's hash), with a counter that goes
// up on each one. The COSE key is encoded by go-webauthn's own CBOR.
type SoftAuthenticator struct {
	Key          *ecdsa.PrivateKey
	CredentialID []byte
	Counter      uint32
	RPID         string
	Origin       string
	// Verified sets the UV flag (a PIN or biometric checked).
	Verified bool
}

// NewSoftAuthenticator is a passkey for the relying party at baseURL.
func NewSoftAuthenticator(t testing.TB, baseURL string) *SoftAuthenticator {
	t.Helper()
	rp, err := passkey.New(baseURL)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	return &SoftAuthenticator{Key: key, CredentialID: id, RPID: rp.ID, Origin: rp.Origin, Verified: true}
}

// Credential is the passkey as the server stores it.
func (a *SoftAuthenticator) Credential(t testing.TB) passkey.Credential {
	t.Helper()
	pub, err := a.Key.PublicKey.ECDH()
	if err != nil {
		t.Fatal(err)
	}
	raw := pub.Bytes() // 0x04 ‖ X ‖ Y
	cose := webauthncose.EC2PublicKeyData{
		PublicKeyData: webauthncose.PublicKeyData{KeyType: int64(webauthncose.EllipticKey), Algorithm: int64(webauthncose.AlgES256)},
		Curve:         int64(webauthncose.P256), XCoord: raw[1:33], YCoord: raw[33:65]}
	b, err := webauthncbor.Marshal(cose)
	if err != nil {
		t.Fatal(err)
	}
	return passkey.Credential{ID: a.CredentialID, PublicKey: b, UserVerified: true}
}

// Assert signs challenge as navigator.credentials.get would, and returns
// the PublicKeyCredential as the browser's JSON.
func (a *SoftAuthenticator) Assert(t testing.TB, challenge []byte) []byte {
	t.Helper()
	a.Counter++
	rpHash := sha256.Sum256([]byte(a.RPID))
	flags := byte(0x01) // UP
	if a.Verified {
		flags |= 0x04 // UV
	}
	authData := append(append(rpHash[:], flags), binary.BigEndian.AppendUint32(nil, a.Counter)...)
	clientData, err := json.Marshal(map[string]any{"type": "webauthn.get", "challenge": base64.RawURLEncoding.EncodeToString(challenge),
		"origin": a.Origin, "crossOrigin": false})
	if err != nil {
		t.Fatal(err)
	}
	cdHash := sha256.Sum256(clientData)
	digest := sha256.Sum256(append(append([]byte{}, authData...), cdHash[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, a.Key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	out, err := json.Marshal(map[string]any{"id": enc(a.CredentialID), "rawId": enc(a.CredentialID), "type": "public-key",
		"response": map[string]any{"authenticatorData": enc(authData), "clientDataJSON": enc(clientData), "signature": enc(sig)}})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Localhost serves the Env under http://localhost:PORT instead of
// 127.0.0.1 (browsers refuse WebAuthn for an IP address); the test browses
// LocalhostURL(e.BaseURL).
func Localhost(cfg *web.Config) {
	cfg.BaseURL.Host = LocalhostURL(cfg.BaseURL.Host)
}

// LocalhostURL is u with 127.0.0.1 replaced by localhost.
func LocalhostURL(u string) string {
	return strings.Replace(u, "127.0.0.1", "localhost", 1)
}
