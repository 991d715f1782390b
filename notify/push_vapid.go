package notify

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/mail"
	"net/url"
	"strings"
	"sync"

	"github.com/countersign/countersign/db"
)

// VAPID hands out the server's Web Push key pair: the configured one, or
// the pair kept in the database, created the first time it is needed.
type VAPID struct {
	db     *db.DB
	mu     sync.Mutex
	keys   db.VAPIDKeys
	loaded bool
}

// NewVAPID uses configured when it is not nil, else the stored pair.
func NewVAPID(store *db.DB, configured *db.VAPIDKeys) *VAPID {
	v := &VAPID{db: store}
	if configured != nil {
		v.keys, v.loaded = *configured, true
	}
	return v
}

// Keys returns the key pair, reading (or creating) it once.
func (v *VAPID) Keys(ctx context.Context) (db.VAPIDKeys, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.loaded {
		return v.keys, nil
	}
	k, err := v.db.EnsureVAPIDKeys(ctx, GenerateVAPIDKeys)
	if err != nil {
		return db.VAPIDKeys{}, err
	}
	v.keys, v.loaded = k, true
	return k, nil
}

// PublicKey returns the public half, as browsers take it in
// applicationServerKey.
func (v *VAPID) PublicKey(ctx context.Context) (string, error) {
	k, err := v.Keys(ctx)
	return k.PublicKey, err
}

// GenerateVAPIDKeys makes a fresh P-256 key pair.
func GenerateVAPIDKeys() (db.VAPIDKeys, error) {
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return db.VAPIDKeys{}, err
	}
	enc := base64.RawURLEncoding.EncodeToString
	return db.VAPIDKeys{PublicKey: enc(priv.PublicKey().Bytes()), PrivateKey: enc(priv.Bytes())}, nil
}

// Errors of ParseVAPIDKeys; they never repeat a key.
var (
	ErrVAPIDPublic   = errors.New("must be an uncompressed P-256 public key, base64url-encoded (87 characters)")
	ErrVAPIDPrivate  = errors.New("must be a P-256 private key, base64url-encoded (43 characters)")
	ErrVAPIDMismatch = errors.New("the private key does not belong to the public key")
)

// ParseVAPIDKeys checks a configured key pair: base64url (with or without
// padding), a valid P-256 point and scalar, and halves of one pair.
func ParseVAPIDKeys(public, private string) (db.VAPIDKeys, error) {
	pubBytes, err := decodeB64URL(public)
	if err != nil || len(pubBytes) != 65 {
		return db.VAPIDKeys{}, ErrVAPIDPublic
	}
	pub, err := ecdh.P256().NewPublicKey(pubBytes)
	if err != nil {
		return db.VAPIDKeys{}, ErrVAPIDPublic
	}
	privBytes, err := decodeB64URL(private)
	if err != nil || len(privBytes) != 32 {
		return db.VAPIDKeys{}, ErrVAPIDPrivate
	}
	priv, err := ecdh.P256().NewPrivateKey(privBytes)
	if err != nil {
		return db.VAPIDKeys{}, ErrVAPIDPrivate
	}
	if !bytes.Equal(priv.PublicKey().Bytes(), pub.Bytes()) {
		return db.VAPIDKeys{}, ErrVAPIDMismatch
	}
	enc := base64.RawURLEncoding.EncodeToString
	return db.VAPIDKeys{PublicKey: enc(pubBytes), PrivateKey: enc(privBytes)}, nil
}

func decodeB64URL(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// VAPIDSubject is who the push services may contact about this server
// (the JWT's "sub"): the sender address of the mails when there is one,
// else the public URL. It returns the value in the form webpush-go takes:
// a bare address (it adds "mailto:") or an https URL. An http URL (local
// development) is not a valid subject, so a placeholder address on the
// server's host stands in.
func VAPIDSubject(mailFrom string, base *url.URL) string {
	if a, err := mail.ParseAddress(mailFrom); err == nil {
		return a.Address
	}
	if base.Scheme == "https" {
		return base.String()
	}
	return "countersign@" + base.Hostname()
}
