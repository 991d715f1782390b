package db

import (
	"context"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// User is a person who signed in through the identity provider.
type User struct {
	ID            int64  `db:"id"`
	Issuer        string `db:"issuer"`
	Subject       string `db:"subject"`
	Email         string `db:"email"`
	EmailVerified bool   `db:"email_verified"`
	Name          string `db:"name"`
	// IsAdmin is decided on every request from the configured admin list
	// and the verified email; it is not stored.
	IsAdmin bool `db:"-"`
	// Groups are the identity provider's groups claim at sign-in: SignIn
	// makes the person's provider teams exactly these (not stored here).
	Groups     []string  `db:"-"`
	CreatedAt  time.Time `db:"created_at"`
	LastSeenAt time.Time `db:"last_seen_at"`
}

// DisplayName is the name to show for u.
func (u User) DisplayName() string {
	switch {
	case u.Name != "":
		return u.Name
	case u.Email != "":
		return u.Email
	}
	return u.Subject
}

// Actor is u as an audit actor.
func (u User) Actor() approval.Actor {
	return approval.Actor{Kind: approval.ActorUser, ID: u.Subject, Name: u.DisplayName()}
}

const userColumns = `id, issuer, subject, email, email_verified, name, created_at, last_seen_at`

// SignIn upserts the user identified by (issuer, subject) with the claims of
// a verified ID token and records the sign-in, in one transaction. u.IsAdmin
// is only noted in the audit line: the role is decided per request.
func (d *DB) SignIn(ctx context.Context, u User) (User, error) {
	var out User
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			INSERT INTO users (issuer, subject, email, email_verified, name)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (issuer, subject) DO UPDATE SET
				email = EXCLUDED.email, email_verified = EXCLUDED.email_verified,
				name = EXCLUDED.name, last_seen_at = now()
			RETURNING `+userColumns,
			u.Issuer, u.Subject, u.Email, u.EmailVerified, u.Name)
		if err != nil {
			return err
		}
		out, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[User])
		if err != nil {
			return err
		}
		out.IsAdmin = u.IsAdmin // as decided for this sign-in, for the audit line
		// The provider's teams are refreshed at every sign-in: a group it
		// no longer sends ends that membership now.
		if out.Groups, err = syncProviderTeams(ctx, tx, out.Subject, u.Groups); err != nil {
			return err
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{
			Actor: out.Actor(), Action: approval.ActionSignIn,
			Detail: map[string]any{"admin": out.IsAdmin, "teams": out.Groups},
		})
	})
	return out, translate("sign in", err)
}

// UserByID returns the user with id.
func (d *DB) UserByID(ctx context.Context, id int64) (User, error) {
	rows, err := d.Pool.Query(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`, id)
	if err != nil {
		return User{}, translate("user by id", err)
	}
	u, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[User])
	return u, translate("user by id", err)
}

// RecordSignOut writes the sign-out audit line.
func (d *DB) RecordSignOut(ctx context.Context, u User) error {
	return translate("sign out", d.InTx(ctx, func(tx pgx.Tx) error {
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: u.Actor(), Action: approval.ActionSignOut})
	}))
}
