package db

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// Signer signs audit checkpoints with an Ed25519 key read from a file
// (COUNTERSIGN_AUDIT_SIGNING_KEY); the key never enters the database.
type Signer struct {
	key ed25519.PrivateKey
	// KeyID names the public key: the first 16 hex digits of its SHA-256.
	KeyID string
}

// String names the signer by its key id; the private key is never printed.
func (s *Signer) String() string {
	if s == nil {
		return "no audit signer"
	}
	return "audit signer " + s.KeyID
}

// GoString is String, so that %#v does not print the private key either.
func (s *Signer) GoString() string { return s.String() }

// Sign returns c signed: its key id set and its Signature over Message.
func (s *Signer) Sign(c Checkpoint) Checkpoint {
	c.SignedAt, c.KeyID = c.SignedAt.UTC(), s.KeyID
	c.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(s.key, c.Message()))
	return c
}

// Public is the signer's public key; nil for a nil signer.
func (s *Signer) Public() ed25519.PublicKey {
	if s == nil {
		return nil
	}
	return s.key.Public().(ed25519.PublicKey)
}

// KeyID is the name stored with each checkpoint for pub.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// GenerateSigningKey writes a new Ed25519 private key to path (mode 0600,
// PKCS #8 PEM) and its public key to path + ".pub" (PKIX PEM); it refuses to
// overwrite either.
func GenerateSigningKey(path string) (ed25519.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	if err := writeNew(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	if err := writeNew(path+".pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		return nil, err
	}
	return pub, nil
}

func writeNew(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// LoadSigner reads the private key at path.
func LoadSigner(path string) (*Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("db: audit signing key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, errors.New("db: audit signing key: not a PEM private key")
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("db: audit signing key: %w", err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, errors.New("db: audit signing key: not an Ed25519 key")
	}
	return &Signer{key: priv, KeyID: KeyID(priv.Public().(ed25519.PublicKey))}, nil
}

// LoadPublicKey reads a public key written by GenerateSigningKey.
func LoadPublicKey(path string) (ed25519.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("db: audit public key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		return nil, errors.New("db: audit public key: not a PEM public key")
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("db: audit public key: %w", err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, errors.New("db: audit public key: not an Ed25519 key")
	}
	return pub, nil
}
