package db

import (
	"context"
	"fmt"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// CodeUnknownUser is the refusal of a call that would ask a person who has
// never signed in: nobody could see the item, and it would wait until it
// expired. The runtime most likely sent a wrong user.
const CodeUnknownUser approval.ReasonCode = "unknown_user"

// unknownUserMessage is the model-facing message of CodeUnknownUser.
const unknownUserMessage = "This call needs a person's approval, but the user it was sent for has never signed in to Countersign, " +
	"so nobody could answer it and it did not run. Tell the user to sign in to Countersign once; do not retry until then."

// mayAsk reports whether a pending item may be created for req.User: the
// user has signed in before, or key lets items wait for first-time users
// (api_keys.allow_first_time_users). It is read only where a person would
// be asked, so calls a policy allows or blocks cost nothing more; a user
// seen once is remembered, since a user row is never removed.
func (d *DB) mayAsk(ctx context.Context, q querier, key APIKey, user string) (bool, error) {
	if _, ok := d.knownUsers.Load(user); ok {
		return true, nil
	}
	rows, err := q.Query(ctx, `SELECT EXISTS (SELECT 1 FROM users WHERE subject = $1),
		COALESCE((SELECT allow_first_time_users FROM api_keys WHERE id = $2), false)`, user, key.ID)
	if err != nil {
		return false, fmt.Errorf("db: check user: %w", err)
	}
	type row struct {
		Known bool
		Allow bool
	}
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[row])
	if err != nil {
		return false, fmt.Errorf("db: check user: %w", err)
	}
	if r.Known {
		d.knownUsers.Store(user, struct{}{})
	}
	return r.Known || r.Allow, nil
}

// refuseUnknownUser turns a pending outcome for a user who may not be asked
// (mayAsk) into the unknown_user refusal; it reports whether it did.
func (d *DB) refuseUnknownUser(ctx context.Context, q querier, key APIKey, req CheckRequest, res *CheckResult) (bool, error) {
	if res.Outcome.Verdict != approval.Pending || key.TeamItem(req.User) {
		return false, nil // a team's item waits for the team's members
	}
	ok, err := d.mayAsk(ctx, q, key, req.User)
	if err != nil || ok {
		return false, err
	}
	res.Outcome = approval.Outcome{Verdict: approval.Deny, Code: CodeUnknownUser}
	res.Message = unknownUserMessage
	return true, nil
}

// SetAPIKeyFirstTimeUsers sets whether checks sent with key id may leave an
// item waiting for a user who has never signed in (otherwise they are
// refused with unknown_user), and records who changed it.
func (d *DB) SetAPIKeyFirstTimeUsers(ctx context.Context, actor approval.Actor, id int64, allow bool) error {
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		var name string
		if err := tx.QueryRow(ctx, `UPDATE api_keys SET allow_first_time_users = $2 WHERE id = $1 AND revoked_at IS NULL RETURNING name`,
			id, allow).Scan(&name); err != nil {
			return err
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: actor, Action: approval.ActionAPIKeyChanged,
			Detail: map[string]any{"key_id": id, "key_name": name, "allow": allow}})
	})
	return translate("set first-time users", err)
}

// FirstTimeWait is the items waiting for someone who has never signed in,
// per user and key, for the admins' overview.
type FirstTimeWait struct {
	User    string `db:"owner_subject"`
	KeyName string `db:"key_name"`
	Items   int    `db:"items"`
}

// WaitingForFirstTimeUsers lists pending items whose owner has never
// signed in (possible only under a key that allows first-time users).
func (d *DB) WaitingForFirstTimeUsers(ctx context.Context) ([]FirstTimeWait, error) {
	rows, err := d.Pool.Query(ctx, `
		SELECT a.owner_subject, k.name AS key_name, count(*)::int AS items
		FROM approvals a JOIN api_keys k ON k.id = a.api_key_id
		WHERE a.status = 'pending' AND a.expires_at > now()
		  AND NOT EXISTS (SELECT 1 FROM users u WHERE u.subject = a.owner_subject)
		GROUP BY a.owner_subject, k.name ORDER BY a.owner_subject, k.name LIMIT 100`)
	if err != nil {
		return nil, translate("waiting for first-time users", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[FirstTimeWait])
	return list, translate("waiting for first-time users", err)
}
