package relay_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay"
	"tradebridge/relay/alerts"
)

// The whole way, over real sockets: a monitor that trips on the agent
// (next to the simulator) flattens the account, the agent reports the
// trip, the relay's activity log records it once with the flatten's
// orders, and the user's webhook destination gets one POST, signed with
// the secret shown at its creation, within 2 s of the trip.
func TestMonitorTripIsLoggedAndAlerted(t *testing.T) {
	t.Parallel()
	type post struct {
		at     time.Time
		header http.Header
		body   []byte
	}
	got := make(chan post, 8)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- post{time.Now(), r.Header.Clone(), b}
	}))
	t.Cleanup(recv.Close)
	s := newSystemWith(t, func(o *relay.Options) { o.Alerts.AllowPrivate = true })
	s.StartAgent("bob")
	tok := s.Users["bob"].APIToken

	r := s.manage(http.MethodPost, "alerts", tok, `{"kind":"webhook","url":"`+recv.URL+`/hook","events":["monitor.tripped"]}`)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	var dst struct{ ID, Secret string }
	require.NoError(t, json.Unmarshal(r.Data, &dst))
	r = s.placeMarket(tok, "Sim101", "Buy", 2)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	// The simulator stands on a Wednesday at 10:00 New York time: a
	// master window from 11:00 trips the monitor at once.
	created := time.Now()
	r = s.manage(http.MethodPost, "desktop/monitors", tok,
		`{"account":"Sim101","masterWindow":{"days":["wed"],"start":"11:00","end":"12:00"}}`)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))

	var p post
	select {
	case p = <-got:
	case <-time.After(engineWait):
		t.Fatal("no alert of the trip")
	}
	require.Equal(t, alerts.Sign(dst.Secret, p.body), p.header.Get(alerts.HeaderSignature))
	require.NotEmpty(t, p.header.Get(alerts.HeaderDelivery))
	var payload alerts.Payload
	require.NoError(t, json.Unmarshal(p.body, &payload))
	require.Equal(t, protocol.ActivityMonitorTripped, payload.Kind)
	require.Equal(t, "Sim101", payload.Account)

	// The log holds the trip once, with the flatten that closed the
	// position, and the alert's delivery.
	var trip protocol.ActivityEntry
	require.Eventually(t, func() bool {
		entries, ok := activityOf(s, tok, "kind=monitor.tripped,alert.sent")
		if !ok || len(entries) != 2 {
			return false
		}
		trip = entries[1]
		return entries[0].Kind == protocol.ActivityAlertSent && trip.Kind == protocol.ActivityMonitorTripped
	}, engineWait, 20*time.Millisecond)
	require.Equal(t, trip.ID, payload.ID, "the alert names the entry")
	// The trip happens as the monitor is created (its time is the
	// simulator's clock, which stands still).
	require.Less(t, p.at.Sub(created), 2*time.Second, "alerted within 2 s of the trip")
	var detail struct {
		Limit   string `json:"limit"`
		Flatten struct {
			OrderIDs []string `json:"orderIds"`
		} `json:"flatten"`
	}
	require.NoError(t, json.Unmarshal(trip.Detail, &detail))
	require.Equal(t, "masterWindow", detail.Limit)
	require.Len(t, detail.Flatten.OrderIDs, 1, "the flatten's closing order: %s", trip.Detail)
	require.Equal(t, protocol.SourceMonitor, trip.Source.Kind)
	select {
	case <-got:
		t.Fatal("alerted twice")
	case <-time.After(300 * time.Millisecond):
	}
}

// activityOf reads the user's activity log (query, e.g. "kind=…"); false
// when it could not be read. It does not fail the test, so conditions of
// require.Eventually may call it.
func activityOf(s *system, token, query string) ([]protocol.ActivityEntry, bool) {
	r, err := s.Request(http.MethodGet, "/v1/api/activity?"+query, token, "")
	if err != nil || r.Status != http.StatusOK {
		return nil, false
	}
	var page struct {
		Events []protocol.ActivityEntry `json:"events"`
	}
	if json.Unmarshal(r.Data, &page) != nil {
		return nil, false
	}
	return page.Events, true
}
