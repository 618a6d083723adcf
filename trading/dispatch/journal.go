package dispatch

import (
	"encoding/json"
	"errors"
	"time"

	"tradebridge/protocol"
)

// Journal keeps the outcomes of writes across agent restarts, so that a
// write repeated after the agent crashed or restarted still runs at most
// once. The agent's state file implements it (agent/agentstore); without
// one, outcomes live in memory only.
//
// The dispatcher calls BeginWrite before a write runs and FinishWrite
// after it, and refuses to run a write whose BeginWrite failed: exactly once matters more
// than the write. A write that began and never finished (the agent died
// while it ran) is answered outcome_unknown when repeated.
type Journal interface {
	// BeginWrite records that the write id, with the fingerprint of its
	// function and arguments, starts at at. It returns once the record
	// is committed.
	BeginWrite(id string, fingerprint [32]byte, at time.Time) error
	// FinishWrite records the write's outcome: its encoded result, or its
	// error.
	FinishWrite(id string, result json.RawMessage, perr *protocol.Error) error
	// LoadWrites returns the records begun at or after since, oldest
	// first.
	LoadWrites(since time.Time) ([]JournalRecord, error)
	// PruneWrites forgets the records begun before before.
	PruneWrites(before time.Time) error
}

// ErrJournaled is what a Journal's BeginWrite returns (wrapped) for an id
// it holds already: the dispatcher then answers from that record (its
// memory had forgotten the write, the journal had not).
var ErrJournaled = errors.New("dispatch: the write id is in the journal already")

// JournalRecord is one write as a Journal recorded it.
type JournalRecord struct {
	ID          string
	Fingerprint [32]byte
	At          time.Time
	// Done is true once FinishWrite recorded the outcome: Result, or Err.
	Done   bool
	Result json.RawMessage
	Err    *protocol.Error
}
