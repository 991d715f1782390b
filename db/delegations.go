package db

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// Delegation is a person's "while you're away": their delegate decides
// their items until EndsAt, unless it was ended early (EndedAt).
type Delegation struct {
	ID              int64      `db:"id"`
	PersonSubject   string     `db:"person_subject"`
	PersonName      string     `db:"person_name"`
	DelegateSubject string     `db:"delegate_subject"`
	DelegateName    string     `db:"delegate_name"`
	StartsAt        time.Time  `db:"starts_at"`
	EndsAt          time.Time  `db:"ends_at"`
	EndedAt         *time.Time `db:"ended_at"`
	EndedBy         string     `db:"ended_by"`
	// Active is whether it holds now, by the database's clock.
	Active bool `db:"active"`
}

// delegationSelect reads delegations with both people's names. "Active" is
// the same test the decide predicate makes: started, not ended early, and
// before its end.
const delegationSelect = `SELECT d.id, p.subject AS person_subject,
	COALESCE(NULLIF(p.name, ''), NULLIF(p.email, ''), p.subject) AS person_name,
	g.subject AS delegate_subject, COALESCE(NULLIF(g.name, ''), NULLIF(g.email, ''), g.subject) AS delegate_name,
	d.starts_at, d.ends_at, d.ended_at, d.ended_by,
	(d.ended_at IS NULL AND d.starts_at <= now() AND d.ends_at > now()) AS active
	FROM delegations d JOIN users p ON p.id = d.person_id JOIN users g ON g.id = d.delegate_id`

var errNoSuchDelegate = approval.Errorf(approval.KindUnprocessable, approval.CodeInvalidDelegation,
	"Nobody with that email address has signed in to Countersign yet. Your delegate needs to sign in once first.")

// StartDelegation names the person with delegateEmail (who must have
// signed in, with that verified address) person's delegate until until.
// Nobody delegates to themselves. A delegation still open is ended by the
// new one; both changes are audited in the same transaction.
func (d *DB) StartDelegation(ctx context.Context, person User, delegateEmail string, until time.Time) (Delegation, error) {
	var out Delegation
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		var now time.Time
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
			return err
		}
		if err := approval.CheckDelegationEnd(until, now); err != nil {
			return err
		}
		var delegateID int64
		var delegateSubject string
		err := tx.QueryRow(ctx, `SELECT id, subject FROM users WHERE lower(email) = lower($1) AND email_verified AND email <> ''
			ORDER BY last_seen_at DESC LIMIT 1`, delegateEmail).Scan(&delegateID, &delegateSubject)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNoSuchDelegate
		}
		if err != nil {
			return err
		}
		if delegateID == person.ID || delegateSubject == person.Subject {
			return approval.Errorf(approval.KindUnprocessable, approval.CodeInvalidDelegation,
				"You cannot name yourself: choose someone who decides for you while you are away.")
		}
		if err := endOpenDelegations(ctx, tx, person.Actor(), `d.person_id = $1`, person.ID); err != nil {
			return err
		}
		var id int64
		if err := tx.QueryRow(ctx, `INSERT INTO delegations (person_id, delegate_id, person_subject, delegate_subject, ends_at)
			VALUES ($1, $2, $3, $4, $5) RETURNING id`, person.ID, delegateID, person.Subject, delegateSubject, until).Scan(&id); err != nil {
			return err
		}
		if out, err = delegationByID(ctx, tx, id); err != nil {
			return err
		}
		if err := RecordAudit(ctx, tx, approval.AuditEvent{Actor: person.Actor(), Action: approval.ActionDelegationStarted,
			Detail: map[string]any{"person": out.PersonSubject, "delegate": out.DelegateSubject,
				"delegate_name": out.DelegateName, "until": out.EndsAt.UTC().Format(time.RFC3339)}}); err != nil {
			return err
		}
		// The delegate's open inbox re-reads what they may decide.
		return notify(ctx, tx, Change{Owner: out.DelegateSubject})
	})
	return out, translate("start delegation", err)
}

// EndDelegation ends delegation id early. A person ends their own; an
// admin (asAdmin) ends anyone's. One that is not open — already ended,
// past its end, or someone else's — is not found.
func (d *DB) EndDelegation(ctx context.Context, actor User, id int64, asAdmin bool) error {
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		where, args := `d.id = $1 AND d.person_id = $2`, []any{id, actor.ID}
		if asAdmin {
			where, args = `d.id = $1`, []any{id}
		}
		n, err := endDelegations(ctx, tx, actor.Actor(), where+` AND d.ends_at > now()`, args...)
		if err == nil && n == 0 {
			err = approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such delegation.")
		}
		return err
	})
	return translate("end delegation", err)
}

// endOpenDelegations ends the open delegations where says, auditing those
// that still held.
func endOpenDelegations(ctx context.Context, tx pgx.Tx, actor approval.Actor, where string, args ...any) error {
	_, err := endDelegations(ctx, tx, actor, where, args...)
	return err
}

// endDelegations sets ended_at on the open delegations matching where
// (over delegations d) and audits each that had not run out by itself.
func endDelegations(ctx context.Context, tx pgx.Tx, actor approval.Actor, where string, args ...any) (int, error) {
	rows, err := tx.Query(ctx, `UPDATE delegations u SET ended_at = LEAST(now(), u.ends_at), ended_by = $`+strconv.Itoa(len(args)+1)+`
		WHERE u.id IN (SELECT d.id FROM delegations d WHERE d.ended_at IS NULL AND `+where+` ORDER BY d.id FOR UPDATE)
		RETURNING u.id, u.ends_at > now()`, append(args, actor.Name)...)
	if err != nil {
		return 0, err
	}
	type ended struct {
		id   int64
		held bool
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ended, error) {
		var e ended
		return e, r.Scan(&e.id, &e.held)
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range list {
		if !e.held {
			continue // it had run out already: nothing ends now
		}
		n++
		dl, err := delegationByID(ctx, tx, e.id)
		if err != nil {
			return n, err
		}
		if err := RecordAudit(ctx, tx, approval.AuditEvent{Actor: actor, Action: approval.ActionDelegationEnded,
			Detail: map[string]any{"person": dl.PersonSubject, "delegate": dl.DelegateSubject, "delegate_name": dl.DelegateName,
				"was_until": dl.EndsAt.UTC().Format(time.RFC3339)}}); err != nil {
			return n, err
		}
		if err := notify(ctx, tx, Change{Owner: dl.DelegateSubject}); err != nil {
			return n, err
		}
	}
	return n, nil
}

func delegationByID(ctx context.Context, tx pgx.Tx, id int64) (Delegation, error) {
	rows, err := tx.Query(ctx, delegationSelect+` WHERE d.id = $1`, id)
	if err != nil {
		return Delegation{}, err
	}
	return pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Delegation])
}

// DelegationOf is person's delegation that holds now; ok is false when
// there is none.
func (d *DB) DelegationOf(ctx context.Context, personID int64) (Delegation, bool, error) {
	list, err := d.delegations(ctx, ` WHERE d.person_id = $1 AND d.ended_at IS NULL AND d.ends_at > now() ORDER BY d.id DESC LIMIT 1`, personID)
	if err != nil || len(list) == 0 {
		return Delegation{}, false, translate("delegation of", err)
	}
	return list[0], true, nil
}

// DelegationsTo lists the delegations that make delegateID decide for
// someone now.
func (d *DB) DelegationsTo(ctx context.Context, delegateID int64) ([]Delegation, error) {
	list, err := d.delegations(ctx, ` WHERE d.delegate_id = $1 AND d.ended_at IS NULL AND d.starts_at <= now() AND d.ends_at > now()
		ORDER BY d.ends_at, d.id`, delegateID)
	return list, translate("delegations to", err)
}

// DelegationsLimit is the most ended delegations the admin screen lists.
const DelegationsLimit = 50

// AllDelegations lists, for admins, every delegation that holds now (the
// one ending first on top) and then the last ended ones, newest first.
func (d *DB) AllDelegations(ctx context.Context) (open, ended []Delegation, err error) {
	if open, err = d.delegations(ctx, ` WHERE d.ended_at IS NULL AND d.ends_at > now() ORDER BY d.ends_at, d.id`); err != nil {
		return nil, nil, translate("list delegations", err)
	}
	ended, err = d.delegations(ctx, ` WHERE d.ended_at IS NOT NULL OR d.ends_at <= now()
		ORDER BY COALESCE(d.ended_at, d.ends_at) DESC, d.id DESC LIMIT $1`, DelegationsLimit)
	return open, ended, translate("list delegations", err)
}

func (d *DB) delegations(ctx context.Context, where string, args ...any) ([]Delegation, error) {
	rows, err := d.Pool.Query(ctx, delegationSelect+where, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[Delegation])
}
