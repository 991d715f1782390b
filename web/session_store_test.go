package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"testing"

	"github.com/countersign/countersign/internal/testenv"
)

// TestSignOutStaysSignedOut is the race a browser runs into: a request
// (the inbox's event stream) loads the signed-in session, the person signs
// out in another request, and the first request saves its copy of the
// session afterwards, as scs does at the end of every request. The old
// token must stay signed out, whatever the late save sends; a token
// renewed at sign-in likewise; a live session is saved and found as
// before.
func TestSignOutStaysSignedOut(t *testing.T) {
	sm := testenv.NewEnv(t).Server.Sessions
	ctx := context.Background()

	// Signed in: a session with the user, saved under its token.
	signed, err := sm.Load(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	sm.Put(signed, "user_id", int64(7))
	token, _, err := sm.Commit(signed)
	if err != nil {
		t.Fatal(err)
	}
	// The event stream loads it; then the sign-out destroys it and starts
	// a fresh session for the flash.
	stream, err := sm.Load(ctx, token)
	if err != nil || sm.GetInt64(stream, "user_id") != 7 {
		t.Fatalf("the stream's session: %v, user %d", err, sm.GetInt64(stream, "user_id"))
	}
	out, err := sm.Load(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	if err := sm.Destroy(out); err != nil {
		t.Fatal(err)
	}
	if err := sm.RenewToken(out); err != nil {
		t.Fatal(err)
	}
	sm.Put(out, "flash", "You are signed out.")
	fresh, _, err := sm.Commit(out)
	if err != nil || fresh == token {
		t.Fatalf("sign-out: token %q (old %q), %v", fresh, token, err)
	}
	// The stream saves its copy after the sign-out.
	if _, _, err := sm.Commit(stream); err != nil {
		t.Fatal(err)
	}
	again, err := sm.Load(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	if sm.Exists(again, "user_id") {
		t.Fatal("the old token is signed in again after the sign-out")
	}
	// Nor does a late save through the store itself bring it back.
	if err := sm.Store.Commit(hashed(token), []byte("gob"), sm.Deadline(stream)); err != nil {
		t.Fatal(err)
	}
	if _, found, err := sm.Store.Find(hashed(token)); err != nil || found {
		t.Fatalf("found %v, %v", found, err)
	}
	// The fresh session is live and keeps its flash; the user is not in it.
	cur, err := sm.Load(ctx, fresh)
	if err != nil || sm.GetString(cur, "flash") != "You are signed out." || sm.Exists(cur, "user_id") {
		t.Fatalf("fresh session: %v, flash %q, user %v", err, sm.GetString(cur, "flash"), sm.Exists(cur, "user_id"))
	}
	// A token renewed at sign-in is refused too, and the renewed one works.
	anon, _ := sm.Load(ctx, fresh)
	if err := sm.RenewToken(anon); err != nil {
		t.Fatal(err)
	}
	sm.Put(anon, "user_id", int64(8))
	renewed, _, err := sm.Commit(anon)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sm.Commit(cur); err != nil { // a late save of the anonymous session
		t.Fatal(err)
	}
	if late, _ := sm.Load(ctx, fresh); sm.GetString(late, "flash") != "" {
		t.Fatal("the token renewed at sign-in came back")
	}
	if now, _ := sm.Load(ctx, renewed); sm.GetInt64(now, "user_id") != 8 {
		t.Fatal("the renewed session is not found")
	}
}

// hashed is token as scs stores it (HashTokenInStore).
func hashed(token string) string {
	h := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(h[:])
}
