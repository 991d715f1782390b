package db

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// chosenScope is the scope of an "Always allow calls like this" grant: as
// data (nil for any other decision), and in words.
type chosenScope struct {
	scope approval.GrantScope
	data  []byte
	words string
}

// chooseScope proposes the scope for the item's call from its full
// argument text (kept while it is pending) and the tool's shell argument,
// and narrows it by the person's choices: what the browser posts only
// picks within what the server proposes, never wider.
func chooseScope(ctx context.Context, tx pgx.Tx, a Approval, choices []string) (chosenScope, error) {
	var raw []byte
	var shellArg string
	err := tx.QueryRow(ctx, `SELECT aa.arguments, t.shell_argument FROM approval_arguments aa JOIN tools t ON t.id = $2
		WHERE aa.approval_id = $1`, a.ID, a.ToolID).Scan(&raw, &shellArg)
	if errors.Is(err, pgx.ErrNoRows) {
		return chosenScope{}, approval.Errorf(approval.KindUnprocessable, "scope_invalid",
			"This call’s arguments are no longer kept, so no scope can be built from them: approve this call only, or reject it.")
	}
	if err != nil {
		return chosenScope{}, err
	}
	p := approval.ProposeScope(approval.ParseArguments(string(raw)), shellArg)
	s, words, err := approval.ChooseScope(p, choices)
	if err != nil {
		return chosenScope{}, err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return chosenScope{}, err
	}
	return chosenScope{scope: s, data: b, words: words}, nil
}

// ScopeProposal is what "Always allow calls like this" proposes for the
// owner's pending item (empty when its arguments are no longer kept or do
// not parse).
func (d *DB) ScopeProposal(ctx context.Context, a Approval) (approval.ScopeProposal, error) {
	var raw []byte
	var shellArg string
	err := d.Pool.QueryRow(ctx, `SELECT aa.arguments, t.shell_argument FROM approval_arguments aa JOIN tools t ON t.id = $2
		WHERE aa.approval_id = $1`, a.ID, a.ToolID).Scan(&raw, &shellArg)
	if errors.Is(err, pgx.ErrNoRows) {
		return approval.ScopeProposal{}, nil
	}
	if err != nil {
		return approval.ScopeProposal{}, translate("scope proposal", err)
	}
	return approval.ProposeScope(approval.ParseArguments(string(raw)), shellArg), nil
}
