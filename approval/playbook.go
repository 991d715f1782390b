package approval

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Pair is a (connector, tool) a playbook step uses.
type Pair struct {
	Connector string `json:"connector"`
	Tool      string `json:"tool"`
}

// String is "connector · tool".
func (p Pair) String() string { return p.Connector + " · " + p.Tool }

// WorkType is the kind of work a step does, with its version.
type WorkType struct {
	ID      string `json:"id"`
	Version string `json:"version"`
}

// Position is where a step sits on the editing canvas: layout only.
type Position struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// Step is one step of a playbook.
type Step struct {
	ID           string   `json:"id"`
	Title        string   `json:"title"`
	Instructions string   `json:"instructions"`
	WorkType     WorkType `json:"work_type"`
	Tools        []Pair   `json:"tools"`
	Position     Position `json:"position"`
}

// Definition is what a playbook does.
type Definition struct {
	Name         string          `json:"name"`
	Instructions string          `json:"instructions"`
	Settings     json.RawMessage `json:"settings,omitempty"`
	Steps        []Step          `json:"steps"`
}

// Validate checks a definition's shape; the caller checks the tools exist.
func (d Definition) Validate() error {
	if strings.TrimSpace(d.Name) == "" {
		return Errorf(KindInvalid, CodeInvalidRequest, "The playbook needs a name.")
	}
	if len(d.Steps) == 0 {
		return Errorf(KindInvalid, CodeInvalidRequest, "The playbook needs at least one step.")
	}
	seen := map[string]bool{}
	for i, s := range d.Steps {
		if s.ID == "" || seen[s.ID] {
			return Errorf(KindInvalid, CodeInvalidRequest, "steps[%d].id must be present and unique.", i)
		}
		seen[s.ID] = true
		if s.WorkType.ID == "" || s.WorkType.Version == "" {
			return Errorf(KindInvalid, CodeInvalidRequest, "steps[%d].work_type needs an id and a version.", i)
		}
		for j, p := range s.Tools {
			if p.Connector == "" || p.Tool == "" {
				return Errorf(KindInvalid, CodeInvalidRequest, "steps[%d].tools[%d] needs a connector and a tool.", i, j)
			}
		}
	}
	if len(d.Settings) > 0 {
		v := jsontext.Value(d.Settings)
		if !v.IsValid() || v.Kind() != '{' {
			return Errorf(KindInvalid, CodeInvalidRequest, "settings must be a JSON object.")
		}
		if field := inexactNumber(v); field != "" {
			return Errorf(KindInvalid, CodeInvalidRequest, "%s: a number that cannot be represented exactly; send it as a string", field)
		}
	}
	return nil
}

// Pairs lists the (connector, tool) pairs the steps use, once each, in
// order of first use.
func (d Definition) Pairs() []Pair {
	seen := map[Pair]bool{}
	var out []Pair
	for _, s := range d.Steps {
		for _, p := range s.Tools {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// StepsUsing lists the titles of the steps that use p.
func (d Definition) StepsUsing(p Pair) []string {
	var out []string
	for _, s := range d.Steps {
		for _, q := range s.Tools {
			if q == p {
				out = append(out, s.Title)
				break
			}
		}
	}
	return out
}

// Fingerprint is the SHA-256 of the canonical (RFC 8785) definition without
// its layout: moving a step on the canvas keeps it; changing instructions,
// settings, step order, tools or a work type's version changes it.
func (d Definition) Fingerprint() (string, error) {
	stripped := d
	stripped.Steps = make([]Step, len(d.Steps))
	copy(stripped.Steps, d.Steps)
	for i := range stripped.Steps {
		stripped.Steps[i].Position = Position{}
	}
	b, err := json.Marshal(struct {
		Name         string          `json:"name"`
		Instructions string          `json:"instructions"`
		Settings     json.RawMessage `json:"settings,omitempty"`
		Steps        []stepNoLayout  `json:"steps"`
	}{stripped.Name, stripped.Instructions, stripped.Settings, noLayout(stripped.Steps)})
	if err != nil {
		return "", err
	}
	v := jsontext.Value(b)
	if err := v.Canonicalize(); err != nil {
		return "", fmt.Errorf("fingerprint: %w", err)
	}
	sum := sha256.Sum256(v)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// inexactNumber names the first number in settings that RFC 8785 would
// round, or "": the fingerprint canonicalises settings, so two such numbers
// (12345678901234567890 and ...999, or 1e400 and 2e400) would share one and
// changing one into the other would lapse nothing.
func inexactNumber(settings jsontext.Value) string {
	dec := jsontext.NewDecoder(bytes.NewReader(settings))
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return "" // the end, or invalid JSON, which the fingerprint refuses
		}
		if tok.Kind() == '0' && !ExactNumber(tok.String()) {
			return "settings" + strings.ReplaceAll(string(dec.StackPointer()), "/", ".")
		}
	}
}

type stepNoLayout struct {
	ID           string   `json:"id"`
	Title        string   `json:"title"`
	Instructions string   `json:"instructions"`
	WorkType     WorkType `json:"work_type"`
	Tools        []Pair   `json:"tools"`
}

func noLayout(steps []Step) []stepNoLayout {
	out := make([]stepNoLayout, len(steps))
	for i, s := range steps {
		out[i] = stepNoLayout{s.ID, s.Title, s.Instructions, s.WorkType, s.Tools}
	}
	return out
}

// Why a pre-approval lapsed, in the words the playbook page uses.
const (
	LapsePolicy  = "Permission settings changed — previous approval expired"
	LapseContent = "Playbook content changed — previous approval expired"
	LapseOwner   = "Owner changed — previous approval expired"
)

// LapseCause is why a pre-approval lapsed, as the end of a sentence
// ("… lapsed because permission settings changed").
func LapseCause(reason string) string {
	switch reason {
	case LapsePolicy:
		return "permission settings changed"
	case LapseContent:
		return "the playbook's content changed"
	case LapseOwner:
		return "the owner changed"
	}
	return "what it was given under changed"
}

// CodePlaybookDisabled refuses a run of a playbook that is not enabled.
const CodePlaybookDisabled = "playbook_disabled"

// PreApprovalPremises are what a pre-approval was given under, or what
// holds now.
type PreApprovalPremises struct {
	Fingerprint   string
	PolicyVersion int
	Owner         string
}

// LapseReason says why a pre-approval given under `given` does not hold
// under `now`, or "" when it holds. When several premises changed, the
// owner comes first, then the content, then the policy.
func LapseReason(given, now PreApprovalPremises) string {
	switch {
	case given.Owner != now.Owner:
		return LapseOwner
	case given.Fingerprint != now.Fingerprint:
		return LapseContent
	case given.PolicyVersion != now.PolicyVersion:
		return LapsePolicy
	}
	return ""
}
