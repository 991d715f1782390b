package approval

import (
	"testing"
	"time"
)

func TestGrantLength(t *testing.T) {
	h := time.Hour
	cases := []struct {
		name, req string
		limit     time.Duration
		want      time.Duration
		err       bool
	}{
		{"NotSentNoCap", "", 0, 0, false},
		{"NotSentIsTheCap", "", 8 * h, 8 * h, false},
		{"UnderTheCap", "3600", 8 * h, h, false},
		{"AtTheCap", "28800", 8 * h, 8 * h, false},
		{"ErrOverTheCap", "86400", 8 * h, 0, true},
		{"ErrForeverUnderCap", "0", 8 * h, 0, true},
		{"ForeverNoCap", "0", 0, 0, false},
		{"ErrNegative", "-1", 0, 0, true},
		{"ErrNotSeconds", "1h", 0, 0, true},
		{"ErrHuge", "99999999999", 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := GrantLength(c.req, c.limit)
			if (err != nil) != c.err || got != c.want {
				t.Fatalf("GrantLength(%q, %v) = %v, %v", c.req, c.limit, got, err)
			}
			if err != nil && KindOf(err) != KindUnprocessable {
				t.Fatal("kind", KindOf(err))
			}
		})
	}
}

func TestGrantDurationsUpTo(t *testing.T) {
	h := time.Hour
	for _, c := range []struct {
		limit time.Duration
		want  []time.Duration
	}{
		{0, []time.Duration{h, 8 * h, 24 * h, 168 * h, 0}},
		{8 * h, []time.Duration{h, 8 * h}},
		{2 * h, []time.Duration{h, 2 * h}},
		{30 * time.Minute, []time.Duration{30 * time.Minute}},
	} {
		got := GrantDurationsUpTo(c.limit)
		if len(got) != len(c.want) {
			t.Fatalf("%v: %v", c.limit, got)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("%v: %v", c.limit, got)
			}
		}
	}
	if DurationWords(7*24*h) != "7 days" || DurationWords(h) != "1 hour" || DurationWords(0) != "until revoked" {
		t.Fatal("words")
	}
}

func TestDefaultStanding(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		name     string
		a        Annotations
		standing *bool
		want     bool
	}{
		{"DestructiveHintTrue", Annotations{DestructiveHint: &yes}, nil, false},
		{"UnknownBehaviour", Annotations{}, nil, false},
		{"UnknownEvenIfCatalogSaysYes", Annotations{}, &yes, false},
		{"DestructiveByDefaultOnly", Annotations{OpenWorldHint: &no}, nil, true},
		{"NotDestructive", Annotations{DestructiveHint: &no}, nil, true},
		{"CatalogSaysNo", Annotations{DestructiveHint: &no}, &no, false},
		{"DestructiveEvenIfCatalogSaysYes", Annotations{DestructiveHint: &yes}, &yes, false},
	}
	for _, c := range cases {
		if got := DefaultPolicy(c.a, c.standing).StandingApproval; got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}
