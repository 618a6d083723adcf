package tradovatefake

import "tradebridge/trading/bridge/tradovate/tradovatewire"

// placementCommand records and sends the command entity of an order's
// placement, as the broker keeps one per request about an order: a New
// command naming the order and echoing the placement's clOrdId. It is
// sent after the order's own first events (they are forwarded first), and
// it is in the syncrequest answer's commands from then on. It runs in the
// loop.
func (s *Server) placementCommand(o *orderState) {
	s.drain()
	c := tradovatewire.Command{ID: s.st.nextCommand, OrderID: o.id, Timestamp: tradovatewire.FormatTime(s.st.now()),
		ClOrdID: o.clOrdID, CommandType: tradovatewire.CommandNew, CommandStatus: tradovatewire.CommandAtExecution,
		IsAutomated: true}
	s.st.nextCommand++
	s.st.commands = append(s.st.commands, c)
	s.broadcastProps(props{tradovatewire.EntityCommand, tradovatewire.EventCreated, c})
}

// sessionCommands are the commands of the orders the fake still knows,
// for the syncrequest answer. It runs in the loop.
func (s *Server) sessionCommands() []tradovatewire.Command {
	var out []tradovatewire.Command
	for _, c := range s.st.commands {
		if s.st.orderByID[c.OrderID] != nil {
			out = append(out, c)
		}
	}
	return out
}

// ReplaceNextText makes the versions of the next placement's orders
// (placeorder, placeoco, placeoso: every order of the request) carry text
// instead of the text the request gave; "" drops it. It stands for a text
// the broker changed or lost: the placement's command entity still echoes
// its clOrdId.
func (s *Server) ReplaceNextText(text string) {
	s.strict.mu.Lock()
	s.strict.replaceText = &text
	s.strict.mu.Unlock()
}

// placementText returns, for one placement, what its orders' versions
// carry as text: their own, or the pending ReplaceNextText one, which it
// clears.
func (s *Server) placementText() func(string) string {
	s.strict.mu.Lock()
	r := s.strict.replaceText
	s.strict.replaceText = nil
	s.strict.mu.Unlock()
	return func(text string) string {
		if r != nil {
			return *r
		}
		return text
	}
}
