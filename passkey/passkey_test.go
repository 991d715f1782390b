package passkey_test

import (
	"errors"
	"testing"

	"github.com/countersign/countersign/internal/testenv"
	"github.com/countersign/countersign/passkey"
)

const base = "https://countersign.example"

func TestNew(t *testing.T) {
	rp, err := passkey.New(base + "/")
	if err != nil || rp.ID != "countersign.example" || rp.Origin != base {
		t.Fatalf("%+v %v", rp, err)
	}
	for _, bad := range []string{"http://127.0.0.1:8080", "not a url", ""} {
		if _, err := passkey.New(bad); err == nil {
			t.Errorf("%q: no error (WebAuthn refuses an IP address or no host)", bad)
		}
	}
}

func TestVerifyAssertion(t *testing.T) {
	rp, _ := passkey.New(base)
	auth := testenv.NewSoftAuthenticator(t, base)
	person := passkey.Person{Handle: passkey.Handle("iss", "sub"), Name: "p", DisplayName: "P", Credentials: []passkey.Credential{auth.Credential(t)}}
	challenge := make([]byte, 32)
	challenge[0] = 7

	a, used, err := rp.VerifyAssertion(person, challenge, auth.Assert(t, challenge))
	if err != nil || used.SignCount != 1 || string(used.ID) != string(auth.CredentialID) {
		t.Fatalf("%+v %v", used, err)
	}
	if err := passkey.VerifyReceipt(rp.ID, rp.Origin, challenge, a, used.PublicKey); err != nil {
		t.Fatalf("receipt: %v", err)
	}
	other := append([]byte{}, challenge...)
	other[0] = 8
	if err := passkey.VerifyReceipt(rp.ID, rp.Origin, other, a, used.PublicKey); !errors.Is(err, passkey.ErrInvalid) {
		t.Fatalf("receipt for another challenge: %v", err)
	}
	a.Signature[len(a.Signature)-1] ^= 1
	if err := passkey.VerifyReceipt(rp.ID, rp.Origin, challenge, a, used.PublicKey); !errors.Is(err, passkey.ErrInvalid) {
		t.Fatalf("altered signature: %v", err)
	}

	cases := map[string]func() []byte{
		"ErrOtherChallenge": func() []byte { return auth.Assert(t, other) },
		"ErrNoUV": func() []byte {
			auth.Verified = false
			defer func() { auth.Verified = true }()
			return auth.Assert(t, challenge)
		},
		"ErrCounterBack": func() []byte { return auth.Assert(t, challenge) }, // 3, not above the stored 5
		"ErrNotJSON":     func() []byte { return []byte("{") },
		"ErrStranger":    func() []byte { return testenv.NewSoftAuthenticator(t, base).Assert(t, challenge) },
	}
	person.Credentials[0].SignCount = 5
	for name, assertion := range cases {
		t.Run(name, func(t *testing.T) {
			auth.Counter = 10
			if name == "ErrCounterBack" {
				auth.Counter = 2
			}
			if _, _, err := rp.VerifyAssertion(person, challenge, assertion()); !errors.Is(err, passkey.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}
