package handlers

import (
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
)

// grantCapParam reads the policy form's longest standing grant, in
// seconds ("0" or absent: no limit). A value that is not a whole number of
// seconds within the allowed range is refused.
func grantCapParam(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, true
	}
	secs, err := strconv.ParseInt(s, 10, 64)
	if err != nil || secs < 0 || secs > int64(approval.MaxGrantCap/time.Second) {
		return 0, false
	}
	d := time.Duration(secs) * time.Second
	return d, approval.ValidGrantCap(d)
}
