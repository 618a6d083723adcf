package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/support"
	"tradebridge/relay/tradecall"
)

// statusView is the home page's status section.
type statusView struct {
	Online bool
	// State is #agent-status's data-state: "online" or "offline".
	State string
	// Since is when the agent connected (online) or last disconnected.
	Since          time.Time
	Version        string
	Platform       string
	RTT            string
	LastDisconnect string
	Connections    []protocol.Connection
	Accounts       []protocol.PnlAccount
	Positions      []protocol.Position
	Orders         []protocol.Order
	// Broker is #broker-link's data-state: "unlinked", "linked" (its
	// session up), or the link's session state ("connecting", …); ""
	// when the relay has no broker family.
	Broker         string
	BrokerAccounts []string
	History        []support.Entry
	// Problem says what could not be read, for the page to show.
	Problem string
}

// platformName is how the pages name an agent's platform.
func platformName(p string) string {
	switch p {
	case "sim":
		return "Simulator"
	case "ninjatrader":
		return "NinjaTrader 8"
	case "":
		return "—"
	}
	return p
}

// rtt formats the tunnel's round trip.
func rtt(ms float64) string {
	if ms < 1 {
		return "under 1 ms"
	}
	return fmt.Sprintf("%.0f ms", ms)
}

// readStatus reads the user's agent, accounts and broker link. What it
// cannot read is left empty and named in Problem; the page shows the rest.
func (s *Server) readStatus(ctx context.Context, userID string) *statusView {
	v := &statusView{State: "offline", Version: "—", Platform: "—", RTT: "—", LastDisconnect: "—"}
	ans, err := s.opts.Agent.Read(ctx, userID)
	if err != nil {
		s.log.Warn("reading the agent's status", zap.Error(err))
		v.Problem = "The relay cannot read the PC's status right now."
	} else {
		v.History = ans.History
		for _, e := range ans.History {
			if e.DisconnectedAt != nil {
				v.LastDisconnect = e.Reason
				if !ans.Connected {
					v.Since = *e.DisconnectedAt
				}
				break
			}
		}
		if ans.Diagnostics != nil && ans.Diagnostics.Tunnel.RTTMillis > 0 {
			v.RTT = rtt(ans.Diagnostics.Tunnel.RTTMillis)
		}
		if a := ans.Agent; ans.Connected && a != nil {
			v.Online, v.State = true, "online"
			v.Since, v.Version, v.Platform, v.Connections = a.ConnectedAt, a.AgentVersion, platformName(a.Platform), a.Connections
		}
	}
	if v.Online {
		s.readAccounts(ctx, userID, v)
	}
	if s.opts.Broker != nil {
		st, err := s.opts.Broker.Status(ctx, userID)
		switch {
		case err != nil:
			s.log.Warn("reading the broker link", zap.Error(err))
		default:
			v.Broker, v.BrokerAccounts = linkState(st), st.Accounts
		}
	}
	return v
}

// readAccounts asks the agent for its accounts' P&L and positions and its
// working orders: the same functions the stream's pnlUpdate and the
// trading API's GET /v1/api/orders call.
func (s *Server) readAccounts(ctx context.Context, userID string, v *statusView) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	raw, err := s.opts.Hub.Call(ctx, userID, protocol.FnGetPnl, "", json.RawMessage(`{}`))
	var snap protocol.PnlSnapshot
	if err == nil {
		err = json.Unmarshal(raw, &snap)
	}
	if err != nil {
		s.log.Debug("reading the agent's accounts", zap.Error(err))
		v.Problem = "The PC did not answer with its accounts; they will show when it does."
		return
	}
	v.Accounts = snap.Accounts
	for _, a := range snap.Accounts {
		for _, p := range a.Positions {
			if p.Quantity != 0 {
				if p.Account == "" {
					p.Account = a.Account
				}
				v.Positions = append(v.Positions, p)
			}
		}
	}
	call, e := tradecall.PrepareSocketCall(protocol.FnGetAllOrders, json.RawMessage(`{"activeOnly":true}`))
	if e != nil {
		s.log.Error("the working orders' call is refused", zap.String("code", e.Code))
		return
	}
	raw, err = s.opts.Hub.Call(ctx, userID, call.Fn, "", call.Args)
	var orders []protocol.Order
	if err == nil {
		err = json.Unmarshal(raw, &orders)
	}
	if err != nil {
		s.log.Debug("reading the agent's orders", zap.Error(err))
		return
	}
	v.Orders = slices.DeleteFunc(orders, func(o protocol.Order) bool { return protocol.TerminalOrderState(o.OrderState) })
}
