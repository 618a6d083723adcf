package dispatch

import (
	"container/list"
	"encoding/json"
	"sync"
	"time"

	"tradebridge/protocol"
)

// outcome is the recorded result of one write, by request id.
type outcome struct {
	id          string
	fingerprint [32]byte // of function name and arguments
	at          time.Time
	done        chan struct{} // closed when result and err are set
	result      json.RawMessage
	err         *protocol.Error
}

// outcomes remembers recent write outcomes, bounded in count and age.
type outcomes struct {
	mu    sync.Mutex
	byID  map[string]*list.Element
	order *list.List // oldest first
	max   int
	ttl   time.Duration
	now   func() time.Time
}

func newOutcomes(max int, ttl time.Duration, now func() time.Time) *outcomes {
	return &outcomes{byID: make(map[string]*list.Element), order: list.New(), max: max, ttl: ttl, now: now}
}

// claim returns the outcome recorded for id, and whether the caller is the
// first with this id and so must run the write and close done.
func (s *outcomes) claim(id string, fp [32]byte) (*outcome, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expire(now)
	if e, ok := s.byID[id]; ok {
		return e.Value.(*outcome), false
	}
	o := &outcome{id: id, fingerprint: fp, at: now, done: make(chan struct{})}
	s.byID[id] = s.order.PushBack(o)
	for s.order.Len() > s.max {
		s.evict(s.order.Front())
	}
	return o, true
}

func (s *outcomes) expire(now time.Time) {
	for e := s.order.Front(); e != nil; e = s.order.Front() {
		if now.Sub(e.Value.(*outcome).at) < s.ttl {
			return
		}
		s.evict(e)
	}
}

func (s *outcomes) evict(e *list.Element) {
	s.order.Remove(e)
	delete(s.byID, e.Value.(*outcome).id)
}

// forget drops o, a claim whose write never ran.
func (s *outcomes) forget(o *outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byID[o.id]; ok && e.Value.(*outcome) == o {
		s.evict(e)
	}
}

// load fills the outcomes with the journal's records of the last ttl. A
// write that began and never finished (the agent stopped while it ran)
// is answered outcome_unknown: it may or may not have been placed.
func (s *outcomes) load(j Journal) error {
	recs, err := j.LoadWrites(s.now().Add(-s.ttl))
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		if _, dup := s.byID[r.ID]; dup {
			continue
		}
		o := &outcome{id: r.ID, fingerprint: r.Fingerprint, at: r.At, done: make(chan struct{})}
		if r.Done {
			o.result, o.err = r.Result, r.Err
		} else {
			o.err = outcomeUnknown()
		}
		close(o.done)
		s.byID[r.ID] = s.order.PushBack(o)
		for s.order.Len() > s.max {
			s.evict(s.order.Front())
		}
	}
	return nil
}

func (s *outcomes) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}
