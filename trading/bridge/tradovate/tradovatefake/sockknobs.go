package tradovatefake

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// DefaultClientSilence is how long the fake lets a socket go without a
// frame from its client (a "[]" heartbeat or a request) before it drops
// it. The broker asks clients for a heartbeat every 2.5 seconds and does
// not document its own deadline; four missed heartbeats is the fake's.
const DefaultClientSilence = 10 * time.Second

// Reason codes of the shutdown event (ShutdownSockets).
const (
	// ShutdownConnectionQuota: the user holds more sockets than the broker
	// allows; the oldest is closed (and its token revoked).
	ShutdownConnectionQuota = "ConnectionQuotaReached"
	// ShutdownIPQuota: more addresses than the broker allows hold sockets
	// of the user.
	ShutdownIPQuota = "IPQuotaReached"
	// ShutdownMaintenance: the broker restarts its servers.
	ShutdownMaintenance = "Maintenance"
)

// sockKnobs are the knobs of the sockets' failures. Guarded by mu.
type sockKnobs struct {
	mu sync.Mutex
	// tooMany counts, by lower-case endpoint, the socket requests still
	// to answer {"s":429}.
	tooMany map[string]int
	// withhold leaves contracts out of the sync answer and of the props
	// events; slowContract delays contract/item answers.
	withhold     bool
	slowContract time.Duration
}

// SocketRateLimit makes the next n socket requests to endpoint
// ("user/syncrequest", "md/subscribequote", "authorize"; case does not
// matter) answer as the broker's socket answers a request over its rate
// limits: {"s":429,"i":id}, with no data and no penalty ticket. The broker
// then refuses the user for an hour; the fake answers only the n.
func (s *Server) SocketRateLimit(endpoint string, n int) {
	s.sk.mu.Lock()
	defer s.sk.mu.Unlock()
	if s.sk.tooMany == nil {
		s.sk.tooMany = make(map[string]int)
	}
	s.sk.tooMany[strings.ToLower(strings.TrimPrefix(endpoint, "/"))] = max(n, 0)
}

// takeTooMany reports whether a socket request to endpoint is to answer
// 429, counting it.
func (s *Server) takeTooMany(endpoint string) bool {
	s.sk.mu.Lock()
	defer s.sk.mu.Unlock()
	key := strings.ToLower(strings.TrimPrefix(endpoint, "/"))
	if s.sk.tooMany[key] <= 0 {
		return false
	}
	s.sk.tooMany[key]--
	return true
}

// WithholdContracts, while on, leaves contract entities out of the
// syncrequest answer and of the props events, so that a client learns a
// contract it has not met only from contract/item.
func (s *Server) WithholdContracts(on bool) {
	s.sk.mu.Lock()
	s.sk.withhold = on
	s.sk.mu.Unlock()
}

func (s *Server) withholding() bool {
	s.sk.mu.Lock()
	defer s.sk.mu.Unlock()
	return s.sk.withhold
}

// SlowContractItem delays every contract/item answer by d (0 stops it),
// as a busy broker does, without holding anything else of the fake.
func (s *Server) SlowContractItem(d time.Duration) {
	s.sk.mu.Lock()
	s.sk.slowContract = max(d, 0)
	s.sk.mu.Unlock()
}

// slowContractItem waits the delay of contract/item, or until the
// request ends.
func (s *Server) slowContractItem(ctx context.Context) {
	s.sk.mu.Lock()
	d := s.sk.slowContract
	s.sk.mu.Unlock()
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// shutdownData is the data of the shutdown event.
type shutdownData struct {
	ReasonCode string `json:"reasonCode"`
	Reason     string `json:"reason,omitempty"`
}

// ShutdownSockets sends the shutdown event with reasonCode (one of the
// Shutdown* constants, or any text) on every open socket, then closes
// them, as the broker does when it ends sockets on purpose.
func (s *Server) ShutdownSockets(reasonCode string) {
	m, err := tradovatewire.Event(tradovatewire.EventShutdown, shutdownData{ReasonCode: reasonCode,
		Reason: "The server closed the connection: " + reasonCode})
	if err != nil {
		return
	}
	for _, md := range []bool{false, true} {
		for _, sock := range s.openSockets(md) {
			s.sendMessages(sock, m)
			s.closeSocket(sock)
		}
	}
}

// answerTooMany answers a socket request 429 when SocketRateLimit asks
// for it.
func (s *Server) answerTooMany(sock *socket, req tradovatewire.Request) bool {
	if !s.takeTooMany(req.Endpoint) {
		return false
	}
	s.respond(sock, req.ID, http.StatusTooManyRequests, nil)
	return true
}
