// Package passkey is Countersign's WebAuthn relying party: registering a
// person's passkeys, verifying the assertion that approves a call that needs
// one (invariant 16), and re-checking a stored assertion for `audit verify`.
// Parsing and verifying WebAuthn data is go-webauthn's job; nothing here
// reads CBOR or COSE by hand.
package passkey

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
)

// RP is the relying party: its ID is the host of COUNTERSIGN_BASE_URL and
// its one origin that URL's origin.
type RP struct {
	ID     string
	Origin string
	w      *webauthn.WebAuthn
}

// New is the relying party for the server at baseURL.
func New(baseURL string) (*RP, error) {
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("passkey: base URL %q has no host", baseURL)
	}
	origin := u.Scheme + "://" + u.Host
	w, err := webauthn.New(&webauthn.Config{RPID: u.Hostname(), RPDisplayName: "Countersign", RPOrigins: []string{origin}})
	if err != nil {
		return nil, fmt.Errorf("passkey: %w", err)
	}
	return &RP{ID: u.Hostname(), Origin: origin, w: w}, nil
}

// Credential is a stored passkey: what verifying its assertions needs.
type Credential struct {
	ID             []byte
	PublicKey      []byte // COSE key, as the authenticator gave it
	SignCount      uint32
	UserVerified   bool
	BackupEligible bool
	BackupState    bool
	AAGUID         []byte
}

// Person is the account a passkey belongs to: an opaque handle (never the
// email), names for the authenticator's prompt, and the passkeys it has.
type Person struct {
	Handle      []byte
	Name        string
	DisplayName string
	Credentials []Credential
}

// Handle is a person's WebAuthn user handle: derived from the identity
// (issuer and subject), so it names nobody to the authenticator.
func Handle(issuer, subject string) []byte {
	h := sha256.Sum256([]byte("countersign/user/" + issuer + "\x00" + subject))
	return h[:]
}

type user struct{ p Person }

func (u user) WebAuthnID() []byte          { return u.p.Handle }
func (u user) WebAuthnName() string        { return u.p.Name }
func (u user) WebAuthnDisplayName() string { return u.p.DisplayName }
func (u user) WebAuthnCredentials() []webauthn.Credential {
	out := make([]webauthn.Credential, len(u.p.Credentials))
	for i, c := range u.p.Credentials {
		out[i] = webauthn.Credential{ID: c.ID, PublicKey: c.PublicKey,
			Flags:         webauthn.CredentialFlags{UserPresent: true, UserVerified: c.UserVerified, BackupEligible: c.BackupEligible, BackupState: c.BackupState},
			Authenticator: webauthn.Authenticator{AAGUID: c.AAGUID, SignCount: c.SignCount}}
	}
	return out
}

// BeginRegistration starts adding a passkey for p: the options for
// navigator.credentials.create (JSON, as go-webauthn writes them) and the
// ceremony's state, to keep server-side until FinishRegistration. The
// passkey must be discoverable and verify the user; p's existing passkeys
// are excluded.
func (rp *RP) BeginRegistration(p Person) (options, state []byte, err error) {
	exclude := make([]protocol.CredentialDescriptor, len(p.Credentials))
	for i, c := range p.Credentials {
		exclude[i] = protocol.CredentialDescriptor{Type: protocol.PublicKeyCredentialType, CredentialID: c.ID}
	}
	creation, session, err := rp.w.BeginRegistration(user{p},
		webauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{
			ResidentKey: protocol.ResidentKeyRequirementRequired, UserVerification: protocol.VerificationRequired}),
		webauthn.WithExclusions(exclude))
	if err != nil {
		return nil, nil, fmt.Errorf("passkey: begin registration: %w", err)
	}
	if options, err = json.Marshal(creation); err != nil {
		return nil, nil, err
	}
	state, err = json.Marshal(session)
	return options, state, err
}

// ErrInvalid is a passkey response that does not verify: malformed, for
// another challenge, origin or person, without user verification, or
// signed by a passkey not the person's.
var ErrInvalid = errors.New("passkey: the response does not verify")

// FinishRegistration checks the browser's response to BeginRegistration's
// options (state as it returned) and returns the new passkey.
func (rp *RP) FinishRegistration(p Person, state, response []byte) (Credential, error) {
	var session webauthn.SessionData
	if err := json.Unmarshal(state, &session); err != nil {
		return Credential{}, fmt.Errorf("%w: registration state: %v", ErrInvalid, err)
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(response)
	if err != nil {
		return Credential{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	c, err := rp.w.CreateCredential(user{p}, session, parsed)
	if err != nil {
		return Credential{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if !c.Flags.UserVerified {
		return Credential{}, fmt.Errorf("%w: the authenticator did not verify the user", ErrInvalid)
	}
	return Credential{ID: c.ID, PublicKey: c.PublicKey, SignCount: c.Authenticator.SignCount, UserVerified: c.Flags.UserVerified,
		BackupEligible: c.Flags.BackupEligible, BackupState: c.Flags.BackupState, AAGUID: c.Authenticator.AAGUID}, nil
}

// Assertion is what an authenticator returned for a challenge: kept as the
// receipt of the approval it made.
type Assertion struct {
	CredentialID      []byte
	AuthenticatorData []byte
	ClientDataJSON    []byte
	Signature         []byte
	UserHandle        []byte
	SignCount         uint32
}

// RequestOptions are the options for navigator.credentials.get that ask
// for challenge with user verification required; the browser offers the
// person's discoverable passkeys for this relying party.
func (rp *RP) RequestOptions(challenge []byte) map[string]any {
	return map[string]any{"challenge": base64.RawURLEncoding.EncodeToString(challenge), "rpId": rp.ID,
		"userVerification": "required", "timeout": 120000}
}

// VerifyAssertion checks response (the browser's PublicKeyCredential as
// JSON) against challenge for person p: the signature by one of p's
// passkeys, the challenge, the origin and relying party, user presence
// and verification, and a signature counter that went up (or stays zero
// for authenticators that keep none). It returns the assertion and which
// of p's passkeys made it, with its counter updated.
func (rp *RP) VerifyAssertion(p Person, challenge, response []byte) (Assertion, Credential, error) {
	parsed, err := protocol.ParseCredentialRequestResponseBytes(response)
	if err != nil {
		return Assertion{}, Credential{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	session := webauthn.SessionData{Challenge: base64.RawURLEncoding.EncodeToString(challenge), RelyingPartyID: rp.ID,
		UserID: p.Handle, UserVerification: protocol.VerificationRequired}
	c, err := rp.w.ValidateLogin(user{p}, session, parsed)
	if err != nil {
		return Assertion{}, Credential{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if !parsed.Response.AuthenticatorData.Flags.HasUserVerified() {
		return Assertion{}, Credential{}, fmt.Errorf("%w: the authenticator did not verify the user", ErrInvalid)
	}
	if c.Authenticator.CloneWarning {
		return Assertion{}, Credential{}, fmt.Errorf("%w: the signature counter did not go up (a replayed or cloned passkey)", ErrInvalid)
	}
	var used Credential
	for _, have := range p.Credentials {
		if bytes.Equal(have.ID, c.ID) {
			used = have
		}
	}
	used.SignCount = c.Authenticator.SignCount
	a := Assertion{CredentialID: parsed.RawID, AuthenticatorData: parsed.Raw.AssertionResponse.AuthenticatorData,
		ClientDataJSON: parsed.Raw.AssertionResponse.ClientDataJSON, Signature: parsed.Raw.AssertionResponse.Signature,
		UserHandle: parsed.Raw.AssertionResponse.UserHandle, SignCount: parsed.Response.AuthenticatorData.Counter}
	return a, used, nil
}

// VerifyReceipt re-checks a stored assertion: that it is publicKey's
// signature, with user verification, over challenge, for relying party
// rpID at origin. It is what `countersign audit verify` runs for every
// approval made with a passkey.
func VerifyReceipt(rpID, origin string, challenge []byte, a Assertion, publicKey []byte) error {
	raw := map[string]any{"id": base64.RawURLEncoding.EncodeToString(a.CredentialID),
		"rawId": base64.RawURLEncoding.EncodeToString(a.CredentialID), "type": "public-key",
		"response": map[string]any{"authenticatorData": base64.RawURLEncoding.EncodeToString(a.AuthenticatorData),
			"clientDataJSON": base64.RawURLEncoding.EncodeToString(a.ClientDataJSON),
			"signature":      base64.RawURLEncoding.EncodeToString(a.Signature),
			"userHandle":     base64.RawURLEncoding.EncodeToString(a.UserHandle)}}
	b, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(b)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	err = parsed.Verify(base64.RawURLEncoding.EncodeToString(challenge), rpID, "", []string{origin}, nil, nil,
		protocol.TopOriginExplicitVerificationMode, false, true, true, publicKey, protocol.SignaturePolicy{})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}
