package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/store"
)

func entry(kind, class, account string, at time.Time, ref string) store.ActivityRecord {
	return store.ActivityRecord{At: at, Kind: kind, Class: class, Account: account, SourceKind: "api", SourceID: "tok1",
		SourceName: "bot", Summary: kind + " on " + account, Detail: []byte(`{"fn":"PlaceOrder"}`), Ref: ref}
}

// An entry is appended once per Ref, listed newest first with the
// query's filters and paging, and read back exactly.
func TestActivityAppendList(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1", "u2"}, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		var seqs []int64
		for i, e := range []store.ActivityRecord{
			entry("order.placed", store.ActivityClassTrading, "Sim101", t0, ""),
			entry("order.refused", store.ActivityClassTrading, "Sim102", t0.Add(time.Second), "key:1"),
			entry("config.changed", store.ActivityClassAccount, "", t0.Add(2*time.Second), ""),
			entry("order.placed", store.ActivityClassTrading, "Sim101", t0.Add(3*time.Second), "key:2"),
		} {
			seq, inserted, err := s.AppendActivity(ctx, "u1", e)
			require.NoError(t, err, i)
			require.True(t, inserted, i)
			if len(seqs) > 0 {
				require.Greater(t, seq, seqs[len(seqs)-1], "seq grows")
			}
			seqs = append(seqs, seq)
		}
		seq, inserted, err := s.AppendActivity(ctx, "u1", entry("order.refused", store.ActivityClassTrading, "Sim102", t0.Add(time.Hour), "key:1"))
		require.NoError(t, err)
		require.False(t, inserted, "a second record of the same Ref is not written")
		require.Equal(t, seqs[1], seq, "the stored entry's seq")
		_, inserted, err = s.AppendActivity(ctx, "u2", entry("order.refused", store.ActivityClassTrading, "Sim102", t0, "key:1"))
		require.NoError(t, err)
		require.True(t, inserted, "Refs are per user")
		_, _, err = s.AppendActivity(ctx, "nobody", entry("order.placed", store.ActivityClassTrading, "", t0, ""))
		require.ErrorIs(t, err, store.ErrNotFound)
		_, _, err = s.AppendActivity(ctx, "u1", store.ActivityRecord{At: t0})
		require.Error(t, err, "a kind, a class and a source kind are required")

		got, err := s.ListActivity(ctx, "u1", store.ActivityQuery{Limit: 10})
		require.NoError(t, err)
		require.Len(t, got, 4)
		want := entry("order.placed", store.ActivityClassTrading, "Sim101", t0.Add(3*time.Second), "key:2")
		want.Seq = seqs[3]
		require.Equal(t, want, got[0], "newest first, read back exactly")
		require.Equal(t, []int64{seqs[3], seqs[2], seqs[1], seqs[0]}, seqsOf(got))

		for _, tc := range []struct {
			name string
			q    store.ActivityQuery
			want []int64
		}{
			{"limit", store.ActivityQuery{Limit: 2}, []int64{seqs[3], seqs[2]}},
			{"before", store.ActivityQuery{Before: seqs[2], Limit: 10}, []int64{seqs[1], seqs[0]}},
			{"account", store.ActivityQuery{Account: "Sim101", Limit: 10}, []int64{seqs[3], seqs[0]}},
			{"kinds", store.ActivityQuery{Kinds: []string{"order.refused", "config.changed"}, Limit: 10}, []int64{seqs[2], seqs[1]}},
			{"all filters", store.ActivityQuery{Before: seqs[3], Account: "Sim101", Kinds: []string{"order.placed"}, Limit: 10}, []int64{seqs[0]}},
			{"no limit", store.ActivityQuery{}, nil},
		} {
			got, err := s.ListActivity(ctx, "u1", tc.q)
			require.NoError(t, err, tc.name)
			require.Equal(t, tc.want, seqsOf(got), tc.name)
		}
		got, err = s.ListActivity(ctx, "nobody", store.ActivityQuery{Limit: 10})
		require.NoError(t, err)
		require.Empty(t, got)

		empty := entry("agent.connected", store.ActivityClassAccount, "", t0, "")
		empty.Detail = nil
		_, _, err = s.AppendActivity(ctx, "u2", empty)
		require.NoError(t, err)
		latest, err := s.LatestActivity(ctx, "u2", "agent.connected")
		require.NoError(t, err)
		require.Equal(t, []byte(`{}`), latest.Detail, "no detail is stored as {}")
		_, err = s.LatestActivity(ctx, "u1", "agent.connected")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func seqsOf(rs []store.ActivityRecord) []int64 {
	var out []int64
	for _, r := range rs {
		out = append(out, r.Seq)
	}
	return out
}

// Pruning forgets every user's entries older than the retention; trimming
// keeps the newest of one user's class.
func TestActivityPruneTrim(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1", "u2"}, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		for i := range 10 {
			_, _, err := s.AppendActivity(ctx, "u1", entry("order.placed", store.ActivityClassTrading, "Sim101", t0.Add(time.Duration(i)*time.Minute), ""))
			require.NoError(t, err)
		}
		for i := range 3 {
			_, _, err := s.AppendActivity(ctx, "u1", entry("config.changed", store.ActivityClassAccount, "", t0.Add(time.Duration(i)*time.Minute), ""))
			require.NoError(t, err)
			_, _, err = s.AppendActivity(ctx, "u2", entry("order.placed", store.ActivityClassTrading, "Sim101", t0.Add(time.Duration(i)*time.Minute), ""))
			require.NoError(t, err)
		}
		n, err := s.TrimActivity(ctx, "u1", store.ActivityClassTrading, 4)
		require.NoError(t, err)
		require.Equal(t, 6, n)
		got, err := s.ListActivity(ctx, "u1", store.ActivityQuery{Kinds: []string{"order.placed"}, Limit: 100})
		require.NoError(t, err)
		require.Len(t, got, 4)
		require.Equal(t, t0.Add(9*time.Minute), got[0].At)
		require.Equal(t, t0.Add(6*time.Minute), got[3].At, "the oldest went")
		n, err = s.TrimActivity(ctx, "u1", store.ActivityClassTrading, 4)
		require.NoError(t, err)
		require.Zero(t, n, "within the cap: nothing")
		n, err = s.TrimActivity(ctx, "u2", store.ActivityClassAccount, 0)
		require.NoError(t, err)
		require.Zero(t, n, "another class is not touched")
		_, err = s.TrimActivity(ctx, "u1", store.ActivityClassTrading, -1)
		require.Error(t, err)

		n, err = s.PruneActivity(ctx, t0.Add(90*time.Second))
		require.NoError(t, err)
		require.Equal(t, 4, n, "u1's two oldest account entries and u2's two oldest")
		got, err = s.ListActivity(ctx, "u1", store.ActivityQuery{Limit: 100})
		require.NoError(t, err)
		require.Len(t, got, 5)
		got, err = s.ListActivity(ctx, "u2", store.ActivityQuery{Limit: 100})
		require.NoError(t, err)
		require.Len(t, got, 1)
	})
}

// Several entries of several users are written in one transaction, in
// order: a recorded Ref and an unknown user are reported per entry and
// the others are written.
func TestActivityAppendMany(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1", "u2"}, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		_, _, err := s.AppendActivity(ctx, "u1", entry("order.placed", store.ActivityClassTrading, "Sim101", t0, "key:1"))
		require.NoError(t, err)
		got, err := s.AppendActivities(ctx, []store.ActivityAppend{
			{UserID: "u1", Record: entry("order.placed", store.ActivityClassTrading, "Sim101", t0, "key:1")},
			{UserID: "nobody", Record: entry("order.placed", store.ActivityClassTrading, "Sim101", t0, "key:9")},
			{UserID: "nobody", Record: entry("order.placed", store.ActivityClassTrading, "Sim101", t0, "")},
			{UserID: "u2", Record: entry("config.changed", store.ActivityClassAccount, "", t0, "")},
			{UserID: "u1", Record: entry("order.refused", store.ActivityClassTrading, "Sim101", t0, "key:2")},
		})
		require.NoError(t, err)
		require.Len(t, got, 5)
		require.False(t, got[0].Inserted)
		require.NoError(t, got[0].Err)
		require.ErrorIs(t, got[1].Err, store.ErrNotFound)
		require.ErrorIs(t, got[2].Err, store.ErrNotFound)
		require.True(t, got[3].Inserted)
		require.True(t, got[4].Inserted)
		require.Greater(t, got[4].Seq, got[3].Seq, "in order")
		u1, err := s.ListActivity(ctx, "u1", store.ActivityQuery{Limit: 10})
		require.NoError(t, err)
		require.Len(t, u1, 2)
		_, err = s.AppendActivities(ctx, []store.ActivityAppend{
			{UserID: "u1", Record: entry("order.placed", store.ActivityClassTrading, "Sim101", t0, "")},
			{UserID: "u1", Record: store.ActivityRecord{At: t0}},
		})
		require.Error(t, err, "an invalid entry refuses the whole batch")
		u1, err = s.ListActivity(ctx, "u1", store.ActivityQuery{Limit: 10})
		require.NoError(t, err)
		require.Len(t, u1, 2, "nothing written")
	})
}

// The retention's prune walks the log by seq, a chunk at a time: every
// entry older than the time goes, however many chunks they fill, and the
// newer stay.
func TestActivityPruneManyChunks(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1"}, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		var batch []store.ActivityAppend
		for i := range 2600 {
			at := t0.Add(time.Duration(i) * time.Second)
			batch = append(batch, store.ActivityAppend{UserID: "u1", Record: entry("order.placed", store.ActivityClassTrading, "Sim101", at, "")})
		}
		_, err := s.AppendActivities(ctx, batch)
		require.NoError(t, err)
		n, err := s.PruneActivity(ctx, t0.Add(2500*time.Second))
		require.NoError(t, err)
		require.Equal(t, 2500, n)
		left, err := s.ListActivity(ctx, "u1", store.ActivityQuery{Limit: 5000})
		require.NoError(t, err)
		require.Len(t, left, 100)
		require.True(t, left[99].At.Equal(t0.Add(2500*time.Second)), "the oldest left is the first not older")
		n, err = s.PruneActivity(ctx, t0.Add(2500*time.Second))
		require.NoError(t, err)
		require.Zero(t, n)
	})
}
