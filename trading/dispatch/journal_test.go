package dispatch_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/dispatch"
)

// memJournal is a dispatch.Journal in memory; failBegin makes Begin fail.
type memJournal struct {
	mu        sync.Mutex
	recs      []dispatch.JournalRecord
	failBegin bool
}

func (j *memJournal) BeginWrite(id string, fp [32]byte, at time.Time) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failBegin {
		return errors.New("disk full")
	}
	for _, r := range j.recs {
		if r.ID == id {
			return fmt.Errorf("memJournal: %w", dispatch.ErrJournaled)
		}
	}
	j.recs = append(j.recs, dispatch.JournalRecord{ID: id, Fingerprint: fp, At: at})
	return nil
}

func (j *memJournal) FinishWrite(id string, result json.RawMessage, perr *protocol.Error) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i := range j.recs {
		if j.recs[i].ID == id {
			j.recs[i].Done, j.recs[i].Result, j.recs[i].Err = true, result, perr
		}
	}
	return nil
}

func (j *memJournal) LoadWrites(since time.Time) ([]dispatch.JournalRecord, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []dispatch.JournalRecord
	for _, r := range j.recs {
		if !r.At.Before(since) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (j *memJournal) PruneWrites(before time.Time) error { return nil }

// A write's outcome outlives the dispatcher through the journal: a new
// dispatcher (the agent restarted) answers a repeat from it and runs
// nothing; a write that began and never finished is outcome_unknown.
func TestJournalOutlivesTheDispatcher(t *testing.T) {
	t.Parallel()
	j := &memJournal{}
	p := &countingPlatform{}
	d := newDispatcherWith(t, p, dispatch.Options{Journal: j})
	first, perr := place(d, context.Background(), "j1", orderArgs)
	require.Nil(t, perr)
	require.Equal(t, int64(1), p.submits.Load())
	// The agent died while "j2" ran: it began and never finished.
	sum := sha256.New()
	sum.Write([]byte(protocol.FnPlaceOrder + "\x00" + orderArgs))
	var fp [32]byte
	sum.Sum(fp[:0])
	require.NoError(t, j.BeginWrite("j2", fp, time.Now()))

	again := newDispatcherWith(t, p, dispatch.Options{Journal: j})
	out, perr := place(again, context.Background(), "j1", orderArgs)
	require.Nil(t, perr)
	require.JSONEq(t, string(first), string(out))
	_, perr = place(again, context.Background(), "j2", orderArgs)
	require.NotNil(t, perr)
	require.Equal(t, protocol.CodeOutcomeUnknown, perr.Code)
	require.Equal(t, int64(1), p.submits.Load(), "nothing ran again")
}

// A write the journal cannot record is refused before it runs.
func TestJournalFailureRefusesTheWrite(t *testing.T) {
	t.Parallel()
	j := &memJournal{failBegin: true}
	p := &countingPlatform{}
	d := newDispatcherWith(t, p, dispatch.Options{Journal: j})
	_, perr := place(d, context.Background(), "j1", orderArgs)
	require.NotNil(t, perr)
	require.Equal(t, protocol.CodeInternal, perr.Code)
	require.Zero(t, p.submits.Load())
	j.failBegin = false
	_, perr = place(d, context.Background(), "j1", orderArgs)
	require.Nil(t, perr, "the refused write was not remembered: a retry runs it")
	require.Equal(t, int64(1), p.submits.Load())
}

// A write the dispatcher's memory forgot (beyond RememberMax) and the
// journal kept is answered from the journal, and runs nothing.
func TestJournalAnswersWhatMemoryForgot(t *testing.T) {
	t.Parallel()
	j := &memJournal{}
	p := &countingPlatform{}
	d := newDispatcherWith(t, p, dispatch.Options{Journal: j, RememberMax: 1})
	first, perr := place(d, context.Background(), "k1", orderArgs)
	require.Nil(t, perr)
	_, perr = place(d, context.Background(), "k2", orderArgs)
	require.Nil(t, perr)
	require.Equal(t, 1, dispatch.Remembered(d))
	again, perr := place(d, context.Background(), "k1", orderArgs)
	require.Nil(t, perr)
	require.JSONEq(t, string(first), string(again))
	require.Equal(t, int64(2), p.submits.Load(), "k1 did not run again")
	_, perr = place(d, context.Background(), "k2", `{"account":"A1","action":"Sell","instrument":"ES 12-26","orderType":"Market","quantity":1,"timeInForce":"Day"}`)
	require.Equal(t, protocol.CodeInvalidArgument, perr.Code, "the same id for another call")
}
