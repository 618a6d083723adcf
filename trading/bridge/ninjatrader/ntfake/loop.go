package ntfake

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/ninjatrader/ntwire"
)

// connectedStatus is NinjaTrader's ConnectionStatus of a working
// connection.
const connectedStatus = "Connected"

// loop is the goroutine that owns loopState: the simulator's events, their
// numbering, the agent's connection and every write to it, and requests.
func (s *Server) loop() {
	defer s.wg.Done()
	defer close(s.loopDone)
	ping := time.NewTimer(s.opts.PingAfter)
	defer ping.Stop()
	for {
		events := s.ls.events
		if s.ls.held {
			events = nil
		}
		select {
		case <-s.ctx.Done():
			s.closeConn()
			return
		case f := <-s.cmds:
			f()
		case ev, ok := <-events:
			if !ok {
				s.ls.events = nil
				continue
			}
			s.forward(ev)
		case a := <-s.attachc:
			s.attach(a)
		case m := <-s.inbound:
			if m.gen == s.ls.gen && s.ls.conn != nil {
				s.handle(m.msg)
			}
		case gen := <-s.gone:
			if gen == s.ls.gen && s.ls.conn != nil {
				s.log.Info("agent connection ended")
				s.closeConn()
			}
		case <-ping.C:
			next := s.opts.PingAfter
			if s.ls.conn != nil {
				if idle := time.Since(s.ls.lastWrite); idle >= s.opts.PingAfter {
					s.ls.pingID++
					s.write(ntwire.Message{Type: ntwire.TypePing, ID: s.ls.pingID})
				} else {
					next -= idle
				}
			}
			ping.Reset(next)
		}
	}
}

// startSession opens a new session: numbering restarts and events still
// queued from before are dropped.
func (s *Server) startSession(id string) {
	s.drain()
	s.ls.running, s.ls.seq = true, 0
	s.lastSeq.Store(0)
	s.log.Info("session started", zap.String("session", id))
}

// endSession closes the session: the events published so far are
// forwarded, the agent gets bye reason and is disconnected.
func (s *Server) endSession(reason string) {
	s.drain()
	if s.ls.conn != nil {
		s.write(ntwire.Message{Type: ntwire.TypeBye, Reason: reason})
		s.closeConn()
	}
	s.ls.running = false
}

// attach welcomes a connection whose hello passed, unless another agent is
// connected or no session is open.
func (s *Server) attach(a attachRequest) {
	switch {
	case !s.ls.running:
		a.reply <- attachResult{refused: "-"}
		return
	case s.ls.conn != nil:
		a.reply <- attachResult{refused: ntwire.RefusedBusy}
		return
	}
	s.mu.Lock()
	delete(s.pending, a.conn)
	sid := s.sessionID
	s.mu.Unlock()
	s.ls.gen++
	s.ls.conn, s.ls.w = a.conn, a.w
	s.accepted.Add(1)
	s.log.Info("agent connected", zap.Int("protocolVersion", a.version))
	s.write(ntwire.Message{
		Type:            ntwire.TypeWelcome,
		ProtocolVersion: a.version,
		SessionID:       sid,
		AddonVersion:    s.opts.AddonVersion,
		PlatformVersion: s.opts.PlatformVersion,
	})
	a.reply <- attachResult{gen: s.ls.gen}
}

// handle acts on one message of the connected agent.
func (s *Server) handle(m ntwire.Message) {
	switch m.Type {
	case ntwire.TypePing:
		s.write(ntwire.Message{Type: ntwire.TypePong, ID: m.ID})
	case ntwire.TypeRequest:
		s.serve(m)
	default:
		// pongs, and kinds a later version may add, are ignored
	}
}

// serve answers a request. The events the simulator published during the
// call are sent before the reply.
func (s *Server) serve(req ntwire.Message) {
	timeout := s.opts.RequestTimeout
	if req.TimeoutMs > 0 {
		timeout = time.Duration(req.TimeoutMs) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	var (
		result any
		err    error
	)
	if req.Method == ntwire.MethodSnapshot {
		s.drain()
		result, err = s.snapshot(ctx)
	} else {
		result, err = s.call(ctx, req.Method, req.Params)
		s.drain()
	}
	reply := ntwire.Message{Type: ntwire.TypeReply, ID: req.ID}
	if err == nil {
		reply.Result, err = ntwire.Encode(result)
		if err == nil && len(reply.Result) > ntwire.MaxLine-1024 {
			err = errTooLarge
		}
	}
	if err != nil {
		reply.Result = nil
		reply.Error = replyError(err)
		s.log.Debug("request refused", zap.String("method", req.Method), zap.String("code", reply.Error.Code), zap.Error(err))
	}
	s.write(reply)
}

// snapshot collects every account's state, with the last event seq: every
// event numbered up to it has been published before the reads.
func (s *Server) snapshot(ctx context.Context) (ntwire.Snapshot, error) {
	snap := ntwire.Snapshot{
		Seq:        s.ls.seq,
		Positions:  []protocol.Position{},
		Orders:     []protocol.Order{},
		Executions: []protocol.Execution{},
		Strategies: []protocol.Strategy{},
	}
	var err error
	if snap.Connections, err = s.connections(ctx); err != nil {
		return snap, err
	}
	if snap.Accounts, err = s.market.Accounts(ctx); err != nil {
		return snap, err
	}
	for i := range snap.Accounts {
		s.fixAccount(&snap.Accounts[i])
		name := snap.Accounts[i].Name
		pos, err := s.market.Positions(ctx, name)
		if err != nil {
			return snap, err
		}
		orders, err := s.market.Orders(ctx, name)
		if err != nil {
			return snap, err
		}
		execs, err := s.market.Executions(ctx, name)
		if err != nil {
			return snap, err
		}
		strats, err := s.market.Strategies(ctx, name)
		if err != nil {
			return snap, err
		}
		snap.Positions = append(snap.Positions, pos...)
		snap.Orders = append(snap.Orders, orders...)
		snap.Executions = append(snap.Executions, execs...)
		snap.Strategies = append(snap.Strategies, strats...)
	}
	return snap, nil
}

// connections returns the simulator's connections with the statuses
// SetConnectionStatus set.
func (s *Server) connections(ctx context.Context) ([]protocol.Connection, error) {
	conns, err := s.market.Connections(ctx)
	if err != nil {
		return nil, err
	}
	for i := range conns {
		if st, ok := s.ls.status[conns[i].Name]; ok {
			conns[i].Status = st
		}
	}
	return conns, nil
}

// fixAccount gives an account record its connection's status.
func (s *Server) fixAccount(a *protocol.Account) {
	if st, ok := s.ls.status[a.Connection]; ok {
		a.ConnectionStatus = st
	}
}

// setConnectionStatus is SetConnectionStatus, in the loop.
func (s *Server) setConnectionStatus(name, status string) error {
	s.drain()
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.RequestTimeout)
	defer cancel()
	conns, err := s.market.Connections(ctx)
	if err != nil {
		return fmt.Errorf("ntfake: connections: %w", err)
	}
	var conn *protocol.Connection
	for i := range conns {
		if conns[i].Name == name {
			conn = &conns[i]
		}
	}
	if conn == nil {
		return ErrUnknownConnection
	}
	if status == conn.Status {
		delete(s.ls.status, name)
	} else {
		s.ls.status[name] = status
	}
	conn.Status = status
	for _, a := range conn.Accounts {
		if status == connectedStatus {
			delete(s.ls.down, a)
		} else {
			s.ls.down[a] = true
		}
	}
	s.emit(ntwire.KindConnection, *conn)
	for _, name := range conn.Accounts {
		a, err := s.market.Account(ctx, name)
		if err != nil {
			return fmt.Errorf("ntfake: account: %w", err)
		}
		s.fixAccount(&a)
		s.emit(ntwire.KindAccount, a)
	}
	return nil
}

// drain forwards every event the simulator has published so far, without
// waiting for more.
func (s *Server) drain() {
	if s.ls.held {
		return
	}
	for s.ls.events != nil {
		select {
		case ev, ok := <-s.ls.events:
			if !ok {
				s.ls.events = nil
				return
			}
			s.forward(ev)
		default:
			return
		}
	}
}

// forward numbers one simulator event and sends it to the agent, if one is
// connected. A loss takes a number of its own, never sent, so the agent
// sees a gap.
func (s *Server) forward(ev bridge.Event) {
	if !s.ls.running {
		return
	}
	if ev.Lost {
		s.ls.seq++
		s.lastSeq.Store(s.ls.seq)
		s.log.Warn("simulator events lost; a seq number is skipped")
		return
	}
	var (
		kind string
		data any
	)
	switch {
	case ev.Order != nil:
		kind, data = ntwire.KindOrder, ev.Order
	case ev.Execution != nil:
		kind, data = ntwire.KindExecution, ev.Execution
	case ev.Position != nil:
		kind, data = ntwire.KindPosition, ev.Position
		s.ls.marked[positionKey(*ev.Position)] = *ev.Position
	case ev.Account != nil:
		s.markPositions(ev.Account.Name)
		a := *ev.Account
		s.fixAccount(&a)
		kind, data = ntwire.KindAccount, a
	case ev.Quote != nil:
		kind, data = ntwire.KindQuote, ev.Quote
	case ev.Strategy != nil:
		kind, data = ntwire.KindStrategy, ev.Strategy
	default:
		s.log.Warn("simulator event without a record", zap.String("kind", string(ev.Kind)))
		return
	}
	s.emit(kind, data)
}

// markPositions sends the account's positions whose market price or
// unrealized P&L moved since they were last sent, as the add-on does when
// the market moves (the simulator publishes only the account then).
func (s *Server) markPositions(account string) {
	ps, err := s.market.Positions(s.ctx, account)
	if err != nil {
		return
	}
	for _, p := range ps {
		k := positionKey(p)
		if s.ls.marked[k] == p {
			continue
		}
		s.ls.marked[k] = p
		s.emit(ntwire.KindPosition, p)
	}
}

func positionKey(p protocol.Position) string { return p.Account + "\x00" + p.Instrument }

// emit numbers an event of the session and sends it when an agent is
// connected.
func (s *Server) emit(kind string, data any) {
	if !s.ls.running {
		return
	}
	s.ls.seq++
	s.lastSeq.Store(s.ls.seq)
	if s.ls.conn == nil {
		return
	}
	b, err := json.Marshal(data)
	if err != nil {
		s.log.Error("cannot encode an event", zap.String("kind", kind), zap.Error(err))
		return
	}
	s.write(ntwire.Message{Type: ntwire.TypeEvent, Seq: s.ls.seq, Kind: kind, Data: b})
}

// write sends m to the agent; a failed write ends the connection.
func (s *Server) write(m ntwire.Message) {
	if s.ls.conn == nil {
		return
	}
	_ = s.ls.conn.SetWriteDeadline(time.Now().Add(s.opts.DeadAfter))
	if err := s.ls.w.Write(m); err != nil {
		s.log.Info("write to the agent failed; connection closed", zap.String("type", m.Type), zap.Error(err))
		s.closeConn()
		return
	}
	s.ls.lastWrite = time.Now()
}

// closeConn closes the agent's connection, if any, without a word.
func (s *Server) closeConn() {
	if s.ls.conn != nil {
		_ = s.ls.conn.Close()
		s.ls.conn, s.ls.w = nil, nil
	}
}
