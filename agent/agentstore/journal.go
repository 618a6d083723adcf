package agentstore

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"tradebridge/protocol"
	"tradebridge/trading/dispatch"
)

// Errors of the journal of write outcomes.
var (
	// ErrJournalDuplicate is returned by BeginWrite for a write id the journal
	// already holds: running the write again could run it twice.
	// It matches dispatch.ErrJournaled, so the dispatcher answers the
	// repeat from the record.
	ErrJournalDuplicate = fmt.Errorf("agentstore: %w", dispatch.ErrJournaled)
	// ErrJournalNotBegun is returned by FinishWrite for a write id the journal
	// does not hold (never begun, or pruned).
	ErrJournalNotBegun = errors.New("agentstore: the write id is not in the journal")
	// ErrJournalFinished is returned by FinishWrite for a write whose outcome
	// is already recorded; the first outcome stays.
	ErrJournalFinished = errors.New("agentstore: the write's outcome is already recorded")
)

// The state file keeps the dispatcher's journal of write outcomes: a
// Store is a dispatch.Journal. Records are kept until pruned.
var _ dispatch.Journal = (*Store)(nil)

// BeginWrite records that the write id, with fingerprint, starts at at. The
// record is committed when BeginWrite returns nil. An id already in the
// journal is refused with ErrJournalDuplicate.
func (s *Store) BeginWrite(id string, fingerprint [32]byte, at time.Time) error {
	r, err := s.db.Exec("INSERT INTO journal (id, fingerprint, at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
		id, fingerprint[:], nanos(at))
	if err != nil {
		return fmt.Errorf("agentstore: journal begin: %w", err)
	}
	// A known id inserts no row.
	n, err := r.RowsAffected()
	if err != nil {
		return fmt.Errorf("agentstore: journal begin: %w", err)
	}
	if n == 0 {
		return ErrJournalDuplicate
	}
	return nil
}

// FinishWrite records the outcome of the write id: result, or perr.
func (s *Store) FinishWrite(id string, result json.RawMessage, perr *protocol.Error) error {
	var code, detail sql.NullString
	if perr != nil {
		code = sql.NullString{String: perr.Code, Valid: true}
		detail = sql.NullString{String: perr.Detail, Valid: true}
	}
	var res []byte
	if result != nil {
		res = []byte(result)
	}
	r, err := s.db.Exec("UPDATE journal SET done = 1, result = ?, err_code = ?, err_detail = ? WHERE id = ? AND done = 0",
		res, code, detail, id)
	if err != nil {
		return fmt.Errorf("agentstore: journal finish: %w", err)
	}
	if n, err := r.RowsAffected(); err != nil {
		return fmt.Errorf("agentstore: journal finish: %w", err)
	} else if n == 1 {
		return nil
	}
	var done bool
	err = s.db.QueryRow("SELECT done FROM journal WHERE id = ?", id).Scan(&done)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ErrJournalNotBegun
	case err != nil:
		return fmt.Errorf("agentstore: journal finish: %w", err)
	}
	return ErrJournalFinished
}

// LoadWrites returns the records begun at or after since, oldest first (in the
// order begun, for records of the same instant).
func (s *Store) LoadWrites(since time.Time) ([]dispatch.JournalRecord, error) {
	rows, err := s.db.Query(
		"SELECT id, fingerprint, at, done, result, err_code, err_detail FROM journal WHERE at >= ? ORDER BY at, seq",
		nanos(since))
	if err != nil {
		return nil, fmt.Errorf("agentstore: journal load: %w", err)
	}
	defer rows.Close()
	var out []dispatch.JournalRecord
	for rows.Next() {
		var (
			r            dispatch.JournalRecord
			fp, result   []byte
			at           int64
			code, detail sql.NullString
		)
		if err := rows.Scan(&r.ID, &fp, &at, &r.Done, &result, &code, &detail); err != nil {
			return nil, fmt.Errorf("agentstore: journal load: %w", err)
		}
		if len(fp) != len(r.Fingerprint) {
			return nil, fmt.Errorf("agentstore: journal load: record %q has a fingerprint of %d bytes", r.ID, len(fp))
		}
		copy(r.Fingerprint[:], fp)
		r.At = time.Unix(0, at).UTC()
		if result != nil {
			r.Result = json.RawMessage(result)
		}
		if code.Valid {
			r.Err = &protocol.Error{Code: code.String, Detail: detail.String}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("agentstore: journal load: %w", err)
	}
	return out, nil
}

// PruneWrites forgets the records begun before before.
func (s *Store) PruneWrites(before time.Time) error {
	if _, err := s.db.Exec("DELETE FROM journal WHERE at < ?", nanos(before)); err != nil {
		return fmt.Errorf("agentstore: journal prune: %w", err)
	}
	return nil
}

// nanos returns t in nanoseconds since 1970, clamped to int64 (the zero
// Time is the smallest).
func nanos(t time.Time) int64 {
	switch {
	case t.Before(minNanos):
		return math.MinInt64
	case t.After(maxNanos):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var (
	minNanos = time.Unix(0, math.MinInt64)
	maxNanos = time.Unix(0, math.MaxInt64)
)
