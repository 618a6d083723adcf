package tradovatefake

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/zap"

	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// maxFrame bounds a client frame.
const maxFrame = 1 << 20

// socket is one websocket connection: user data or market data.
type socket struct {
	conn   *websocket.Conn
	md     bool
	ctx    context.Context
	cancel context.CancelFunc

	// token is the token the socket was authorized with; empty before.
	// Only the reading goroutine uses it.
	token string

	// Owned by the loop: whether user/syncrequest subscribed the socket to
	// props events, and the contracts whose quotes it follows (true while
	// the first quote after subscribing is still to be sent).
	synced bool
	quotes map[int64]bool
	gone   bool

	closed atomic.Bool
}

// userSocket serves the user-data socket.
func (s *Server) userSocket(w http.ResponseWriter, r *http.Request) {
	if s.refusedUserSocket(w) {
		return
	}
	s.serveSocket(w, r, false)
}

// mdSocket serves the market-data socket.
func (s *Server) mdSocket(w http.ResponseWriter, r *http.Request) { s.serveSocket(w, r, true) }

// serveSocket accepts a socket, sends "o", and reads its requests until it
// closes.
func (s *Server) serveSocket(w http.ResponseWriter, r *http.Request, md bool) {
	s.sockMu.Lock()
	if s.closed {
		s.sockMu.Unlock()
		http.Error(w, "closed", http.StatusServiceUnavailable)
		return
	}
	s.wg.Add(1)
	s.sockMu.Unlock()
	defer s.wg.Done()

	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	conn.SetReadLimit(maxFrame)
	ctx, cancel := context.WithCancel(s.ctx)
	sock := &socket{conn: conn, md: md, ctx: ctx, cancel: cancel, quotes: make(map[int64]bool)}
	s.sockMu.Lock()
	if s.closed {
		s.sockMu.Unlock()
		cancel()
		_ = conn.CloseNow()
		return
	}
	s.sockets[sock] = struct{}{}
	s.sockMu.Unlock()
	defer s.dropSocket(sock)

	if !s.send(sock, tradovatewire.FormatOpen()) {
		return
	}
	s.wg.Add(1)
	go s.heartbeat(sock)
	for {
		// A client silent for ClientSilence is dropped (reading with an
		// ended context closes the connection).
		rctx, cancel := context.WithTimeout(ctx, s.opts.ClientSilence)
		typ, b, err := conn.Read(rctx)
		cancel()
		if err != nil {
			return
		}
		if typ != websocket.MessageText || tradovatewire.IsClientHeartbeat(b) {
			continue
		}
		req, err := tradovatewire.ParseRequest(b)
		if err != nil {
			s.log.Debug("malformed frame; socket closed")
			_ = conn.Close(websocket.StatusPolicyViolation, "malformed frame")
			return
		}
		s.count(req.Endpoint)
		s.request(sock, req)
	}
}

// heartbeat sends "h" every Options.Heartbeat until the socket closes.
func (s *Server) heartbeat(sock *socket) {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-sock.ctx.Done():
			return
		case <-t.C:
			if !s.send(sock, tradovatewire.FormatHeartbeat()) {
				return
			}
		}
	}
}

// send writes one frame; a failed write closes the socket.
func (s *Server) send(sock *socket, frame []byte) bool {
	if sock.closed.Load() {
		return false
	}
	ctx, cancel := context.WithTimeout(sock.ctx, writeTimeout)
	defer cancel()
	if err := sock.conn.Write(ctx, websocket.MessageText, frame); err != nil {
		s.closeSocket(sock)
		return false
	}
	return true
}

// sendMessages writes an "a" frame of msgs.
func (s *Server) sendMessages(sock *socket, msgs ...tradovatewire.Message) bool {
	frame, err := tradovatewire.FormatMessages(msgs...)
	if err != nil {
		s.log.Error("cannot encode a frame", zap.Error(err))
		return false
	}
	return s.send(sock, frame)
}

// respond answers request id with status and data (nil leaves d out).
func (s *Server) respond(sock *socket, id int64, status int, data any) bool {
	m, err := tradovatewire.Response(id, status, data)
	if err != nil {
		s.log.Error("cannot encode a response", zap.Error(err))
		return false
	}
	return s.sendMessages(sock, m)
}

// closeSocket cuts a socket at once (no close frame).
func (s *Server) closeSocket(sock *socket) {
	if sock.closed.CompareAndSwap(false, true) {
		sock.cancel()
		_ = sock.conn.CloseNow()
	}
}

// closeSockets cuts every open socket.
func (s *Server) closeSockets() {
	s.sockMu.Lock()
	socks := make([]*socket, 0, len(s.sockets))
	for sock := range s.sockets {
		socks = append(socks, sock)
	}
	s.sockMu.Unlock()
	for _, sock := range socks {
		s.closeSocket(sock)
	}
}

// dropSocket forgets a socket whose reading ended: it is closed, and its
// quote subscriptions are released.
func (s *Server) dropSocket(sock *socket) {
	s.closeSocket(sock)
	s.sockMu.Lock()
	delete(s.sockets, sock)
	s.sockMu.Unlock()
	s.do(func() { s.releaseQuotes(sock) })
}

// openSockets returns the open sockets of a kind.
func (s *Server) openSockets(md bool) []*socket {
	s.sockMu.Lock()
	defer s.sockMu.Unlock()
	out := make([]*socket, 0, len(s.sockets))
	for sock := range s.sockets {
		if sock.md == md && !sock.closed.Load() {
			out = append(out, sock)
		}
	}
	return out
}

// request answers one request of a socket. The first must be authorize;
// before it succeeds every other request is answered 401.
func (s *Server) request(sock *socket, req tradovatewire.Request) {
	if s.answerTooMany(sock, req) {
		return
	}
	if req.Endpoint == tradovatewire.AuthorizeEndpoint {
		token := strings.Trim(strings.TrimSpace(string(req.Body)), `"`)
		kinds := []tokenKind{kindAccess, kindOAuth}
		if sock.md {
			kinds = []tokenKind{kindMD, kindOAuth}
		}
		if !s.validToken(token, kinds...) || (!sock.md && s.takeUnauthorize()) {
			s.respond(sock, req.ID, http.StatusUnauthorized, textAccessDenied)
			return
		}
		sock.token = token
		s.respond(sock, req.ID, http.StatusOK, nil)
		return
	}
	if sock.token == "" {
		s.respond(sock, req.ID, http.StatusUnauthorized, textAccessDenied)
		return
	}
	endpoint := strings.ToLower(req.Endpoint)
	if tk, ok := s.socketTicket(endpoint); ok {
		s.respond(sock, req.ID, http.StatusOK, tk)
		return
	}
	switch {
	case sock.md && (endpoint == "md/subscribequote" || endpoint == "md/unsubscribequote"):
		s.quoteRequest(sock, req, endpoint == "md/subscribequote")
	case sock.md:
		s.respond(sock, req.ID, http.StatusNotFound, textNotFound)
	case endpoint == "user/syncrequest":
		s.syncRequest(sock, req)
	default:
		s.restOverSocket(sock, req)
	}
}

// syncRequest answers user/syncrequest with the whole state and subscribes
// the socket to props events. The answer and the subscription happen in
// the loop, so that no event is missed or sent before the answer.
func (s *Server) syncRequest(sock *socket, req tradovatewire.Request) {
	if len(req.Body) > 0 {
		var body tradovatewire.SyncRequest
		if err := json.Unmarshal(req.Body, &body); err != nil {
			s.respond(sock, req.ID, http.StatusBadRequest, "The request body is not valid JSON.")
			return
		}
		s.seeSync(body)
		if len(body.Users) > 0 && len(body.EntityTypes) > 0 {
			// The partner documentation: users is not to be combined
			// with entityTypes.
			s.respond(sock, req.ID, http.StatusBadRequest, "users cannot be combined with entityTypes.")
			return
		}
	}
	if !s.do(func() {
		s.drain()
		snap, err := s.snapshot()
		if err != nil {
			s.log.Warn("simulator call failed", zap.Error(err))
			s.respond(sock, req.ID, http.StatusInternalServerError, "The server failed.")
			return
		}
		if s.respond(sock, req.ID, http.StatusOK, snap) {
			sock.synced = true
		}
	}) {
		s.closeSocket(sock)
	}
}

// snapshot is the syncrequest answer: every entity of the user. It runs
// in the loop.
func (s *Server) snapshot() (syncEntity, error) {
	os, err := s.sessionOrders()
	if err != nil {
		return syncEntity{}, err
	}
	fills, err := s.sessionFills()
	if err != nil {
		return syncEntity{}, err
	}
	snap := syncEntity{
		Users: []userEntity{{User: tradovatewire.User{ID: UserID, Name: s.opts.Name},
			Timestamp: tradovatewire.FormatTime(s.st.started), Email: s.email(), Status: userStatus}},
		Accounts:      s.accountEntities(),
		Positions:     s.positionEntities(),
		Orders:        orderEntities(os),
		OrderVersions: versionEntities(os),
		Fills:         fills,
		Commands:      s.sessionCommands(),
		Contracts:     []contractEntity{},
	}
	for _, a := range s.st.accounts {
		snap.CashBalances = append(snap.CashBalances, a.cashEntity())
	}
	for id := firstContractID; id < int(s.st.nextContract) && !s.withholding(); id++ {
		snap.Contracts = append(snap.Contracts, s.st.contractByID[int64(id)].entity(s.st.started))
	}
	for _, p := range s.st.positions {
		p.markSent()
	}
	return snap, nil
}

// restOverSocket answers any other request of the user socket as the REST
// API would answer it (the broker serves its REST endpoints over the
// socket too): status s and the JSON answer as d. Every event the
// simulator published before the request is sent before its answer,
// whatever the endpoint, so a request is a barrier.
func (s *Server) restOverSocket(sock *socket, req tradovatewire.Request) {
	start := time.Now()
	defer func() { s.busy.Add(int64(time.Since(start))) }()
	if !s.do(s.drain) {
		s.closeSocket(sock)
		return
	}
	method := http.MethodGet
	if len(req.Body) > 0 {
		method = http.MethodPost
	}
	target := "/v1/" + strings.ToLower(strings.TrimPrefix(req.Endpoint, "/"))
	if req.Query != "" {
		target += "?" + req.Query
	}
	hr := httptest.NewRequestWithContext(sock.ctx, method, "http://tradovate"+target, strings.NewReader(string(req.Body)))
	hr.Header.Set("Authorization", "Bearer "+sock.token)
	hr.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.mux.ServeHTTP(rec, hr)
	var data any
	if b := rec.Body.Bytes(); len(b) > 0 {
		if json.Valid(b) {
			data = json.RawMessage(b)
		} else {
			data = strings.TrimSpace(string(b))
		}
	}
	s.respond(sock, req.ID, rec.Code, data)
}

// quoteRequest answers md/subscribequote and md/unsubscribequote. The
// body's symbol is the broker's name ("ESZ6") or a contract id. After a
// subscription the socket gets the contract's current quote, then every
// change of it.
func (s *Server) quoteRequest(sock *socket, req tradovatewire.Request, subscribe bool) {
	var body struct {
		Symbol json.RawMessage `json:"symbol"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil || len(body.Symbol) == 0 {
		s.respond(sock, req.ID, http.StatusBadRequest, "symbol is required.")
		return
	}
	if text := s.quoteRefusal.Load(); text != nil && subscribe {
		s.respond(sock, req.ID, http.StatusOK, map[string]string{"errorText": *text})
		return
	}
	if !s.do(func() {
		s.drain()
		c := s.symbolContract(body.Symbol)
		if c == nil {
			s.respond(sock, req.ID, http.StatusNotFound, "Unknown symbol.")
			return
		}
		if !subscribe {
			s.unsubscribeQuote(sock, c)
			s.respond(sock, req.ID, http.StatusOK, nil)
			return
		}
		if err := s.subscribeQuote(sock, c); err != nil {
			s.log.Warn("simulator subscription failed", zap.Error(err))
			s.respond(sock, req.ID, http.StatusInternalServerError, "The server failed.")
			return
		}
		if !s.respond(sock, req.ID, http.StatusOK, nil) {
			return
		}
		s.drain()
		if sock.quotes[c.id] { // the simulator published nothing new: send the quote as it stands
			s.sendCurrentQuote(sock, c)
		}
	}) {
		s.closeSocket(sock)
	}
}

// symbolContract returns the contract a subscription names: a symbol
// string or a contract id. It runs in the loop.
func (s *Server) symbolContract(raw json.RawMessage) *contractState {
	var name string
	if err := json.Unmarshal(raw, &name); err == nil {
		return s.findContract(name)
	}
	id, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return nil
	}
	return s.st.contractByID[id]
}

// errSocketGone reports a subscription of a socket that already closed.
var errSocketGone = errors.New("tradovatefake: socket closed")
