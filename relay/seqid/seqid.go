// Package seqid formats and reads the relay's sequence ids: a prefix and
// a decimal sequence number of the store ("act_42" for an activity log
// entry, "tva_7" for a TradingView alert), the ids callers page with.
// One spelling per number: no sign, no leading zeros.
package seqid

import (
	"strconv"
	"strings"
)

// Format returns the id of seq under prefix.
func Format(prefix string, seq int64) string { return prefix + strconv.FormatInt(seq, 10) }

// Parse returns the sequence number of id under prefix, and false when
// id is not one: another prefix, no digits, a leading zero, anything but
// digits after the prefix, or a number beyond int64.
func Parse(prefix, id string) (int64, bool) {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || rest == "" || len(rest) > 19 || rest[0] == '0' {
		return 0, false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}
