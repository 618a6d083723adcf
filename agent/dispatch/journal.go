package dispatch

import (
	"encoding/json"
	"time"

	"tradebridge/protocol"
)

// Journal keeps the outcomes of writes across agent restarts, so that a
// write repeated after the agent crashed or restarted still runs at most
// once. The agent's state file implements it (agent/agentstore); without
// one, outcomes live in memory only.
//
// The dispatcher calls Begin before a write runs and Finish after it, and
// refuses to run a write whose Begin failed: exactly once matters more
// than the write. A write that began and never finished (the agent died
// while it ran) is answered outcome_unknown when repeated.
type Journal interface {
	// Begin records that the write id, with the fingerprint of its
	// function and arguments, starts at at.
	Begin(id string, fingerprint [32]byte, at time.Time) error
	// Finish records the write's outcome: its encoded result, or its
	// error.
	Finish(id string, result json.RawMessage, perr *protocol.Error) error
	// Load returns the records begun at or after since, oldest first.
	Load(since time.Time) ([]JournalRecord, error)
	// Prune forgets the records begun before before.
	Prune(before time.Time) error
}

// JournalRecord is one write as a Journal recorded it.
type JournalRecord struct {
	ID          string
	Fingerprint [32]byte
	At          time.Time
	// Done is true once Finish recorded the outcome: Result, or Err.
	Done   bool
	Result json.RawMessage
	Err    *protocol.Error
}
