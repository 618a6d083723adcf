package relay_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/agent"
	"tradebridge/protocol"
	"tradebridge/relay/events/eventstest"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/ninjatrader/ntfake"
)

// killAnswer is the top of the kill switch's answer.
type killAnswer struct {
	Data struct {
		KillSwitch    bool `json:"killSwitch"`
		FlattenOnKill bool `json:"flattenOnKill"`
	} `json:"data"`
	Changed bool  `json:"changed"`
	Applied *bool `json:"applied"`
}

func (s *system) killSwitch(tok, body string) killAnswer {
	s.T.Helper()
	r := s.manage(http.MethodPut, "controls/kill-switch", tok, body)
	require.Equal(s.T, http.StatusOK, r.Status, string(r.Raw))
	var a killAnswer
	require.NoError(s.T, json.Unmarshal(r.Raw, &a), string(r.Raw))
	require.NotNil(s.T, a.Applied, string(r.Raw))
	return a
}

// requireKillBlocked checks an answer is the kill switch's refusal.
func requireKillBlocked(t *testing.T, r response) {
	t.Helper()
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Raw))
	require.Equal(t, protocol.CodeTradingBlocked, r.Error)
	require.Contains(t, r.Detail, "(rule: killSwitch)")
}

// nextTo is the tweak of an agent that starts next to the platform of an
// agent that stopped: the same simulator, and on the NinjaTrader bridge a
// new bridge and add-on in front of it (a bridge does not run again once
// its agent stopped it).
func nextTo(t *testing.T, first *runningAgent) func(*agent.Options) {
	return func(o *agent.Options) {
		if first.Pair == nil {
			o.Platform = first.Platform
			return
		}
		o.Platform = ntfake.NewPair(t, first.Sim, first.Clock.Now).Bridge
	}
}

// The kill switch from a phone while the PC is off: accepted and stored
// (not applied yet); the relay refuses the user's entries at once on
// every door (HTTP, the stream socket's rpc, the webhook), recorded as
// trading.blocked, while reads answer that the add-on is offline; the
// agent that connects applies it, and flattens, before it serves any other
// call; from then on the agent gates itself (a reducing order passes).
// Turned off while the PC is off, it is stored too and applied on connect.
func TestKillSwitchWhileThePCIsOff(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	first := s.StartAgent("bob")
	bob := s.Users["bob"]
	tok := bob.APIToken
	r := s.placeMarket(tok, "Sim101", "Buy", 2)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.True(t, s.holds(tok, "Sim101", 2))
	h := s.webhookOf("bob")
	var spine eventstest.Collector
	subscribeActivity(t, s, &spine)

	first.Close() // the PC is off; the position stays at the platform
	require.Eventually(t, func() bool { return !s.Relay().Hub().Connected(bob.UserID) }, engineWait, 5*time.Millisecond)

	a := s.killSwitch(tok, `{"enabled":true,"flattenOnKill":true}`)
	require.True(t, a.Data.KillSwitch)
	require.True(t, a.Data.FlattenOnKill)
	require.True(t, a.Changed)
	require.False(t, *a.Applied, "the agent is offline")

	requireKillBlocked(t, s.placeMarket(tok, "Sim101", "Buy", 1))
	w := s.openStream(t, "bob")
	require.Equal(t, false, w.next("status")["agentConnected"])
	w.send(`{"action":"rpc","id":"k1","api":"PlaceOrder","args":{"account":"Sim101","action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}}`)
	rep := w.reply()
	require.Equal(t, false, rep["success"], rep)
	require.Equal(t, protocol.CodeTradingBlocked, rep["error"], rep)
	require.Contains(t, rep["detail"], "(rule: killSwitch)")
	requireKillBlocked(t, h.send(placeES))

	r = s.Do(http.MethodGet, "/v1/api/accounts", tok, "")
	require.Equal(t, http.StatusRequestTimeout, r.Status, string(r.Raw))
	require.Equal(t, "addon_disconnected", r.Error)
	r = s.Do(http.MethodPost, "/v1/api/accounts/Sim101/positions/flatten", tok, `{}`, "Content-Type", jsonBody)
	require.Equal(t, "addon_disconnected", r.Error, "a flatten is not refused: it needs the agent")

	blocked := waitEntries(t, &spine, protocol.ActivityTradingBlocked, 3)
	for _, e := range blocked {
		var d struct {
			Rule string `json:"rule"`
		}
		require.NoError(t, json.Unmarshal(e.Detail, &d))
		require.Equal(t, "killSwitch", d.Rule)
	}

	// The PC is back: the first call it serves finds the position flat.
	again := s.StartAgentWith("bob", nextTo(t, first))
	if first.Pair == nil {
		require.True(t, s.holds(tok, "Sim101", 0), "flattened before any other call was served")
	} else {
		// The new NinjaTrader bridge connects to its add-on after the
		// tunnel is up: the flatten may fail at connect (the platform is
		// not connected yet) and the controls engine tries it again once
		// its wait has passed on the agent's clock, which stands still
		// unless moved.
		require.Eventually(t, func() bool {
			again.Clock.Advance(time.Second)
			return s.holds(tok, "Sim101", 0)
		}, engineWait, 5*time.Millisecond)
	}
	info, ok := s.Relay().Hub().Info(bob.UserID)
	require.True(t, ok)
	require.Positive(t, info.ConfigApplied)
	a = s.killSwitch(tok, `{"enabled":true}`)
	require.False(t, a.Changed)
	require.True(t, *a.Applied, "the agent runs it")

	// The agent gates itself now: an entry is its refusal, a reducing
	// order passes.
	requireKillBlocked(t, s.placeMarket(tok, "Sim101", "Buy", 1))
	_, err := first.Sim.SubmitOrder(t.Context(), bridge.OrderRequest{Account: "Sim101", Instrument: "ES 12-26",
		Action: "Buy", OrderType: "Market", Quantity: 1, TimeInForce: "Day"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.holds(tok, "Sim101", 1) }, engineWait, 5*time.Millisecond)
	r = s.placeMarket(tok, "Sim101", "Sell", 1)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	// Off while the PC is off: stored, applied on connect.
	again.Close()
	require.Eventually(t, func() bool { return !s.Relay().Hub().Connected(bob.UserID) }, engineWait, 5*time.Millisecond)
	a = s.killSwitch(tok, `{"enabled":false}`)
	require.True(t, a.Changed)
	require.False(t, *a.Applied)
	r = s.placeMarket(tok, "Sim101", "Buy", 1)
	require.Equal(t, "addon_disconnected", r.Error, "not refused by the relay any more")
	s.StartAgentWith("bob", nextTo(t, first))
	r = s.placeMarket(tok, "Sim101", "Buy", 1)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	a = s.killSwitch(tok, `{"enabled":false}`)
	require.True(t, *a.Applied)
}
