package db

import (
	"context"
	"fmt"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// PairState is one (connector, tool) a playbook uses and where its
// pre-approval stands.
type PairState struct {
	approval.Pair
	ToolID           int64
	ToolDisplay      string
	ConnectorDisplay string
	Mode             approval.Mode
	Steps            []string
	Valid            bool   // a pre-approval holds now
	LapseReason      string // why the last one stopped holding; "" if never given
}

// Required reports whether the pair needs a pre-approval to run unattended.
func (p PairState) Required() bool { return p.Mode == approval.ModeRequireApproval }

// Missing reports whether the pair blocks enabling, scheduling and runs.
func (p PairState) Missing() bool { return p.Required() && !p.Valid }

// Label is the pair as a person reads it: "Connector · Tool".
func (p PairState) Label() string { return p.ConnectorDisplay + " · " + p.ToolDisplay }

// pairStates works out each pair's pre-approval from the premises that hold
// now: the playbook's fingerprint and owner, the tool's policy version.
func pairStates(ctx context.Context, q querier, p Playbook) ([]PairState, error) {
	states, err := pairStatesFor(ctx, q, []Playbook{p})
	return states[p.ID], err
}

// pairTool is what a pair's state needs of its tool.
type pairTool struct {
	ID               int64  `db:"id"`
	Connector        string `db:"connector"`
	Name             string `db:"name"`
	DisplayName      string `db:"display_name"`
	ConnectorDisplay string `db:"connector_display"`
	Mode             string `db:"mode"`
	PolicyVersion    int    `db:"policy_version"`
}

// givenPreApproval is the latest unrevoked pre-approval of one tool for one
// playbook.
type givenPreApproval struct {
	PlaybookID    string `db:"playbook_id"`
	ToolID        int64  `db:"tool_id"`
	Fingerprint   string `db:"fingerprint"`
	PolicyVersion int    `db:"policy_version"`
	OwnerSubject  string `db:"owner_subject"`
	Live          bool   `db:"live"`
	LapseReason   string `db:"lapse_reason"`
}

// pairStatesFor is pairStates for many playbooks at once, keyed by playbook
// id, in two statements whatever their number.
func pairStatesFor(ctx context.Context, q querier, list []Playbook) (map[string][]PairState, error) {
	out := make(map[string][]PairState, len(list))
	var ids, connectors, names []string
	seen := map[approval.Pair]bool{}
	for _, p := range list {
		ids = append(ids, p.ID)
		for _, pair := range p.Definition.Pairs() {
			if !seen[pair] {
				seen[pair] = true
				connectors, names = append(connectors, pair.Connector), append(names, pair.Tool)
			}
		}
	}
	if len(connectors) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `SELECT t.id, t.connector, t.name, t.display_name, c.display_name AS connector_display, t.mode, t.policy_version
		FROM unnest($1::text[], $2::text[]) AS want (connector, name)
		JOIN tools t ON t.connector = want.connector AND t.name = want.name JOIN connectors c ON c.name = t.connector`, connectors, names)
	if err != nil {
		return nil, err
	}
	toolList, err := pgx.CollectRows(rows, pgx.RowToStructByName[pairTool])
	if err != nil {
		return nil, err
	}
	tools := make(map[approval.Pair]pairTool, len(toolList))
	for _, t := range toolList {
		tools[approval.Pair{Connector: t.Connector, Tool: t.Name}] = t
	}
	rows, err = q.Query(ctx, `SELECT DISTINCT ON (pa.playbook_id, pa.tool_id) pa.playbook_id, pa.tool_id, pa.fingerprint,
			pa.policy_version, pa.owner_subject, pa.lapsed_at IS NULL AS live, pa.lapse_reason
		FROM playbook_preapprovals pa WHERE pa.playbook_id = ANY($1) AND pa.revoked_at IS NULL
		ORDER BY pa.playbook_id, pa.tool_id, pa.id DESC`, ids)
	if err != nil {
		return nil, err
	}
	givenList, err := pgx.CollectRows(rows, pgx.RowToStructByName[givenPreApproval])
	if err != nil {
		return nil, err
	}
	type key struct {
		playbook string
		tool     int64
	}
	given := make(map[key]givenPreApproval, len(givenList))
	for _, g := range givenList {
		given[key{g.PlaybookID, g.ToolID}] = g
	}
	for _, p := range list {
		for _, pair := range p.Definition.Pairs() {
			t, ok := tools[pair]
			if !ok {
				return nil, fmt.Errorf("pair states: %s is not in the catalog", pair)
			}
			st := PairState{Pair: pair, Steps: p.Definition.StepsUsing(pair), ToolID: t.ID, ToolDisplay: t.DisplayName,
				ConnectorDisplay: t.ConnectorDisplay, Mode: approval.Mode(t.Mode)}
			if g, ok := given[key{p.ID, t.ID}]; ok {
				reason := approval.LapseReason(
					approval.PreApprovalPremises{Fingerprint: g.Fingerprint, PolicyVersion: g.PolicyVersion, Owner: g.OwnerSubject},
					approval.PreApprovalPremises{Fingerprint: p.Fingerprint, PolicyVersion: t.PolicyVersion, Owner: p.OwnerSubject})
				st.Valid = g.Live && reason == ""
				if !st.Valid {
					st.LapseReason = g.LapseReason
					if st.LapseReason == "" {
						st.LapseReason = reason
					}
				}
			}
			out[p.ID] = append(out[p.ID], st)
		}
	}
	return out, nil
}

func missing(states []PairState) []PairState {
	var out []PairState
	for _, s := range states {
		if s.Missing() {
			out = append(out, s)
		}
	}
	return out
}
