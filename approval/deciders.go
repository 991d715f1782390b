package approval

import (
	"fmt"
	"strings"
	"unicode"
)

// Deciders names who may decide a tool's calls (the approver rule).
type Deciders string

// Approver rules.
const (
	// DecidersOwner: the person whose agent asks (for a team's key: any
	// member of the key's team). The default.
	DecidersOwner Deciders = "owner"
	// DecidersTeam: any member of the rule's team.
	DecidersTeam Deciders = "team"
	// DecidersOwnerOrTeam: the owner, or any member of the rule's team.
	DecidersOwnerOrTeam Deciders = "owner_or_team"
	// DecidersQuorum: Quorum distinct members of the rule's team must
	// approve; the first rejection ends the item. The owner never counts
	// towards a quorum of more than one.
	DecidersQuorum Deciders = "quorum"
)

// MaxQuorum is the most approvals a quorum rule may ask for.
const MaxQuorum = 20

// DeciderRule is an approver rule: who decides, from which team, and how
// many of them.
type DeciderRule struct {
	Deciders Deciders
	Team     string // the rule's team; "" for DecidersOwner
	Quorum   int    // approvals needed (1 unless DecidersQuorum)
}

// OwnerRule is the default rule: the owner decides.
var OwnerRule = DeciderRule{Deciders: DecidersOwner, Quorum: 1}

// IsOwner reports whether only the owner decides under r. Standing grants
// are a person's own consent, so they are offered and honoured only then.
func (r DeciderRule) IsOwner() bool { return r.Deciders == DecidersOwner || r.Deciders == "" }

// Needed is how many distinct approvals the rule needs.
func (r DeciderRule) Needed() int {
	if r.Deciders == DecidersQuorum && r.Quorum > 1 {
		return r.Quorum
	}
	return 1
}

// Normal is r with the fields its kind does not use cleared: the owner rule
// names no team, and only a quorum asks for more than one approval.
func (r DeciderRule) Normal() DeciderRule {
	if r.Deciders == "" {
		r.Deciders = DecidersOwner
	}
	if r.Deciders == DecidersOwner {
		r.Team = ""
	}
	if r.Deciders != DecidersQuorum || r.Quorum < 1 {
		r.Quorum = 1
	}
	return r
}

// Validate says what is wrong with r, in words for the admin's form.
func (r DeciderRule) Validate() error {
	switch r.Deciders {
	case DecidersOwner, "":
		return nil
	case DecidersTeam, DecidersOwnerOrTeam, DecidersQuorum:
	default:
		return Errorf(KindUnprocessable, CodeInvalidRequest, "Choose who decides: the owner, a team, the owner or a team, or several of a team.")
	}
	if err := ValidTeamName(r.Team); err != nil {
		return Errorf(KindUnprocessable, CodeInvalidRequest, "Name the team that decides. %s", AsError(err).Message)
	}
	if r.Deciders == DecidersQuorum && (r.Quorum < 1 || r.Quorum > MaxQuorum) {
		return Errorf(KindUnprocessable, CodeInvalidRequest, "A quorum needs between 1 and %d approvals.", MaxQuorum)
	}
	return nil
}

// ValidTeamName checks a team's name: 1 to 100 characters, no hidden
// characters (HasHidden, NonASCIISpace), no control
// characters, no leading or trailing spaces.
func ValidTeamName(name string) error {
	switch {
	case name == "" || len([]rune(name)) > 100:
		return Errorf(KindUnprocessable, CodeInvalidRequest, "A team's name has 1 to 100 characters.")
	case strings.TrimSpace(name) != name:
		return Errorf(KindUnprocessable, CodeInvalidRequest, "A team's name cannot start or end with a space.")
	case strings.ContainsFunc(name, unicode.IsControl):
		return Errorf(KindUnprocessable, CodeInvalidRequest, "A team's name cannot hold line breaks or other control characters.")
	case HasHidden(name, SingleLine) || strings.ContainsFunc(name, NonASCIISpace):
		// A name that reads like another team's (a zero-width character,
		// a right-to-left override, a no-break space) could pass for it
		// on the policy form and the card.
		return Errorf(KindUnprocessable, CodeInvalidRequest,
			"A team's name cannot hold hidden characters (zero-width, direction-changing or non-ASCII spaces): %s.", hiddenOf(name))
	}
	return nil
}

// hiddenOf names the first hidden character of s, for a message.
func hiddenOf(s string) string {
	for _, r := range Visible(s, SingleLine).Runs {
		if r.Hidden {
			return r.Text + " " + r.Name
		}
	}
	for _, r := range s {
		if NonASCIISpace(r) {
			return fmt.Sprintf("⟨U+%04X⟩ space", r)
		}
	}
	return ""
}

// ChooseRule is the rule for one call: a policy's deciders condition, when
// set, chooses its rule only where it is true; where it is false the owner
// decides. A condition that cannot be evaluated chooses the rule (fail
// closed: more deciders, never fewer).
func ChooseRule(r DeciderRule, cond ConditionResult) DeciderRule {
	r = r.Normal()
	if cond == ConditionFalse {
		return OwnerRule
	}
	return r
}

// ForRule is p as it applies to a call whose approver rule is r, asked by
// a person's key (teamKey false) or a team's: standing approval (and "Always
// allow calls like this") is a person's own consent, offered and honoured
// only where that person alone decides.
func (p Policy) ForRule(r DeciderRule, teamKey bool) Policy {
	if !r.IsOwner() || teamKey {
		p.StandingApproval, p.Matchable = false, false
	}
	return p
}

// Words says who decides under r, for a card and the admin's overview:
// owner is the owner's display name ("" for a team's key, whose team is
// ownerTeam).
func (r DeciderRule) Words(owner, ownerTeam string) string {
	who := owner
	if who == "" && ownerTeam != "" {
		who = "any member of " + ownerTeam
	}
	switch r.Deciders {
	case DecidersTeam:
		return "any member of " + r.Team
	case DecidersOwnerOrTeam:
		return who + " or any member of " + r.Team
	case DecidersQuorum:
		if r.Quorum <= 1 {
			return "one member of " + r.Team
		}
		return fmt.Sprintf("%s of %s (the agent's owner does not count)", numberWord(r.Quorum), r.Team)
	}
	return who
}

// CallWords says who decides a call under r: the one wording of the card,
// the request page, Activity and the admins' Pending page, from the same
// rule as who sees the call. ownerTeam is the team of a team's key ("" for
// a person's key, whose owner decides under the owner rule): any member of
// that team decides where the owner would.
func (r DeciderRule) CallWords(ownerTeam string) string {
	owner := "the agent's owner"
	if ownerTeam != "" {
		owner = ""
	}
	return r.Normal().Words(owner, ownerTeam)
}

// numberWord spells small numbers, as people say them.
func numberWord(n int) string {
	words := []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
	if n >= 0 && n < len(words) {
		return words[n]
	}
	return fmt.Sprint(n)
}
