package db

import (
	"context"
	"errors"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// rowQuerier is the pool or a transaction, for one-row reads.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

var errNoSuchApproval = approval.Errorf(approval.KindNotFound, approval.CodeNotFound, "No such approval.")

// delegator is the person a delegate decides for: zero when the reviewer
// decides in their own right.
type delegator struct {
	Subject, Name string
}

// detail adds to an audit line's detail whom the actor decided for, so
// that the line names both: actor = the delegate, on_behalf_of = the
// person.
func (d delegator) detail(detail map[string]any) map[string]any {
	if d.Subject == "" {
		return detail
	}
	out := make(map[string]any, len(detail)+2)
	for k, v := range detail {
		out[k] = v
	}
	out["on_behalf_of"], out["on_behalf_of_name"] = d.Subject, d.Name
	return out
}

// decidingFor reads in whose place viewer decides item id
// (countersign_deciding_for): themselves (zero delegator), a person who
// named them delegate, or nobody (not found). A delegate decides single
// calls only: the standing answers would consent to later calls in the
// person's name, which the person never did.
func decidingFor(ctx context.Context, q rowQuerier, id, viewer string) (delegator, error) {
	var subject, name *string
	err := q.QueryRow(ctx, `SELECT s, (SELECT COALESCE(NULLIF(u.name, ''), NULLIF(u.email, ''), u.subject) FROM users u
			WHERE u.subject = s ORDER BY u.last_seen_at DESC LIMIT 1)
		FROM approvals a CROSS JOIN LATERAL countersign_deciding_for(a, $2) s WHERE a.id = $1`, id, viewer).Scan(&subject, &name)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && subject == nil {
		return delegator{}, errNoSuchApproval
	}
	if err != nil || *subject == viewer {
		return delegator{}, err
	}
	d := delegator{Subject: *subject, Name: *subject}
	if name != nil {
		d.Name = *name
	}
	return d, nil
}

// errDelegateStanding refuses a standing answer from a delegate.
var errDelegateStanding = approval.Errorf(approval.KindUnprocessable, approval.CodeNotOffered,
	"You decide this call for someone else: approve it once or reject it. Only they can allow calls like it for longer.")

// DecidingFor names, of the items ids, those viewer decides in someone
// else's place as a delegate: item id → that person's display name. Items
// viewer decides in their own right, or may not decide, are left out.
func (d *DB) DecidingFor(ctx context.Context, ids []string, viewer string) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := d.Pool.Query(ctx, `SELECT a.id::text, COALESCE((SELECT COALESCE(NULLIF(u.name, ''), NULLIF(u.email, ''), u.subject)
			FROM users u WHERE u.subject = s ORDER BY u.last_seen_at DESC LIMIT 1), s)
		FROM approvals a CROSS JOIN LATERAL countersign_deciding_for(a, $2) s
		WHERE a.id = ANY($1::uuid[]) AND s <> $2`, ids, viewer)
	if err != nil {
		return nil, translate("deciding for", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, translate("deciding for", err)
		}
		out[id] = name
	}
	return out, translate("deciding for", rows.Err())
}
