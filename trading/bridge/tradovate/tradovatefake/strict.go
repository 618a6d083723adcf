package tradovatefake

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// strictKnobs are the knobs of the broker's less common answers: command
// reports rejecting a command after its request was answered, the
// failureReason "Success" on accepted commands, a refused user-data
// socket.
type strictKnobs struct {
	mu         sync.Mutex
	rejectNext *commandReject
	// replaceText is a pending ReplaceNextText.
	replaceText *string

	successReason atomic.Bool
	refuseUser    atomic.Bool
	muted         atomic.Bool
}

// MuteUserEvents drops the props events meant for the user-data sockets
// while on, as events lost on the way would be: the lists and later
// syncrequest answers still tell the state, but a client following the
// socket falls behind without knowing it.
func (s *Server) MuteUserEvents(on bool) { s.strict.muted.Store(on) }

// commandReject is a pending RejectNextCommand.
type commandReject struct {
	status, reason string
	after          bool
}

// RejectNextCommand makes the next cancelorder or modifyorder be accepted
// (a commandId, nothing else) and then rejected, as the broker's risk or
// execution layer does: the order is left as it was, and a command and a
// commandReport props event (commandStatus status, such as
// "RiskRejected" or "ExecutionRejected", and rejectReason reason, one of
// the documented failure reasons) tell it. With after, the events are
// sent after the request's answer instead of before it. Of cancels and
// modifications, only rejected ones are reported this way: the fake sends
// no command events for those it carries out (placements have theirs,
// placementCommand).
func (s *Server) RejectNextCommand(status, reason string, after bool) {
	s.strict.mu.Lock()
	s.strict.rejectNext = &commandReject{status: status, reason: reason, after: after}
	s.strict.mu.Unlock()
}

// takeCommandReject returns and clears the pending RejectNextCommand.
func (s *Server) takeCommandReject() *commandReject {
	s.strict.mu.Lock()
	defer s.strict.mu.Unlock()
	cr := s.strict.rejectNext
	s.strict.rejectNext = nil
	return cr
}

// SuccessReason makes the answers of accepted cancels and modifications
// carry failureReason "Success" with their commandId while on, a value
// the documentation lists.
func (s *Server) SuccessReason(on bool) { s.strict.successReason.Store(on) }

// RefuseUserSockets cuts the open user-data sockets and refuses new ones
// (HTTP 503) while on; REST and the market-data socket keep working.
func (s *Server) RefuseUserSockets(on bool) {
	s.strict.refuseUser.Store(on)
	if on {
		for _, sock := range s.openSockets(false) {
			s.closeSocket(sock)
		}
	}
}

// refusedUserSocket answers a user-data socket refused by
// RefuseUserSockets; it reports whether it did.
func (s *Server) refusedUserSocket(w http.ResponseWriter) bool {
	if !s.strict.refuseUser.Load() {
		return false
	}
	http.Error(w, "unavailable", http.StatusServiceUnavailable)
	return true
}

// rejectCommand answers a command of o that cr rejects: accepted with a
// new command id, then rejected by a command report. The events are sent
// now, or returned for after the answer. It runs in the loop.
func (s *Server) rejectCommand(rep *orderReply, o *orderState, typ string, cr *commandReject) []props {
	s.commandReply(rep)
	res, _ := rep.body.(tradovatewire.CommandResponse)
	ts := tradovatewire.FormatTime(s.st.now())
	id := res.CommandID
	ps := []props{
		{tradovatewire.EntityCommand, tradovatewire.EventCreated, tradovatewire.Command{ID: id, OrderID: o.id,
			Timestamp: ts, CommandType: typ, CommandStatus: cr.status, IsAutomated: true}},
		{tradovatewire.EntityCommandReport, tradovatewire.EventCreated, tradovatewire.CommandReport{ID: id,
			CommandID: id, Timestamp: ts, CommandStatus: cr.status, RejectReason: cr.reason, OrdStatus: o.status}},
	}
	if cr.after {
		return ps
	}
	s.broadcastProps(ps...)
	return nil
}

// sendLate sends events held for after a request's answer.
func (s *Server) sendLate(ps []props) {
	if len(ps) > 0 {
		s.do(func() { s.broadcastProps(ps...) })
	}
}

// BustFill marks a fill inactive (busted or corrected), as the broker
// does: a fill Updated props event with active false, and active false in
// the lists and the syncrequest answer from then on. The simulator's
// position and account are left as they are. It reports whether the fill
// is known.
func (s *Server) BustFill(id int64) bool {
	var found bool
	s.do(func() {
		s.drain()
		fills, err := s.sessionFills()
		if err != nil {
			return
		}
		for _, f := range fills {
			if f.ID == id {
				found = true
				s.st.busted[id] = true
				f.Active = false
				s.broadcastProps(props{tradovatewire.EntityFill, tradovatewire.EventUpdated, f})
			}
		}
	})
	return found
}

// AddPositionRow adds a position row of an older trade date, daysBack
// days before the trade date of now (the simulator's time as last seen), for
// account in instrument (the simulator's name) with netPos, as the broker
// keeps a row per account, contract and trade date. The row is in
// position/list and the syncrequest answer, and sent as a position
// Created props event. It reports false for an unknown account or
// instrument.
func (s *Server) AddPositionRow(account, instrument string, daysBack, netPos int, price float64) bool {
	var ok bool
	s.do(func() {
		a := s.st.acctByName[account]
		c, created, cok := s.st.contract(instrument)
		if a == nil || !cok {
			return
		}
		if created {
			s.broadcastProps(s.contractCreated(c))
		}
		td := tradeDate(s.st.now())
		day := time.Date(td.Year, time.Month(td.Month), td.Day-daysBack, 12, 0, 0, 0, time.UTC)
		row := positionEntity{Position: tradovatewire.Position{ID: s.st.nextPosition, AccountID: a.id,
			ContractID: c.id, Timestamp: tradovatewire.FormatTime(day),
			TradeDate: tradovatewire.TradeDate{Year: day.Year(), Month: int(day.Month()), Day: day.Day()}, NetPos: netPos,
			NetPrice: price}}
		s.st.nextPosition++
		s.st.oldRows = append(s.st.oldRows, row)
		s.broadcastProps(props{tradovatewire.EntityPosition, tradovatewire.EventCreated, row})
		ok = true
	})
	return ok
}

// fillFeeList answers GET /fillFee/list: the fees of the session's fills.
func (s *Server) fillFeeList(w http.ResponseWriter, _ *http.Request) {
	answer(s, w, func() ([]tradovatewire.FillFee, bool, error) {
		_, fees, err := s.sessionFillsAndFees()
		return listed(fees, err)
	})
}
