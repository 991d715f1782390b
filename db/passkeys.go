package db

import (
	"context"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/countersign/countersign/passkey"
	"github.com/jackc/pgx/v5"
)

// Passkey is one of a person's passkeys (WebAuthn credentials).
type Passkey struct {
	ID             int64      `db:"id"`
	UserSubject    string     `db:"user_subject"`
	Name           string     `db:"name"`
	CredentialID   []byte     `db:"credential_id"`
	PublicKey      []byte     `db:"public_key"`
	SignCount      int64      `db:"sign_count"`
	UserVerified   bool       `db:"user_verified"`
	BackupEligible bool       `db:"backup_eligible"`
	BackupState    bool       `db:"backup_state"`
	AAGUID         []byte     `db:"aaguid"`
	CreatedAt      time.Time  `db:"created_at"`
	LastUsedAt     *time.Time `db:"last_used_at"`
}

const passkeyColumns = `id, user_subject, name, credential_id, public_key, sign_count, user_verified, backup_eligible,
	backup_state, aaguid, created_at, last_used_at`

// Credential is the passkey as the relying party verifies it.
func (p Passkey) Credential() passkey.Credential {
	return passkey.Credential{ID: p.CredentialID, PublicKey: p.PublicKey, SignCount: uint32(p.SignCount),
		UserVerified: p.UserVerified, BackupEligible: p.BackupEligible, BackupState: p.BackupState, AAGUID: p.AAGUID}
}

// PasskeyPerson is u as a WebAuthn account with passkeys list.
func PasskeyPerson(u User, list []Passkey) passkey.Person {
	p := passkey.Person{Handle: passkey.Handle(u.Issuer, u.Subject), Name: u.Email, DisplayName: u.DisplayName()}
	if p.Name == "" {
		p.Name = u.DisplayName()
	}
	for _, k := range list {
		p.Credentials = append(p.Credentials, k.Credential())
	}
	return p
}

// MaxPasskeyName is the longest name a passkey may have, in characters.
const MaxPasskeyName = 100

// PasskeysFor lists subject's passkeys (not removed), oldest first.
func (d *DB) PasskeysFor(ctx context.Context, subject string) ([]Passkey, error) {
	rows, err := d.Pool.Query(ctx, `SELECT `+passkeyColumns+` FROM passkeys WHERE user_subject = $1 AND removed_at IS NULL
		ORDER BY created_at, id`, subject)
	if err != nil {
		return nil, translate("list passkeys", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Passkey])
	return list, translate("list passkeys", err)
}

func livePasskeys(ctx context.Context, tx pgx.Tx, subject string, lock bool) ([]Passkey, error) {
	sql := `SELECT ` + passkeyColumns + ` FROM passkeys WHERE user_subject = $1 AND removed_at IS NULL ORDER BY id`
	if lock {
		sql += ` FOR UPDATE`
	}
	rows, err := tx.Query(ctx, sql, subject)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[Passkey])
}

// AddPasskey stores u's new passkey c under name, audited.
func (d *DB) AddPasskey(ctx context.Context, u User, name string, c passkey.Credential) (Passkey, error) {
	var out Passkey
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `INSERT INTO passkeys (user_subject, name, credential_id, public_key, sign_count, user_verified,
				backup_eligible, backup_state, aaguid)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+passkeyColumns,
			u.Subject, name, c.ID, c.PublicKey, int64(c.SignCount), c.UserVerified, c.BackupEligible, c.BackupState, nonNil(c.AAGUID))
		if err != nil {
			return err
		}
		if out, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Passkey]); err != nil {
			return err
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: u.Actor(), Action: approval.ActionPasskeyAdded,
			Detail: map[string]any{"passkey": name, "passkey_id": out.ID}})
	})
	return out, translate("add passkey", err)
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// RemovePasskey removes u's passkey id, audited. It approves nothing from
// then on; its public key stays for the receipts it signed. Another
// person's passkey is not found.
func (d *DB) RemovePasskey(ctx context.Context, u User, id int64) error {
	return translate("remove passkey", d.InTx(ctx, func(tx pgx.Tx) error {
		var name string
		err := tx.QueryRow(ctx, `UPDATE passkeys SET removed_at = now() WHERE id = $1 AND user_subject = $2 AND removed_at IS NULL
			RETURNING name`, id, u.Subject).Scan(&name)
		if err == pgx.ErrNoRows {
			return approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such passkey.")
		}
		if err != nil {
			return err
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: u.Actor(), Action: approval.ActionPasskeyRemoved,
			Detail: map[string]any{"passkey": name, "passkey_id": id}})
	}))
}

// ResetPasskeys removes every passkey of the person subject (an admin's
// recovery for a lost device), audited with the admin as the actor. It
// returns how many were removed.
func (d *DB) ResetPasskeys(ctx context.Context, actor approval.Actor, subject string) (int, error) {
	var n int
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE passkeys SET removed_at = now() WHERE user_subject = $1 AND removed_at IS NULL`, subject)
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: actor, Action: approval.ActionPasskeysReset,
			Detail: map[string]any{"person": subject, "removed": n}})
	})
	return n, translate("reset passkeys", err)
}

// PasskeyHolder is a person and how many passkeys they have, for the
// admin's passkeys screen.
type PasskeyHolder struct {
	Subject    string     `db:"subject"`
	Name       string     `db:"name"`
	Email      string     `db:"email"`
	Passkeys   int        `db:"passkeys"`
	LastUsedAt *time.Time `db:"last_used_at"`
}

// PasskeyHolders lists every known person with the number of passkeys they
// have (zero included), those with passkeys first.
func (d *DB) PasskeyHolders(ctx context.Context) ([]PasskeyHolder, error) {
	rows, err := d.Pool.Query(ctx, `SELECT u.subject, u.name, u.email, count(p.id)::int AS passkeys, max(p.last_used_at) AS last_used_at
		FROM users u LEFT JOIN passkeys p ON p.user_subject = u.subject AND p.removed_at IS NULL
		GROUP BY u.subject, u.name, u.email ORDER BY count(p.id) = 0, lower(u.name), u.subject`)
	if err != nil {
		return nil, translate("passkey holders", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[PasskeyHolder])
	return list, translate("passkey holders", err)
}

// ToolsRequiringPasskey names (display names) the tools whose policy
// requires a passkey to approve, for the warning before a person removes
// their last one.
func (d *DB) ToolsRequiringPasskey(ctx context.Context) ([]string, error) {
	rows, err := d.Pool.Query(ctx, `SELECT t.display_name FROM tools t JOIN connectors c ON c.name = t.connector
		WHERE t.proof = 'passkey' AND t.retired_at IS NULL AND c.deleted_at IS NULL ORDER BY t.display_name`)
	if err != nil {
		return nil, translate("tools requiring a passkey", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return list, translate("tools requiring a passkey", err)
}
