// Package eventstest is what the tests of the spine's producers share: a
// Publisher that keeps what it is given, to assert on.
package eventstest

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/events"
)

// Collector is an events.Publisher that keeps every event it is given, in
// order. It is safe for concurrent use; the zero value is ready.
type Collector struct {
	mu  sync.Mutex
	evs []events.Event
}

// Publish implements events.Publisher.
func (c *Collector) Publish(e events.Event) {
	c.mu.Lock()
	c.evs = append(c.evs, e)
	c.mu.Unlock()
}

// All returns the events published so far.
func (c *Collector) All() []events.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]events.Event(nil), c.evs...)
}

// Len returns how many events were published.
func (c *Collector) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.evs)
}

// Activity returns the TypeActivity events published so far, their
// deferred entries built (events.Event.Built; those with nothing to
// record left out); with kinds, only those of these activity kinds.
func (c *Collector) Activity(kinds ...string) []events.Event {
	var out []events.Event
	for _, e := range c.All() {
		if e.Type != events.TypeActivity || !e.Built() {
			continue
		}
		if len(kinds) == 0 || slices.Contains(kinds, e.Activity.Kind) {
			out = append(out, e)
		}
	}
	return out
}

// Entries returns the entries of Activity(kinds...).
func (c *Collector) Entries(kinds ...string) []protocol.ActivityEntry {
	var out []protocol.ActivityEntry
	for _, e := range c.Activity(kinds...) {
		out = append(out, e.Activity)
	}
	return out
}

// WaitActivity waits until n TypeActivity events were published and
// returns them; it fails t when they do not come within testkit.Long,
// or when more than n came.
func (c *Collector) WaitActivity(t testing.TB, n int) []events.Event {
	t.Helper()
	require.Eventually(t, func() bool { return len(c.Activity()) >= n }, testkit.Long, testkit.Tick)
	evs := c.Activity()
	require.Len(t, evs, n)
	return evs
}

// Detail decodes an activity entry's detail; it fails t when the detail
// is not a JSON object.
func Detail(t testing.TB, e protocol.ActivityEntry) map[string]any {
	t.Helper()
	var d map[string]any
	require.NoError(t, json.Unmarshal(e.Detail, &d))
	return d
}
