package engine

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"time"

	"tradebridge/protocol"
)

// NewReportID returns a new activity report id: 32 hex digits, the first
// 12 the current Unix time in milliseconds (so ids sort by when they were
// made) and the rest 80 random bits, unique across agent restarts and
// across the agents of one user.
func NewReportID() string {
	var b [16]byte
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(time.Now().UnixMilli()))
	copy(b[:6], ms[2:])
	_, _ = rand.Read(b[6:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// NewActivity builds an engine's activity report: a new report id
// (NewReportID), At at the engine's time (UTC, to the millisecond), the
// kind (one of protocol.ActivityKinds), the account ("" when none
// applies), the source, a one-line summary and detail, which is encoded as
// JSON (a map or a struct of the keys the kind documents; nil is {}).
func NewActivity(at time.Time, kind, account string, src protocol.ActivitySource, summary string, detail any) protocol.ActivityEntry {
	raw := json.RawMessage(`{}`)
	if detail != nil {
		if b, err := json.Marshal(detail); err == nil {
			raw = b
		}
	}
	return protocol.ActivityEntry{
		ID: NewReportID(), At: at.UTC().Truncate(time.Millisecond), Kind: kind, Account: account,
		Source: src, Summary: protocol.CutActivitySummary(summary), Detail: raw,
	}
}

// FlattenDetail is the detail of a flatten an engine ran (monitor.tripped,
// killSwitch.changed): the closing orders it placed, the working orders it
// cancelled, and the error that stopped it ("" when it succeeded).
type FlattenDetail struct {
	OrderIDs          []string `json:"orderIds"`
	CancelledOrderIDs []string `json:"cancelledOrderIds"`
	Error             string   `json:"error,omitempty"`
}

// NewFlattenDetail returns the detail of a flatten with result res and
// error err (its text, which never holds a secret).
func NewFlattenDetail(res protocol.FlattenResult, err error) FlattenDetail {
	d := FlattenDetail{OrderIDs: res.OrderIDs, CancelledOrderIDs: res.CancelledOrderIDs}
	if d.OrderIDs == nil {
		d.OrderIDs = []string{}
	}
	if d.CancelledOrderIDs == nil {
		d.CancelledOrderIDs = []string{}
	}
	if err != nil {
		d.Error = err.Error()
	}
	return d
}
