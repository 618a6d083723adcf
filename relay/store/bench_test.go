package store_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"tradebridge/relay/store"
	"tradebridge/relay/store/storetest"
)

// benchEach runs fn as the sub-benchmarks "sqlite" and "postgres" (the
// latter when TB_TEST_POSTGRES is set), each on a fresh store holding
// the user u1.
func benchEach(b *testing.B, fn func(b *testing.B, s store.Store)) {
	for _, backend := range storetest.Backends {
		b.Run(backend, func(b *testing.B) {
			s := storetest.Open(b, backend)
			err := s.CreateUser(context.Background(), store.User{ID: "u1", Name: "u1", Plan: "pro", CreatedAt: time.Now()},
				store.Token{Hash: "h-api", UserID: "u1", Kind: "api", CreatedAt: time.Now()})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			fn(b, s)
		})
	}
}

// BenchmarkBrokerJournaledWrite is the exactly-once bookkeeping a write
// of the broker family pays in the relay's store: one BeginBrokerWrite
// before it runs and one FinishBrokerWrite after, both durable.
func BenchmarkBrokerJournaledWrite(b *testing.B) {
	result := []byte(`{"orderId":"tv-1","order":{"orderId":"tv-1","orderState":"Filled","filled":1}}`)
	at := time.Date(2026, 11, 18, 15, 0, 0, 0, time.UTC)
	benchEach(b, func(b *testing.B, s store.Store) {
		ctx := context.Background()
		for i := 0; b.Loop(); i++ {
			id := "w-" + strconv.Itoa(i)
			if err := s.BeginBrokerWrite(ctx, "u1", id, [32]byte{byte(i)}, at); err != nil {
				b.Fatal(err)
			}
			if err := s.FinishBrokerWrite(ctx, "u1", id, result, "", ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkKeyedWrite is what a trading write with an idempotency key
// pays in the store: its claim and its outcome, both durable.
func BenchmarkKeyedWrite(b *testing.B) {
	body := []byte(`{"success":true,"orderId":"o-1"}`)
	benchEach(b, func(b *testing.B, s store.Store) {
		ctx := context.Background()
		now := time.Now()
		for i := 0; b.Loop(); i++ {
			rec := store.Idempotent{UserID: "u1", Key: "k-" + strconv.Itoa(i), Fingerprint: "fp", CreatedAt: now}
			if _, claimed, err := s.ClaimIdempotent(ctx, rec, now.Add(-time.Minute), now.Add(-24*time.Hour)); err != nil || !claimed {
				b.Fatal(claimed, err)
			}
			rec.State, rec.Status, rec.Body, rec.UpdatedAt = store.IdemDone, 200, body, now
			if err := s.FinishIdempotent(ctx, rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLookupToken is the store's part of authenticating a request.
func BenchmarkLookupToken(b *testing.B) {
	benchEach(b, func(b *testing.B, s store.Store) {
		ctx := context.Background()
		for b.Loop() {
			if _, _, err := s.LookupToken(ctx, "h-api"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAcquireBrokerLease is a node renewing the lease of a user's
// broker instance.
func BenchmarkAcquireBrokerLease(b *testing.B) {
	benchEach(b, func(b *testing.B, s store.Store) {
		ctx := context.Background()
		for b.Loop() {
			if ok, err := s.AcquireBrokerLease(ctx, "u1", "node-a", time.Minute); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
}
