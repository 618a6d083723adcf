package relay_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
)

// engineWait bounds the waits for what the agent's engines do after a
// change reached it (a flatten, a copy, a report stored by the relay).
const engineWait = testkit.Medium

const jsonBody = "application/json"

func (s *system) manage(method, path, token, body string) response {
	s.T.Helper()
	if body == "" {
		return s.Do(method, "/v1/api/manage/"+path, token, "")
	}
	return s.Do(method, "/v1/api/manage/"+path, token, body, "Content-Type", jsonBody)
}

// placeMarket places a Market order for ES on account through the trading
// API.
func (s *system) placeMarket(token, account, action string, qty int) response {
	s.T.Helper()
	b, err := json.Marshal(map[string]any{"action": action, "instrument": "ES 12-26",
		"orderType": "Market", "quantity": qty, "timeInForce": "Day"})
	require.NoError(s.T, err)
	return s.Do(http.MethodPost, "/v1/api/accounts/"+account+"/orders/place", token, string(b), "Content-Type", jsonBody)
}

// position returns the account's signed ES position as the agent reports
// it, and false when it could not be read. It does not fail the test, so
// conditions of require.Eventually may call it.
func (s *system) position(token, account string) (int, bool) {
	return s.positionAt("/v1/api/accounts/"+account+"/positions", token)
}

// positionAt reads the signed ES position of a positions route (either
// family's); false when it could not be read.
func (s *system) positionAt(path, token string) (int, bool) {
	r, err := s.Request(http.MethodGet, path, token, "")
	if err != nil || r.Status != http.StatusOK {
		return 0, false
	}
	var held struct {
		Positions []protocol.Position `json:"positions"`
	}
	if json.Unmarshal(r.Data, &held) != nil {
		return 0, false
	}
	for _, p := range held.Positions {
		if strings.HasPrefix(p.Instrument, "ES ") {
			if p.MarketPosition == protocol.MarketPositionShort {
				return -p.Quantity, true
			}
			return p.Quantity, true
		}
	}
	return 0, true
}

// holds reports whether account holds qty ES (signed).
func (s *system) holds(token, account string, qty int) bool {
	n, ok := s.position(token, account)
	return ok && n == qty
}

// monitorState reads the monitor m names into m and returns its state; ""
// when it could not be read. It does not fail the test.
func (s *system) monitorState(token string, m *protocol.Monitor) string {
	r, err := s.Request(http.MethodGet, "/v1/api/manage/desktop/monitors/"+m.ID, token, "")
	if err != nil || r.Status != http.StatusOK || json.Unmarshal(r.Data, m) != nil {
		return ""
	}
	return m.State
}

// The kill switch through the real relay and agent: once the relay's PUT
// answered, an order that opens is refused on every account with the rule
// named, everything is flattened (flattenOnKill), and turning it off lets
// trading resume.
func TestKillSwitchThroughTheRelay(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.StartAgent("bob")
	tok := s.Users["bob"].APIToken

	r := s.placeMarket(tok, "Sim101", "Buy", 2)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.True(t, s.holds(tok, "Sim101", 2))

	r = s.manage(http.MethodPatch, "controls", tok, `{"flattenOnKill":true}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = s.manage(http.MethodPut, "controls/kill-switch", tok, `{"enabled":true}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	for _, account := range []string{"Sim101", "Sim102"} {
		r = s.placeMarket(tok, account, "Buy", 1)
		require.Equal(t, http.StatusBadRequest, r.Status, string(r.Raw))
		require.Equal(t, protocol.CodeTradingBlocked, r.Error)
		require.Contains(t, r.Detail, "(rule: killSwitch)")
	}
	require.Eventually(t, func() bool { return s.holds(tok, "Sim101", 0) }, engineWait, 10*time.Millisecond,
		"flattenOnKill flattens every account")

	r = s.manage(http.MethodPut, "controls/kill-switch", tok, `{"enabled":false}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = s.placeMarket(tok, "Sim101", "Buy", 1)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
}

// A monitor that trips on the agent is stopped in the relay's store (the
// agent reported it), refuses entries on its account, and resumes only by
// the restart operation once its limits no longer trip it at once.
func TestMonitorTripThroughTheRelay(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.StartAgent("bob")
	tok := s.Users["bob"].APIToken

	// The simulator's clock stands on a Wednesday at 10:00 New York time:
	// a master window from 11:00 trips the monitor at once.
	created := time.Now()
	r := s.manage(http.MethodPost, "desktop/monitors", tok,
		`{"account":"Sim101","masterWindow":{"days":["wed"],"start":"11:00","end":"12:00"}}`)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	var m protocol.Monitor
	require.NoError(t, json.Unmarshal(r.Data, &m))

	require.Eventually(t, func() bool { return s.monitorState(tok, &m) == protocol.MonitorStopped },
		engineWait, 10*time.Millisecond, "the agent reported the trip and the relay stored it")
	require.Equal(t, "masterWindow", m.StoppedReason)
	require.NotNil(t, m.StoppedAt)
	// Every time the monitor carries is wall-clock time, stoppedAt too,
	// though the simulator's clock stands days away (systemtest.SimStart).
	require.Greater(t, time.Since(simStart), time.Hour, "the simulator's clock stands far from now")
	require.WithinRange(t, *m.StoppedAt, created.Truncate(time.Millisecond), time.Now(),
		"stoppedAt is the real time of the trip, not the simulator's (%s)", simStart)
	require.False(t, m.UpdatedAt.Before(*m.StoppedAt), "updatedAt (%s) follows stoppedAt (%s): one clock", m.UpdatedAt, *m.StoppedAt)

	r = s.placeMarket(tok, "Sim101", "Buy", 1)
	require.Equal(t, protocol.CodeTradingBlocked, r.Error, string(r.Raw))
	require.Contains(t, r.Detail, "(rule: monitorStopped)")
	r = s.placeMarket(tok, "Sim102", "Buy", 1)
	require.Equal(t, http.StatusOK, r.Status, "another account trades on: %s", r.Raw)

	r = s.manage(http.MethodPost, "desktop/monitors/"+m.ID+"/restart", tok, "")
	require.Equal(t, http.StatusConflict, r.Status, string(r.Raw))
	require.Equal(t, "would_retrip", r.Error)

	r = s.manage(http.MethodPatch, "desktop/monitors/"+m.ID, tok, `{"masterWindow":{"days":["wed"],"start":"09:30","end":"16:00"}}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = s.manage(http.MethodPost, "desktop/monitors/"+m.ID+"/restart", tok, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = s.placeMarket(tok, "Sim101", "Buy", 1)
	require.Equal(t, http.StatusOK, r.Status, "the restarted monitor lets entries through: %s", r.Raw)
	r = s.manage(http.MethodGet, "desktop/monitors/"+m.ID, tok, "")
	require.NoError(t, json.Unmarshal(r.Data, &m))
	require.Equal(t, protocol.MonitorActive, m.State)
}

// A copier through the real relay and agent: a leader's fill placed by a
// bot is copied to the follower at the copier's ratio, and the activity
// log's copier.copied entry is stamped with the real time, though the
// simulator's clock stands days away.
func TestCopierThroughTheRelay(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.StartAgent("bob")
	tok := s.Users["bob"].APIToken

	r := s.manage(http.MethodPost, "desktop/copiers", tok,
		`{"active":true,"leader":"Sim101","followers":[{"account":"Sim102","sizing":{"ratio":2}}],"copyMode":"execution"}`)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))

	placed := time.Now()
	r = s.placeMarket(tok, "Sim101", "Buy", 1)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Eventually(t, func() bool { return s.holds(tok, "Sim102", 2) }, engineWait, 10*time.Millisecond,
		"the follower holds the leader's position times the ratio")
	require.True(t, s.holds(tok, "Sim101", 1))

	var copied []protocol.ActivityEntry
	require.Eventually(t, func() bool {
		var ok bool
		copied, ok = activityOf(s, tok, "kind="+protocol.ActivityCopierCopied)
		return ok && len(copied) == 1
	}, engineWait, 10*time.Millisecond, "the relay recorded the copy")
	require.Equal(t, "Sim102", copied[0].Account)
	require.Greater(t, time.Since(simStart), time.Hour, "the simulator's clock stands far from now")
	require.WithinRange(t, copied[0].At, placed.Truncate(time.Millisecond), time.Now(),
		"the copy is stamped with the real time, not the simulator's (%s)", simStart)
}

// A minimum-profit drawdown through the real relay and agent: created by
// the Management API, it waits while the open profit climbs to its
// trigger, trips when the profit falls to its floor (flattening; the
// relay stores the stop and logs the trip with the floor as threshold),
// and the restart is refused while the same floor would trip again.
func TestMonitorMinimumProfitDrawdownThroughTheRelay(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ra := s.StartAgent("bob")
	tok := s.Users["bob"].APIToken
	const es = "ES 12-26"
	require.NoError(t, ra.MovePrice(es, 6000))

	r := s.manage(http.MethodPost, "desktop/monitors", tok,
		`{"account":"Sim101","minimumProfitDrawdown":{"enabled":true,"trigger":1500,"floor":500}}`)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	var m protocol.Monitor
	require.NoError(t, json.Unmarshal(r.Data, &m))
	require.True(t, m.IncludeUnrealized, "a new monitor counts open P&L")
	r = s.placeMarket(tok, "Sim101", "Buy", 2)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	require.NoError(t, ra.MovePrice(es, 6020)) // about +1950 open: armed
	require.NoError(t, ra.MovePrice(es, 6010)) // about +950: above the floor
	r = s.placeMarket(tok, "Sim101", "Buy", 1)
	require.Equal(t, http.StatusOK, r.Status, "above the floor the account trades on: %s", r.Raw)
	require.Equal(t, protocol.MonitorActive, s.monitorState(tok, &m))

	require.NoError(t, ra.MovePrice(es, 6003)) // -87.50 on 3 contracts: below the floor
	require.Eventually(t, func() bool { return s.monitorState(tok, &m) == protocol.MonitorStopped },
		engineWait, 10*time.Millisecond, "the agent reported the trip and the relay stored it")
	require.Equal(t, "minimumProfitDrawdown", m.StoppedReason)
	require.Eventually(t, func() bool { return s.holds(tok, "Sim101", 0) }, engineWait, 10*time.Millisecond,
		"the trip flattened the account")
	r = s.placeMarket(tok, "Sim101", "Buy", 1)
	require.Equal(t, protocol.CodeTradingBlocked, r.Error, string(r.Raw))

	var trip protocol.ActivityEntry
	require.Eventually(t, func() bool {
		entries, ok := activityOf(s, tok, "kind=monitor.tripped")
		if ok && len(entries) == 1 {
			trip = entries[0]
		}
		return ok && len(entries) == 1
	}, engineWait, 20*time.Millisecond)
	require.Contains(t, trip.Summary, "minimumProfitDrawdown")
	var detail struct {
		Limit     string   `json:"limit"`
		Pnl       float64  `json:"pnl"`
		Threshold *float64 `json:"threshold"`
	}
	require.NoError(t, json.Unmarshal(trip.Detail, &detail))
	require.Equal(t, "minimumProfitDrawdown", detail.Limit)
	require.NotNil(t, detail.Threshold)
	require.Equal(t, 500.0, *detail.Threshold, "the threshold is the floor")
	require.Equal(t, -87.5, detail.Pnl, "two bought at 6000.25 and one at 6010.25, sold at 6003")

	// The session high stays, so the floor stays armed: at a P&L below
	// break even no floor (0 or more) lets the monitor restart, only
	// turning it off (three changes: the resource budget's burst).
	r = s.manage(http.MethodPost, "desktop/monitors/"+m.ID+"/restart", tok, "")
	require.Equal(t, http.StatusConflict, r.Status, string(r.Raw))
	require.Equal(t, "would_retrip", r.Error)
	r = s.manage(http.MethodPatch, "desktop/monitors/"+m.ID, tok, `{"minimumProfitDrawdown":{"enabled":false}}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = s.manage(http.MethodPost, "desktop/monitors/"+m.ID+"/restart", tok, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = s.placeMarket(tok, "Sim101", "Buy", 1)
	require.Equal(t, http.StatusOK, r.Status, "the restarted monitor lets entries through: %s", r.Raw)
}
