package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/store"
)

// delivery returns a pending delivery of an entry to dst, due at t0.
func delivery(id, user, dst string, seq int64, kind string) store.AlertDelivery {
	return store.AlertDelivery{ID: id, UserID: user, DestinationID: dst, EntrySeq: seq, Kind: kind,
		Body: []byte(`{"id":"` + id + `"}`), NextAt: t0, CreatedAt: t0}
}

// A destination gets one delivery per entry; a claimed delivery is
// leased to one node until it finishes, and a finished one is not
// claimed again.
func TestAlertDeliveryQueueClaimFinish(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1", "u2"}, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		st, err := s.QueueAlertDelivery(ctx, delivery("dlv_1", "u1", "alr_a", 7, "monitor.tripped"), store.AlertWindow{})
		require.NoError(t, err)
		require.Equal(t, store.AlertPending, st)
		st, err = s.QueueAlertDelivery(ctx, delivery("dlv_2", "u1", "alr_a", 7, "monitor.tripped"), store.AlertWindow{})
		require.ErrorIs(t, err, store.ErrConflict, "the same entry to the same destination")
		require.Equal(t, store.AlertPending, st)
		_, err = s.QueueAlertDelivery(ctx, delivery("dlv_3", "u1", "alr_b", 7, "monitor.tripped"), store.AlertWindow{})
		require.NoError(t, err, "another destination gets its own")
		_, err = s.QueueAlertDelivery(ctx, delivery("dlv_4", "nobody", "alr_c", 1, "monitor.tripped"), store.AlertWindow{})
		require.ErrorIs(t, err, store.ErrNotFound)

		dst, err := s.DueAlertDestinations(ctx, t0, 10)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"alr_a", "alr_b"}, dst)
		dst, err = s.DueAlertDestinations(ctx, t0.Add(-time.Second), 10)
		require.NoError(t, err)
		require.Empty(t, dst, "nothing is due before its time")

		got, err := s.ClaimAlertDeliveries(ctx, "alr_a", "node-a", t0, time.Hour, 5)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, "dlv_1", got[0].ID)
		require.JSONEq(t, `{"id":"dlv_1"}`, string(got[0].Body))
		again, err := s.ClaimAlertDeliveries(ctx, "alr_a", "node-b", t0, time.Hour, 5)
		require.NoError(t, err)
		require.Empty(t, again, "leased to node-a")

		d := got[0]
		d.State, d.Attempts, d.NextAt, d.LastError, d.UpdatedAt = store.AlertPending, 1, t0.Add(time.Minute), "http 500", t0
		require.ErrorIs(t, s.FinishAlertAttempt(ctx, "node-b", d), store.ErrNotFound, "not node-b's lease")
		require.NoError(t, s.FinishAlertAttempt(ctx, "node-a", d))
		got, err = s.ClaimAlertDeliveries(ctx, "alr_a", "node-b", t0, time.Hour, 5)
		require.NoError(t, err)
		require.Empty(t, got, "retried only at its next time")
		got, err = s.ClaimAlertDeliveries(ctx, "alr_a", "node-b", t0.Add(time.Minute), time.Hour, 5)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, 1, got[0].Attempts)
		require.Equal(t, "http 500", got[0].LastError)
		d = got[0]
		d.State, d.Attempts, d.UpdatedAt = store.AlertSent, 2, t0.Add(time.Minute)
		require.NoError(t, s.FinishAlertAttempt(ctx, "node-b", d))
		got, err = s.ClaimAlertDeliveries(ctx, "alr_a", "node-a", t0.Add(time.Hour), time.Hour, 5)
		require.NoError(t, err)
		require.Empty(t, got, "a sent delivery is done")

		one, err := s.AlertDelivery(ctx, "u1", "dlv_1")
		require.NoError(t, err)
		require.Equal(t, store.AlertSent, one.State)
		require.Equal(t, 2, one.Attempts)
		_, err = s.AlertDelivery(ctx, "u2", "dlv_1")
		require.ErrorIs(t, err, store.ErrNotFound, "another user's delivery")
		list, err := s.AlertDeliveries(ctx, "u1", "alr_a", 10)
		require.NoError(t, err)
		require.Len(t, list, 1)

		n, err := s.PruneAlertDeliveries(ctx, t0.Add(2*time.Minute))
		require.NoError(t, err)
		require.Equal(t, 1, n, "the sent one; the pending one stays")
	})
}

// An expired lease is claimed by another node.
func TestAlertDeliveryLeaseExpires(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1"}, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		_, err := s.QueueAlertDelivery(ctx, delivery("dlv_1", "u1", "alr_a", 1, "copier.halted"), store.AlertWindow{})
		require.NoError(t, err)
		got, err := s.ClaimAlertDeliveries(ctx, "alr_a", "node-a", t0, 20*time.Millisecond, 1)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Eventually(t, func() bool {
			got, err := s.ClaimAlertDeliveries(ctx, "alr_a", "node-b", t0, time.Hour, 1)
			return err == nil && len(got) == 1
		}, 5*time.Second, 10*time.Millisecond)
		require.ErrorIs(t, s.FinishAlertAttempt(ctx, "node-a", got[0]), store.ErrNotFound, "node-a lost its lease")
	})
}

// Past the window's limit, deliveries are folded and the window's summary
// is created once, due at the window's end; the folded ones are counted
// by kind.
func TestAlertDeliveryWindowFolds(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1"}, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		w := store.AlertWindow{Max: 2, Start: t0, End: t0.Add(time.Minute), SummaryID: "dlv_sum"}
		kinds := []string{"order.refused", "order.refused", "order.refused", "trading.blocked", "order.refused"}
		var states []string
		for i, k := range kinds {
			st, err := s.QueueAlertDelivery(ctx, delivery(fmt.Sprintf("dlv_%d", i), "u1", "alr_a", int64(i+1), k), w)
			require.NoError(t, err)
			states = append(states, st)
		}
		require.Equal(t, []string{store.AlertPending, store.AlertPending, store.AlertFolded, store.AlertFolded, store.AlertFolded}, states)
		folded, err := s.FoldedAlertKinds(ctx, "alr_a", w.Start, w.End)
		require.NoError(t, err)
		require.Equal(t, map[string]int{"order.refused": 2, "trading.blocked": 1}, folded)

		due, err := s.ClaimAlertDeliveries(ctx, "alr_a", "n", t0, time.Hour, 10)
		require.NoError(t, err)
		require.Len(t, due, 2, "the summary waits for the window's end")
		sum, err := s.ClaimAlertDeliveries(ctx, "alr_a", "n", w.End, time.Hour, 10)
		require.NoError(t, err)
		require.Len(t, sum, 1)
		require.Equal(t, "dlv_sum", sum[0].ID)
		require.Equal(t, "alert.summary", sum[0].Kind)

		// The next window starts afresh.
		w2 := store.AlertWindow{Max: 2, Start: w.End, End: w.End.Add(time.Minute), SummaryID: "dlv_sum2"}
		d := delivery("dlv_next", "u1", "alr_a", 99, "order.refused")
		d.CreatedAt = w.End
		st, err := s.QueueAlertDelivery(ctx, d, w2)
		require.NoError(t, err)
		require.Equal(t, store.AlertPending, st)
	})
}

// Two nodes claiming at once never both take a delivery.
func TestAlertDeliveryClaimOnce(t *testing.T) {
	t.Parallel()
	eachShared(t, []string{"u1"}, func(t *testing.T, stores []store.Store) {
		ctx := context.Background()
		const n = 20
		for i := range n {
			_, err := stores[0].QueueAlertDelivery(ctx, delivery(fmt.Sprintf("dlv_%d", i), "u1", "alr_a", int64(i+1), "monitor.tripped"), store.AlertWindow{})
			require.NoError(t, err)
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range n {
					got, err := s.ClaimAlertDeliveries(ctx, "alr_a", fmt.Sprintf("node-%d", i), t0, time.Hour, 3)
					if err != nil {
						continue // SQLite's busy writer: the loop tries again
					}
					mu.Lock()
					for _, d := range got {
						seen[d.ID]++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		require.Len(t, seen, n)
		for id, c := range seen {
			require.Equal(t, 1, c, id)
		}
	})
}
