package activity_test

import (
	"context"
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/activity"
	"tradebridge/relay/events"
	"tradebridge/relay/events/eventstest"
)

// refusalLog collects what a Refusals publishes.
type refusalLog struct{ eventstest.Collector }

// sorted returns the events by user and policy.
func (c *refusalLog) sorted() []events.Event {
	out := c.All()
	sort.Slice(out, func(i, j int) bool {
		if out[i].UserID != out[j].UserID {
			return out[i].UserID < out[j].UserID
		}
		return string(out[i].Activity.Detail) < string(out[j].Activity.Detail)
	})
	return out
}

type refusalDetailJSON struct {
	Policy string    `json:"policy"`
	Count  int       `json:"count"`
	From   time.Time `json:"from"`
	Until  time.Time `json:"until"`
}

func refusalDetailOf(t *testing.T, e events.Event) refusalDetailJSON {
	t.Helper()
	var d refusalDetailJSON
	require.NoError(t, json.Unmarshal(e.Activity.Detail, &d))
	return d
}

var apiTok1 = protocol.ActivitySource{Kind: protocol.SourceAPI, ID: "tok1"}

// N refusals of a user's budget within a window are one entry with count
// N, from the first to the last; users and budgets are apart; the next
// window starts afresh.
func TestRefusalsAggregate(t *testing.T) {
	t.Parallel()
	var pub refusalLog
	clock := testkit.NewClock(time.Time{})
	r, err := activity.NewRefusals(activity.RefusalsOptions{Events: &pub, Now: clock.Now, After: clock.After})
	require.NoError(t, err)
	start := clock.Now()
	for range 40 {
		r.Refused("usr_a", apiTok1, "trading")
		clock.Advance(time.Second)
	}
	r.Refused("usr_a", apiTok1, "manage-write")
	r.Refused("usr_b", protocol.ActivitySource{Kind: protocol.SourceStream, ID: "tok2"}, "trading")
	require.Zero(t, pub.Len(), "nothing before the window ends")
	r.Flush()

	evs := pub.sorted()
	require.Len(t, evs, 3)
	a := refusalDetailOf(t, evs[1])
	assert.Equal(t, refusalDetailJSON{Policy: "trading", Count: 40, From: start, Until: start.Add(39 * time.Second)}, a)
	assert.Equal(t, "usr_a", evs[1].UserID)
	assert.Equal(t, events.TypeActivity, evs[1].Type)
	assert.Empty(t, evs[1].Ref)
	e := evs[1].Activity
	assert.Equal(t, protocol.ActivityBudgetRefused, e.Kind)
	assert.Equal(t, apiTok1, e.Source)
	assert.Equal(t, start.Add(39*time.Second), e.At)
	assert.Equal(t, "40 requests refused: the trading budget was used up (rate_limited)", e.Summary)
	assert.Equal(t, 1, refusalDetailOf(t, evs[0]).Count)
	assert.Equal(t, "manage-write", refusalDetailOf(t, evs[0]).Policy)
	assert.Equal(t, "usr_b", evs[2].UserID)
	assert.Equal(t, protocol.SourceStream, evs[2].Activity.Source.Kind)

	r.Refused("usr_a", apiTok1, "trading")
	r.Flush()
	assert.Equal(t, 4, pub.Len(), "a new window")
	require.NoError(t, r.Close())
	st := r.Stats()
	assert.Equal(t, activity.RefusalStats{Counted: 43, Published: 4}, st)
}

// Refusals of one budget sent with several tokens or doors name what
// they share.
func TestRefusalsSources(t *testing.T) {
	t.Parallel()
	var pub refusalLog
	r, err := activity.NewRefusals(activity.RefusalsOptions{Events: &pub})
	require.NoError(t, err)
	r.Refused("usr_a", apiTok1, "trading")
	r.Refused("usr_a", protocol.ActivitySource{Kind: protocol.SourceAPI, ID: "tok9"}, "trading")
	r.Refused("usr_b", apiTok1, "trading")
	r.Refused("usr_b", protocol.ActivitySource{Kind: protocol.SourceStream, ID: "tok1"}, "trading")
	require.NoError(t, r.Close())
	evs := pub.sorted()
	require.Len(t, evs, 2)
	assert.Equal(t, protocol.ActivitySource{Kind: protocol.SourceAPI}, evs[0].Activity.Source)
	assert.Equal(t, protocol.ActivitySource{Kind: protocol.SourceAPI}, evs[1].Activity.Source)
}

// Memory is bounded: past MaxKeys users and budgets in a window, the
// refusals of others are dropped and counted; those already counted go on
// counting.
func TestRefusalsBounded(t *testing.T) {
	t.Parallel()
	var pub refusalLog
	r, err := activity.NewRefusals(activity.RefusalsOptions{Events: &pub, MaxKeys: 3})
	require.NoError(t, err)
	for _, u := range []string{"u1", "u2", "u3", "u4", "u5", "u1"} {
		r.Refused(u, apiTok1, "trading")
	}
	assert.Equal(t, activity.RefusalStats{Counted: 4, Dropped: 2}, r.Stats())
	r.Flush()
	assert.Equal(t, int64(2), r.Stats().Dropped, "a running total, whatever the warnings")
	evs := pub.sorted()
	require.Len(t, evs, 3)
	assert.Equal(t, 2, refusalDetailOf(t, evs[0]).Count)
	r.Refused("u5", apiTok1, "trading")
	require.NoError(t, r.Close())
	assert.Equal(t, 4, pub.Len(), "the next window has room again")
}

// Run publishes at the end of each window; Close publishes what is left
// and counts nothing more. Not parallel: it checks that Close leaves no
// goroutine behind.
func TestRefusalsRunAndClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var pub refusalLog
	clock := testkit.NewClock(time.Time{})
	r, err := activity.NewRefusals(activity.RefusalsOptions{Events: &pub, Now: clock.Now, After: clock.After})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	clock.AwaitWaiters(t, 1)
	for range 5 {
		r.Refused("usr_a", apiTok1, "trading")
	}
	clock.Advance(activity.DefaultRefusalWindow)
	require.Eventually(t, func() bool { return pub.Len() == 1 }, testkit.Medium, testkit.Tick)
	clock.AwaitWaiters(t, 1)
	r.Refused("usr_a", apiTok1, "trading")
	require.NoError(t, r.Close())
	require.NoError(t, <-done)
	evs := pub.sorted()
	require.Len(t, evs, 2)
	r.Refused("usr_a", apiTok1, "trading")
	r.Flush()
	assert.Equal(t, 2, pub.Len(), "nothing counted after Close")
	require.NoError(t, r.Close(), "idempotent")
}

// Without a spine nothing is counted; bad options are refused.
func TestRefusalsOptions(t *testing.T) {
	t.Parallel()
	r, err := activity.NewRefusals(activity.RefusalsOptions{})
	require.NoError(t, err)
	r.Refused("usr_a", apiTok1, "trading")
	assert.Zero(t, r.Stats().Counted)
	require.NoError(t, r.Close())
	var nilRefusals *activity.Refusals
	nilRefusals.Refused("usr_a", apiTok1, "trading")
	_, err = activity.NewRefusals(activity.RefusalsOptions{Window: -time.Second})
	require.Error(t, err)
}
