package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/events"
	"tradebridge/relay/tradecall"
)

// Protocol constants: part of the socket's contract (see the package
// documentation), not tuning.
const (
	// DefaultPnlInterval is the pnlUpdate interval of a streamPnl frame
	// that names none.
	DefaultPnlInterval = time.Second
	// MinPnlInterval and MaxPnlInterval bound the interval a client may
	// ask for; MinPnlInterval also bounds how often the relay asks one
	// user's agent for P&L.
	MinPnlInterval = 250 * time.Millisecond
	MaxPnlInterval = 60 * time.Second
)

// SubscriptionPolicy is the default per-user budget of subscribe and
// unsubscribe frames, across all of the user's sockets: the spec's "about
// 20 per minute", with a burst of 10.
var SubscriptionPolicy = budget.Policy{Name: "subscriptions", Rate: 20, Period: time.Minute, Burst: 10}

// Upstream reaches users' agents; *hub.Hub implements it. The relay also
// calls the Server's HandleEvent and HandleStatus with what the agents
// report.
type Upstream interface {
	// Call runs an RPC on the user's agent (see hub.Hub.Call).
	Call(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error)
	// Connected reports whether the user's agent is connected now.
	Connected(userID string) bool
}

// Authenticator checks API tokens; *auth.Authenticator implements it.
type Authenticator interface {
	Authenticate(ctx context.Context, token string, want auth.Kind) (auth.Principal, error)
}

// Metrics receives the stream's counts; *metrics.Metrics implements it.
// Methods must be safe for concurrent use and cheap.
type Metrics interface {
	// StreamSockets moves the open-socket gauge.
	StreamSockets(delta int)
	// StreamQuotes counts quotes written to sockets and quotes replaced by
	// a newer one of the same instrument before they were written.
	StreamQuotes(delivered, conflated int)
	// StreamClosed counts a closed socket by the close code sent (0 when
	// the connection was already gone).
	StreamClosed(code int)
}

// Clock is the time source of P&L streaming, injectable for tests.
type Clock interface {
	Now() time.Time
	NewTicker(d time.Duration) Ticker
}

// Ticker is a time.Ticker behind an interface.
type Ticker interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop()
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTicker struct{ t *time.Ticker }

func (t realTicker) C() <-chan time.Time   { return t.t.C }
func (t realTicker) Reset(d time.Duration) { t.t.Reset(d) }
func (t realTicker) Stop()                 { t.t.Stop() }

// Options configure a Server. Zero values mean the defaults named.
type Options struct {
	// Auth checks API tokens. Required unless Admit is set.
	Auth Authenticator
	// Admit admits the upgrades (Door) and re-verifies the sockets'
	// tokens; the relay passes the one Admitter of every door. Default: a
	// new Admitter of Auth.
	Admit *admit.Admitter
	// Upstream reaches the agents. Required.
	Upstream Upstream
	// Budget is the per-user trading budget, the same limiter as the HTTP
	// API's (api.API.Budget): rpc frames and socket upgrades are charged
	// to it. Required, so that the two can never be configured apart.
	Budget *budget.Limiter
	// Idempotency is the store of keyed writes' outcomes, the HTTP API's
	// (api.Options.Idempotency): an rpc write with idempotencyKey or
	// orderId runs under the same rule on either door
	// (tradecall.KeyedWrites). Required, so that a socket can never skip
	// it.
	Idempotency tradecall.IdempotencyStore
	// IPBudget, when set, is checked per client address before the token,
	// as on the HTTP API.
	IPBudget *budget.Limiter
	// SubscriptionBudget is the per-user budget of subscribe and
	// unsubscribe frames. Default: a new limiter of SubscriptionPolicy.
	SubscriptionBudget *budget.Limiter
	Logger             *zap.Logger
	// Events is where the rpc writes' activity log entries are published
	// (tradecall.Activity: source stream, the token's id), once the
	// socket has its reply; the relay passes its event spine. Nil
	// records nothing.
	Events events.Publisher
	// Metrics may be nil.
	Metrics Metrics
	// Clock drives P&L streaming. Default: the real clock.
	Clock Clock
	// SessionToken, when set, opens the stream's session door: it reads
	// the dashboard's session from an upgrade request that carries no API
	// token (the cookie; "" when none), and such an upgrade is admitted by
	// SessionDoor (same origin only, every plan, read-only). The relay
	// passes dashboard.SessionToken. Nil means no session door.
	SessionToken func(r *http.Request) string

	// MaxSocketsPerUser bounds one user's open sockets; one more is
	// accepted and closed at once with 1008. Default 5.
	MaxSocketsPerUser int
	// MaxInstruments bounds the instruments one socket subscribes to.
	// Default 50.
	MaxInstruments int
	// MaxInFlight bounds one socket's RPCs running at once; beyond it an
	// rpc frame is answered too_many_concurrent_requests. Default 16.
	MaxInFlight int
	// ReadLimit bounds a client frame, in bytes; a larger one closes the
	// socket with 1009. Default 64 KiB.
	ReadLimit int64
	// CallTimeout bounds an RPC. Default 30 s.
	CallTimeout time.Duration
	// SubscribeTimeout bounds the agent's answer to a subscription change.
	// Default 10 s.
	SubscribeTimeout time.Duration
	// PnlTimeout bounds one P&L poll. Default 5 s.
	PnlTimeout time.Duration
	// WriteTimeout bounds one frame's write: a client that reads nothing
	// for this long while the relay has something to send is cut off.
	// Default 10 s.
	WriteTimeout time.Duration
	// PingInterval is how often the relay pings an idle client; a ping
	// unanswered within WriteTimeout ends the socket. Default 30 s;
	// negative disables pings.
	PingInterval time.Duration
	// ReverifyInterval is how often a socket's token and plan are checked
	// again, so that a revoked token or a downgraded plan ends its sockets.
	// Default 30 s. Besides, every rpc and subscription frame checks them
	// first, through the Admitter's cache (2 s).
	ReverifyInterval time.Duration
	// SessionReverifyInterval is how often a dashboard session's socket
	// checks its session again (a store read: sessions are never cached),
	// so that signing out ends it soon. Default 2 s.
	SessionReverifyInterval time.Duration
	// CloseGrace bounds each step of closing a socket (the last writes,
	// the close handshake) before the connection is dropped. Default 2 s.
	CloseGrace time.Duration
	// MaxActivityQueue bounds the activity entries waiting for one
	// socket's writer; an entry beyond it is dropped and counted (the
	// activity frames' dropped). Default 256.
	MaxActivityQueue int
	// BadFrameLimit is how many malformed frames a client may send in a
	// row, or within BadFrameWindow, before the socket is closed with
	// 1008. Default 10 in a row or within 1 minute.
	BadFrameLimit  int
	BadFrameWindow time.Duration
	// OriginPatterns, when set, restricts the browser origins allowed to
	// open a socket (see websocket.AcceptOptions). By default every origin
	// is allowed: the credential is the API token sent with the upgrade,
	// never a cookie, so a foreign page cannot ride on a user's session.
	OriginPatterns []string
}

func (o *Options) setDefaults() error {
	if (o.Auth == nil && o.Admit == nil) || o.Upstream == nil || o.Budget == nil || o.Idempotency == nil {
		return errors.New("stream: Options.Auth (or Options.Admit), Options.Upstream, Options.Budget and Options.Idempotency are required")
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Admit == nil {
		a, err := admit.New(admit.Options{Auth: o.Auth, Logger: o.Logger})
		if err != nil {
			return err
		}
		o.Admit = a
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.SubscriptionBudget == nil {
		l, err := budget.New(budget.Options{Policy: SubscriptionPolicy})
		if err != nil {
			return err
		}
		o.SubscriptionBudget = l
	}
	type intOpt struct {
		name string
		v    *int
		def  int
	}
	for _, f := range []intOpt{
		{"MaxSocketsPerUser", &o.MaxSocketsPerUser, 5},
		{"MaxInstruments", &o.MaxInstruments, 50},
		{"MaxInFlight", &o.MaxInFlight, 16},
		{"BadFrameLimit", &o.BadFrameLimit, 10},
		{"MaxActivityQueue", &o.MaxActivityQueue, 256},
	} {
		if *f.v < 0 {
			return fmt.Errorf("stream: Options.%s must not be negative", f.name)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if o.ReadLimit < 0 {
		return errors.New("stream: Options.ReadLimit must not be negative")
	}
	if o.ReadLimit == 0 {
		o.ReadLimit = 64 << 10
	}
	if o.ReadLimit < 512 {
		return errors.New("stream: Options.ReadLimit must be at least 512 bytes")
	}
	type durOpt struct {
		name string
		v    *time.Duration
		def  time.Duration
	}
	for _, f := range []durOpt{
		{"CallTimeout", &o.CallTimeout, 30 * time.Second},
		{"SubscribeTimeout", &o.SubscribeTimeout, 10 * time.Second},
		{"PnlTimeout", &o.PnlTimeout, 5 * time.Second},
		{"WriteTimeout", &o.WriteTimeout, 10 * time.Second},
		{"ReverifyInterval", &o.ReverifyInterval, 30 * time.Second},
		{"SessionReverifyInterval", &o.SessionReverifyInterval, 2 * time.Second},
		{"CloseGrace", &o.CloseGrace, 2 * time.Second},
		{"BadFrameWindow", &o.BadFrameWindow, time.Minute},
	} {
		if *f.v < 0 {
			return fmt.Errorf("stream: Options.%s must not be negative", f.name)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if o.PingInterval == 0 {
		o.PingInterval = 30 * time.Second
	}
	return nil
}
