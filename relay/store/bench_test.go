package store_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"tradebridge/relay/store"
)

// BenchmarkBrokerJournaledWrite is the exactly-once bookkeeping a write
// of the broker family pays in the relay's store: one BeginBrokerWrite
// before it runs and one FinishBrokerWrite after, both durable.
func BenchmarkBrokerJournaledWrite(b *testing.B) {
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateUser(ctx, store.User{ID: "u1", Name: "u1", Plan: "pro", CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	result := []byte(`{"orderId":"tv-1","order":{"orderId":"tv-1","orderState":"Filled","filled":1}}`)
	at := time.Date(2026, 11, 18, 15, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := "w-" + strconv.Itoa(i)
		if err := s.BeginBrokerWrite(ctx, "u1", id, [32]byte{byte(i)}, at); err != nil {
			b.Fatal(err)
		}
		if err := s.FinishBrokerWrite(ctx, "u1", id, result, "", ""); err != nil {
			b.Fatal(err)
		}
	}
}
