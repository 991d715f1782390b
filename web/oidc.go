package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/countersign/countersign/handlers"
	"golang.org/x/oauth2"
)

// OIDC is the relying party: the provider is discovered once, at start-up,
// and reused for every sign-in.
type OIDC struct {
	issuer string
	groups string // the groups claim's name
	oauth  oauth2.Config
	client *http.Client
	log    *slog.Logger

	mu       sync.RWMutex
	verifier *oidc.IDTokenVerifier
}

// NewOIDC prepares a relying party for cfg; call Discover before use.
func NewOIDC(cfg Config, log *slog.Logger) *OIDC {
	return &OIDC{
		issuer: cfg.OIDCIssuer,
		groups: cfg.OIDCGroupsClaim,
		oauth: oauth2.Config{
			ClientID:     cfg.OIDCClientID,
			ClientSecret: cfg.OIDCClientSecret,
			RedirectURL:  cfg.BaseURL.String() + "/auth/callback",
			Scopes:       []string{oidc.ScopeOpenID, "email", "profile"},
		},
		client: &http.Client{Timeout: 15 * time.Second},
		log:    log,
	}
}

// Discover fetches the provider's configuration, retrying with backoff
// until it succeeds or ctx ends. Until then Ready is false.
func (o *OIDC) Discover(ctx context.Context) error {
	backoff := 250 * time.Millisecond
	for {
		err := o.discoverOnce(ctx)
		if err == nil {
			o.log.Info("identity provider discovered", "issuer", o.issuer)
			return nil
		}
		o.log.Warn("identity provider discovery failed; retrying", "issuer", o.issuer, "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

func (o *OIDC) discoverOnce(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, o.client), 15*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(ctx, o.issuer)
	if err != nil {
		return err
	}
	var meta struct {
		AuthMethods []string `json:"token_endpoint_auth_methods_supported"`
		Scopes      []string `json:"scopes_supported"`
	}
	_ = p.Claims(&meta)
	ep := p.Endpoint()
	// Send the client secret the way the provider says it takes it.
	switch {
	case len(meta.AuthMethods) == 0 || slices.Contains(meta.AuthMethods, "client_secret_basic") && !slices.Contains(meta.AuthMethods, "client_secret_post"):
		ep.AuthStyle = oauth2.AuthStyleInHeader
	default:
		ep.AuthStyle = oauth2.AuthStyleInParams
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.oauth.Endpoint = ep
	// Providers that list a "groups" scope send the groups claim only when
	// it is asked for; others send it unasked, and may refuse a scope they
	// do not know.
	if slices.Contains(meta.Scopes, "groups") && !slices.Contains(o.oauth.Scopes, "groups") {
		o.oauth.Scopes = append(o.oauth.Scopes, "groups")
	}
	o.verifier = p.Verifier(&oidc.Config{ClientID: o.oauth.ClientID})
	return nil
}

// Ready reports whether discovery has succeeded.
func (o *OIDC) Ready() bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.verifier != nil
}

// AuthCodeURL implements handlers.Authenticator.
func (o *OIDC) AuthCodeURL(state, nonce, verifier string) string {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.oauth.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier))
}

// Exchange implements handlers.Authenticator.
func (o *OIDC) Exchange(ctx context.Context, code, verifier string) (handlers.Identity, error) {
	o.mu.RLock()
	cfg, v := o.oauth, o.verifier
	o.mu.RUnlock()
	if v == nil {
		return handlers.Identity{}, errors.New("identity provider not discovered yet")
	}
	ctx = oidc.ClientContext(ctx, o.client)
	tok, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		return handlers.Identity{}, fmt.Errorf("exchange code: %w", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return handlers.Identity{}, errors.New("token response has no id_token")
	}
	idt, err := v.Verify(ctx, raw)
	if err != nil {
		return handlers.Identity{}, fmt.Errorf("verify id token: %w", err)
	}
	var claims struct {
		Email             string `json:"email"`
		EmailVerified     bool   `json:"email_verified"`
		Name              string `json:"name"`
		PreferredUsername string `json:"preferred_username"`
	}
	if err := idt.Claims(&claims); err != nil {
		return handlers.Identity{}, fmt.Errorf("read id token claims: %w", err)
	}
	name := claims.Name
	if name == "" {
		name = claims.PreferredUsername
	}
	var all map[string]json.RawMessage
	if err := idt.Claims(&all); err != nil {
		return handlers.Identity{}, fmt.Errorf("read id token claims: %w", err)
	}
	return handlers.Identity{
		Issuer: idt.Issuer, Subject: idt.Subject, Email: claims.Email, EmailVerified: claims.EmailVerified,
		Name: name, Nonce: idt.Nonce, Groups: groupsClaim(all[o.groups]),
	}, nil
}

// groupsClaim reads a groups claim: a list of strings (as most providers
// send it) or one string. Anything else, or no claim, is no groups: a
// person's provider teams then end at this sign-in.
func groupsClaim(raw json.RawMessage) []string {
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return list
	}
	var one string
	if json.Unmarshal(raw, &one) == nil && one != "" {
		return []string{one}
	}
	return nil
}
