package agentstore_test

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"tradebridge/agent/agentstore"
)

// BenchmarkPut measures one committed Put of a small value (an engine's
// state record), as an engine writes on every fill.
func BenchmarkPut(b *testing.B) {
	s, err := agentstore.Open(agentstore.Options{Path: filepath.Join(b.TempDir(), agentstore.DefaultFileName)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	value := []byte(`{"orders":{"m-123456":"f-654321"},"filled":3,"at":"2026-03-02T14:30:00Z"}`)
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = "copier-" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := s.Put("copier", keys[i%len(keys)], value); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJournaledWrite is the exactly-once bookkeeping a write RPC pays
// for surviving an agent restart: one BeginWrite before it runs and one
// FinishWrite after, both committed.
func BenchmarkJournaledWrite(b *testing.B) {
	s, err := agentstore.Open(agentstore.Options{Path: filepath.Join(b.TempDir(), agentstore.DefaultFileName)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	result := []byte(`{"orderId":"sim-1","order":{"orderId":"sim-1","orderState":"Filled","filled":1}}`)
	at := time.Date(2026, 11, 18, 15, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := "w-" + strconv.Itoa(i)
		if err := s.BeginWrite(id, [32]byte{byte(i)}, at); err != nil {
			b.Fatal(err)
		}
		if err := s.FinishWrite(id, result, nil); err != nil {
			b.Fatal(err)
		}
	}
}
