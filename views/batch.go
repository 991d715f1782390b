package views

import "github.com/countersign/countersign/approval"

// BatchResultView is what a batch decision did, call by call.
type BatchResultView struct {
	BatchID  string
	Decision approval.Decision
	Outcomes []BatchOutcome
}

// BatchOutcome is what became of one call of a batch.
type BatchOutcome struct {
	ID          string
	ToolDisplay string
	Agent       string
	Gist        string
	Decided     bool
	Words       string // the outcome in a few words
	Tone        string
	Message     string // why it was not decided
}

// Done is how many calls the batch decided.
func (v BatchResultView) Done() int {
	n := 0
	for _, o := range v.Outcomes {
		if o.Decided {
			n++
		}
	}
	return n
}

// Summary says in one line what the batch did.
func (v BatchResultView) Summary() string {
	verb := "Approved"
	if v.Decision == approval.Reject {
		verb = "Rejected"
	}
	s := verb + " " + itoa(v.Done()) + " of " + plural(len(v.Outcomes), "call")
	if left := len(v.Outcomes) - v.Done(); left > 0 {
		s += "; " + itoa(left) + " not decided (see below)"
	}
	return s + "."
}
