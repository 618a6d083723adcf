package store_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/store"
)

// A user's webhook is created once, whoever creates it first; it is found
// by its id with its user, and a rotation replaces its key.
func TestWebhookCreateLookupRotate(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1", "u2"}, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		_, err := s.Webhook(ctx, "u1")
		require.ErrorIs(t, err, store.ErrNotFound)
		var wg sync.WaitGroup
		got := make([]store.Webhook, 4)
		created := make([]bool, 4)
		errs := make([]error, 4)
		for i := range got {
			wg.Go(func() {
				got[i], created[i], errs[i] = s.CreateWebhook(ctx, store.Webhook{UserID: "u1", ID: "wh_" + string(rune('a'+i)),
					KeyHash: "h", KeySealed: "sealed", CreatedAt: t0})
			})
		}
		wg.Wait()
		n := 0
		for i := range got {
			require.NoError(t, errs[i])
			require.Equal(t, got[0], got[i], "every caller gets the one webhook")
			if created[i] {
				n++
			}
		}
		require.Equal(t, 1, n, "one creation")
		w := got[0]
		require.Equal(t, t0, w.CreatedAt)
		require.Equal(t, t0, w.RotatedAt)

		lw, u, err := s.LookupWebhook(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, w, lw)
		require.Equal(t, "u1", u.ID)
		_, _, err = s.LookupWebhook(ctx, "wh_none")
		require.ErrorIs(t, err, store.ErrNotFound)

		rw, err := s.RotateWebhook(ctx, "u1", "h2", "sealed2", t0.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, w.ID, rw.ID)
		require.Equal(t, "h2", rw.KeyHash)
		require.Equal(t, "sealed2", rw.KeySealed)
		require.Equal(t, t0.Add(time.Hour), rw.RotatedAt)
		_, err = s.RotateWebhook(ctx, "u2", "h", "s", t0)
		require.ErrorIs(t, err, store.ErrNotFound)

		_, _, err = s.CreateWebhook(ctx, store.Webhook{UserID: "nobody", ID: "wh_x", KeyHash: "h", KeySealed: "s", CreatedAt: t0})
		require.ErrorIs(t, err, store.ErrNotFound)
		_, _, err = s.CreateWebhook(ctx, store.Webhook{UserID: "u2", ID: w.ID, KeyHash: "h", KeySealed: "s", CreatedAt: t0})
		require.ErrorIs(t, err, store.ErrConflict, "an id is one user's")
	})
}

// The alerts are listed newest first and paged, changed only from the
// statuses asked, counted by rate id, found overdue and pruned.
func TestWebhookAlerts(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1", "u2"}, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		var seqs []int64
		for i, a := range []store.WebhookAlert{
			{UserID: "u1", ReceivedAt: t0, Text: "command=PLACE;", Command: "PLACE", Accounts: []byte(`["Sim101"]`),
				Destination: "desktop", Status: store.WebhookExecuted, Results: []byte(`[{"account":"Sim101","orderIds":["1"]}]`),
				RateID: "r1", UpdatedAt: t0},
			{UserID: "u1", ReceivedAt: t0.Add(time.Second), Text: "delay=5", Status: store.WebhookScheduled,
				DueAt: t0.Add(6 * time.Second), UpdatedAt: t0.Add(time.Second)},
			{UserID: "u1", ReceivedAt: t0.Add(2 * time.Second), Text: "x", Status: store.WebhookFailed, Reason: "unknown field: x",
				UpdatedAt: t0.Add(2 * time.Second), RateID: "r1"},
			{UserID: "u2", ReceivedAt: t0.Add(3 * time.Second), Text: "y", Status: store.WebhookBlocked, UpdatedAt: t0, RateID: "r1"},
		} {
			seq, err := s.AddWebhookAlert(ctx, a)
			require.NoError(t, err, i)
			seqs = append(seqs, seq)
		}
		_, err := s.AddWebhookAlert(ctx, store.WebhookAlert{UserID: "nobody", Status: store.WebhookFailed, ReceivedAt: t0})
		require.ErrorIs(t, err, store.ErrNotFound)

		page, err := s.ListWebhookAlerts(ctx, "u1", 0, 2)
		require.NoError(t, err)
		require.Len(t, page, 2)
		require.Equal(t, seqs[2], page[0].Seq)
		require.Equal(t, seqs[1], page[1].Seq)
		require.Equal(t, `[]`, string(page[0].Accounts), "no accounts is []")
		require.Equal(t, t0.Add(6*time.Second), page[1].DueAt)
		page, err = s.ListWebhookAlerts(ctx, "u1", page[1].Seq, 2)
		require.NoError(t, err)
		require.Len(t, page, 1)
		first := page[0]
		require.Equal(t, "PLACE", first.Command)
		require.JSONEq(t, `["Sim101"]`, string(first.Accounts))
		require.JSONEq(t, `[{"account":"Sim101","orderIds":["1"]}]`, string(first.Results))
		require.True(t, first.DueAt.IsZero())

		n, err := s.CountWebhookAlerts(ctx, "u1", "r1", t0)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		n, err = s.CountWebhookAlerts(ctx, "u1", "r1", t0.Add(time.Second))
		require.NoError(t, err)
		require.Equal(t, 1, n)

		over, err := s.OverdueWebhookAlerts(ctx, t0.Add(7*time.Second), 10)
		require.NoError(t, err)
		require.Len(t, over, 1)
		require.Equal(t, seqs[1], over[0].Seq)
		over, err = s.OverdueWebhookAlerts(ctx, t0.Add(6*time.Second), 10)
		require.NoError(t, err)
		require.Empty(t, over)
		stale, err := s.StaleWebhookAlerts(ctx, t0.Add(time.Hour), 10)
		require.NoError(t, err)
		require.Empty(t, stale, "none is running")

		ok, err := s.UpdateWebhookAlert(ctx, "u1", seqs[1], []string{store.WebhookScheduled},
			store.WebhookAlertUpdate{Status: store.WebhookRunning, At: t0.Add(6 * time.Second)})
		require.NoError(t, err)
		require.True(t, ok)
		stale, err = s.StaleWebhookAlerts(ctx, t0.Add(7*time.Second), 10)
		require.NoError(t, err)
		require.Len(t, stale, 1, "running since its last change")
		require.Equal(t, seqs[1], stale[0].Seq)
		stale, err = s.StaleWebhookAlerts(ctx, t0.Add(6*time.Second), 10)
		require.NoError(t, err)
		require.Empty(t, stale)
		ok, err = s.UpdateWebhookAlert(ctx, "u1", seqs[1], []string{store.WebhookScheduled},
			store.WebhookAlertUpdate{Status: store.WebhookFailed, Reason: "late", At: t0})
		require.NoError(t, err)
		require.False(t, ok, "no longer scheduled")
		ok, err = s.UpdateWebhookAlert(ctx, "u2", seqs[1], nil, store.WebhookAlertUpdate{Status: store.WebhookFailed, At: t0})
		require.NoError(t, err)
		require.False(t, ok, "another user's")
		ok, err = s.UpdateWebhookAlert(ctx, "u1", seqs[1], nil, store.WebhookAlertUpdate{Status: store.WebhookExecuted,
			Results: []byte(`[{"account":"A"}]`), RateID: "r2", At: t0.Add(7 * time.Second)})
		require.NoError(t, err)
		require.True(t, ok)
		a, err := s.WebhookAlert(ctx, "u1", seqs[1])
		require.NoError(t, err)
		require.Equal(t, store.WebhookExecuted, a.Status)
		require.Equal(t, "r2", a.RateID)
		require.JSONEq(t, `[{"account":"A"}]`, string(a.Results))
		require.Equal(t, t0.Add(7*time.Second), a.UpdatedAt)
		_, err = s.WebhookAlert(ctx, "u2", seqs[1])
		require.ErrorIs(t, err, store.ErrNotFound)

		n, err = s.PruneWebhookAlerts(ctx, t0.Add(2*time.Second))
		require.NoError(t, err)
		require.Equal(t, 2, n)
		page, err = s.ListWebhookAlerts(ctx, "u1", 0, 10)
		require.NoError(t, err)
		require.Len(t, page, 1)
	})
}

// An alert is received with its duplicate key in one transaction: the
// first claims the key and is stored, the key's body naming it; an equal
// one within the window stores nothing and gets the record; the finish
// records the outcome and the answer together.
func TestWebhookReceiveFinish(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1"}, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		claim := store.Idempotent{UserID: "u1", Key: "webhook:dup:f", Fingerprint: "f", CreatedAt: t0}
		a := store.WebhookAlert{UserID: "u1", ReceivedAt: t0, Text: "x", Status: store.WebhookRunning, UpdatedAt: t0}
		body := func(seq int64) []byte { return []byte(`{"seq":` + strconv.FormatInt(seq, 10) + `}`) }
		answer := func(seq int64) store.Idempotent { return store.Idempotent{Body: body(seq)} }
		seq, got, claimed, err := s.ReceiveWebhookAlert(ctx, claim, t0.Add(-time.Second), a, answer)
		require.NoError(t, err)
		require.True(t, claimed)
		require.Positive(t, seq)
		require.Equal(t, body(seq), got.Body)

		claim.CreatedAt = t0.Add(500 * time.Millisecond)
		seq2, got, claimed, err := s.ReceiveWebhookAlert(ctx, claim, t0.Add(-500*time.Millisecond), a, answer)
		require.NoError(t, err)
		require.False(t, claimed)
		require.Zero(t, seq2)
		require.Equal(t, store.IdemRunning, got.State)
		require.JSONEq(t, string(body(seq)), string(got.Body))
		list, err := s.ListWebhookAlerts(ctx, "u1", 0, 10)
		require.NoError(t, err)
		require.Len(t, list, 1, "the duplicate stored nothing")

		ok, err := s.FinishWebhookAlert(ctx, "u1", seq, []string{store.WebhookRunning},
			store.WebhookAlertUpdate{Status: store.WebhookExecuted, Results: []byte(`[]`), At: t0.Add(time.Second)},
			store.Idempotent{UserID: "u1", Key: claim.Key, State: store.IdemDone, Status: 200, Body: []byte(`{"done":true}`), UpdatedAt: t0.Add(time.Second)})
		require.NoError(t, err)
		require.True(t, ok)
		_, got, claimed, err = s.ReceiveWebhookAlert(ctx, claim, t0.Add(-500*time.Millisecond), a, answer)
		require.NoError(t, err)
		require.False(t, claimed)
		require.Equal(t, store.IdemDone, got.State)
		require.Equal(t, 200, got.Status)
		require.JSONEq(t, `{"done":true}`, string(got.Body))

		claim.CreatedAt = t0.Add(3 * time.Second)
		seq3, _, claimed, err := s.ReceiveWebhookAlert(ctx, claim, t0.Add(time.Second), a, answer)
		require.NoError(t, err)
		require.True(t, claimed, "past the window: claimed again")
		require.Greater(t, seq3, seq)

		_, _, _, err = s.ReceiveWebhookAlert(ctx, store.Idempotent{UserID: "nobody", Key: "k", CreatedAt: t0}, t0,
			store.WebhookAlert{UserID: "nobody", Status: store.WebhookFailed}, answer)
		require.Error(t, err)
	})
}
