package tradovatefake

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Penalty tickets on any REST endpoint, as the broker issues them: per
// client address (its /24), whatever the login, as HTTP 200 with
// {"p-ticket":…,"p-time":N}; the request is not handled. A resend of the
// same endpoint carrying the ticket ("p-ticket" in the JSON body, or a
// p-ticket query parameter for a request without a body) is handled once
// p-time has passed by Options.Now, and is not counted; an earlier one
// gets the same ticket with the time that remains. The login's own
// tickets (PenaltyTicket, Captcha) are kept apart, in auth.go.

// defaultAddressPenalty is the p-time of a ticket for requests over
// Options.AddressLimit when Options.AddressPenalty is zero.
const defaultAddressPenalty = time.Second

// penalties is the fake's generic tickets and counts, guarded by its mu.
type penalties struct {
	mu      sync.Mutex
	tickets map[string]pending     // by ticket
	next    map[string]penaltyNext // PenalizeNext, by endpoint
	seen    map[string][]time.Time // requests counted, by address
	issued  map[string]int         // tickets issued, by endpoint
	handled map[string]int         // ticketed resends handled, by endpoint
}

// pending is a ticket issued and not yet honoured.
type pending struct {
	endpoint string
	ripe     time.Time
}

// penaltyNext is a PenalizeNext order.
type penaltyNext struct {
	n    int
	wait time.Duration
}

func (p *penalties) init() {
	p.tickets = make(map[string]pending)
	p.next = make(map[string]penaltyNext)
	p.seen = make(map[string][]time.Time)
	p.issued = make(map[string]int)
	p.handled = make(map[string]int)
}

// PenalizeNext makes the next n requests of path, REST ("/order/cancelorder",
// "contract/find"; case and the /v1 prefix do not matter) or a socket's
// ("user/syncrequest"), answer a penalty ticket with p-time wait (whole
// seconds, rounded up), without handling them. The ticketed resends are
// not affected.
func (s *Server) PenalizeNext(path string, n int, wait time.Duration) {
	s.pen.mu.Lock()
	s.pen.next[countKey(path)] = penaltyNext{n: max(n, 0), wait: max(wait, 0)}
	s.pen.mu.Unlock()
}

// Tickets counts the penalty tickets the fake issued for a REST path
// (as Requests names it), not counting the login's own (PenaltyTicket).
func (s *Server) Tickets(path string) int {
	s.pen.mu.Lock()
	defer s.pen.mu.Unlock()
	return s.pen.issued[countKey(path)]
}

// TicketedHandled counts the resends with a ripe ticket the fake handled
// for a REST path.
func (s *Server) TicketedHandled(path string) int {
	s.pen.mu.Lock()
	defer s.pen.mu.Unlock()
	return s.pen.handled[countKey(path)]
}

// addressOf is the client address a ticket is counted for: an IPv4
// address's /24, another address whole.
func addressOf(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	if ip := net.ParseIP(host).To4(); ip != nil {
		return ip.Mask(net.CIDRMask(24, 32)).String() + "/24"
	}
	return host
}

// penalize answers a penalty ticket when the request earns one and
// reports whether it did. It reads the body and puts it back.
func (s *Server) penalize(w http.ResponseWriter, r *http.Request) bool {
	key := countKey(r.URL.Path)
	if key == "websocket" || key == "md/websocket" || !strings.Contains(key, "/") {
		return false // the sockets and the OAuth page
	}
	ticket := r.URL.Query().Get("p-ticket")
	if r.Body != nil && r.Body != http.NoBody {
		b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err == nil {
			r.Body = io.NopCloser(bytes.NewReader(b))
			var t struct {
				Ticket string `json:"p-ticket"`
			}
			if json.Unmarshal(b, &t) == nil && t.Ticket != "" {
				ticket = t.Ticket
			}
		}
	}
	now := s.opts.Now()
	s.pen.mu.Lock()
	defer s.pen.mu.Unlock()
	if t, ok := s.pen.tickets[ticket]; ok && t.endpoint == key {
		if now.Before(t.ripe) {
			writeJSON(w, http.StatusOK, penaltyBody{PTicket: ticket, PTime: seconds(t.ripe.Sub(now))})
			return true
		}
		delete(s.pen.tickets, ticket)
		s.pen.handled[key]++
		return false
	}
	if nx := s.pen.next[key]; nx.n > 0 {
		nx.n--
		s.pen.next[key] = nx
		s.ticketLocked(w, key, now, nx.wait)
		return true
	}
	if s.opts.AddressLimit <= 0 {
		return false
	}
	addr := addressOf(r.RemoteAddr)
	seen := s.pen.seen[addr]
	from := now.Add(-s.opts.AddressWindow)
	i := 0
	for i < len(seen) && !seen[i].After(from) {
		i++
	}
	seen = seen[i:]
	if len(seen) >= s.opts.AddressLimit {
		s.pen.seen[addr] = seen
		s.ticketLocked(w, key, now, s.opts.AddressPenalty)
		return true
	}
	s.pen.seen[addr] = append(seen, now)
	return false
}

// ticketLocked answers a new ticket for endpoint key, ripe after wait.
func (s *Server) ticketLocked(w http.ResponseWriter, key string, now time.Time, wait time.Duration) {
	writeJSON(w, http.StatusOK, s.issueTicketLocked(key, now, wait))
}

// issueTicketLocked records a new ticket for endpoint key, ripe after
// wait, and returns its body.
func (s *Server) issueTicketLocked(key string, now time.Time, wait time.Duration) penaltyBody {
	id := randomToken()
	s.pen.tickets[id] = pending{endpoint: key, ripe: now.Add(wait)}
	s.pen.issued[key]++
	return penaltyBody{PTicket: id, PTime: seconds(wait)}
}

// socketTicket answers a PenalizeNext ticket for a socket request: the
// same shape as on REST, as the reply's data with status 200. The fake
// does not take a ticketed resend over a socket: a client sends the
// request again once p-time passed.
func (s *Server) socketTicket(endpoint string) (penaltyBody, bool) {
	key := countKey(endpoint)
	s.pen.mu.Lock()
	defer s.pen.mu.Unlock()
	nx := s.pen.next[key]
	if nx.n <= 0 {
		return penaltyBody{}, false
	}
	nx.n--
	s.pen.next[key] = nx
	return s.issueTicketLocked(key, s.opts.Now(), nx.wait), true
}
