package agent

import (
	"encoding/json"
	"sync"
	"time"

	"tradebridge/protocol"
	"tradebridge/trading/dispatch"
	"tradebridge/trading/engine"
)

// memState is the State of an agent run without a state file: everything
// in memory, forgotten when the process ends.
type memState struct {
	engine.MemStore
	mu  sync.Mutex
	cfg *protocol.Config
}

func newMemState() *memState { return &memState{MemStore: engine.NewMemStore()} }

func (s *memState) SaveConfig(cfg *protocol.Config) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg == nil || cfg.Version > s.cfg.Version {
		s.cfg = cfg
	}
	return nil
}

func (s *memState) LoadConfig() (*protocol.Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg, nil
}

// The journal of a memState records nothing: the dispatcher's own memory
// already holds the outcomes for as long as this state lives.

func (s *memState) BeginWrite(string, [32]byte, time.Time) error               { return nil }
func (s *memState) FinishWrite(string, json.RawMessage, *protocol.Error) error { return nil }
func (s *memState) LoadWrites(time.Time) ([]dispatch.JournalRecord, error)     { return nil, nil }
func (s *memState) PruneWrites(time.Time) error                                { return nil }
