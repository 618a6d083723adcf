package webhook

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"time"

	"go.uber.org/zap"

	"tradebridge/internal/lifecycle"
	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/events"
	"tradebridge/relay/keylock"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
	"tradebridge/relay/tradecall"
)

// Store is the part of store.Store the door uses.
type Store interface {
	KeyStore
	Lookup
	ReceiveWebhookAlert(ctx context.Context, claim store.Idempotent, expiredBefore time.Time, a store.WebhookAlert,
		answer func(seq int64) store.Idempotent) (int64, store.Idempotent, bool, error)
	FinishWebhookAlert(ctx context.Context, userID string, seq int64, from []string, u store.WebhookAlertUpdate, dup store.Idempotent) (bool, error)
	UpdateWebhookAlert(ctx context.Context, userID string, seq int64, from []string, u store.WebhookAlertUpdate) (bool, error)
	ListWebhookAlerts(ctx context.Context, userID string, before int64, limit int) ([]store.WebhookAlert, error)
	CountWebhookAlerts(ctx context.Context, userID, rateID string, since time.Time) (int, error)
	OverdueWebhookAlerts(ctx context.Context, dueBefore time.Time, limit int) ([]store.WebhookAlert, error)
	StaleWebhookAlerts(ctx context.Context, runningBefore time.Time, limit int) ([]store.WebhookAlert, error)
}

// Manager runs the Management API's routes in process;
// *manage.Server implements it.
type Manager interface {
	Invoke(ctx context.Context, p auth.Principal, src protocol.ActivitySource, method, path string, body []byte) (int, []byte)
}

// Links reads a user's broker link: store.ErrNotFound when none.
type Links interface {
	BrokerLink(ctx context.Context, userID string) (store.BrokerLink, error)
}

// Metrics counts the door's requests by outcome; *metrics.Metrics
// implements it.
type Metrics interface {
	WebhookAlert(outcome string)
}

// Options configure a Server.
type Options struct {
	// Store keeps the webhooks, the alert history and the duplicates'
	// claims. Required.
	Store Store
	// Keys seals the webhooks' keys (the relay's key ring, as the alert
	// destinations' secrets). Required.
	Keys *sealed.Keyring
	// Admit admits the GET routes' API tokens; the relay passes the one
	// Admitter of every door. Required. The alerts are admitted by an
	// Admitter of the Server's own, over the webhooks' keys.
	Admit *admit.Admitter
	// Refusals is told of the alerts refused for the user's trading
	// budget (the relay's, which records them in the activity log); nil
	// tells no one.
	Refusals admit.Refusals
	// IPBudget is the per-client-address budget checked first; nil
	// means none.
	IPBudget *budget.Limiter
	// Budget is the user's trading budget, the same limiter as the
	// trading API's. Required.
	Budget *budget.Limiter
	// ReadBudget is the per-user budget of the two GET routes; the zero
	// value means ReadPolicy.
	ReadBudget budget.Policy
	// Budgets keeps ReadBudget, and the alerts' in-flight leases, where
	// every relay node sees them; nil means this node's memory.
	Budgets budget.Backend
	// Desktop calls the users' agents (the hub, or the cluster).
	// Required.
	Desktop agentcall.Caller
	// Broker calls the broker family (relay/broker's Manager); nil
	// refuses destination=broker with tradovate_not_linked.
	Broker tradecall.Caller
	// Manage sets the kill switch (kill_switch=); nil refuses it.
	Manage Manager
	// Links tells a dry run (Try) whether the user linked a broker login;
	// store.Store implements it. Nil: a dry run does not check the link.
	Links Links
	// Events is where the activity log's entries are published; nil
	// publishes none.
	Events events.Publisher
	// Metrics counts the requests; nil counts none.
	Metrics Metrics
	// Allow, when not empty, is the only source addresses admitted
	// (relay serve --webhook-allow).
	Allow []netip.Prefix
	// DuplicateWindow is how long an alert's body makes an equal one a
	// duplicate. Default DefaultDuplicateWindow.
	DuplicateWindow time.Duration
	// AnswerWithin bounds how long a request waits for its calls before
	// answering 202 running. Default DefaultAnswerWithin.
	AnswerWithin time.Duration
	// CallTimeout bounds each trading call. Default 30 s (the trading
	// API's).
	CallTimeout time.Duration
	// SweepEvery is how often Run looks for scheduled alerts whose node
	// stopped. Default DefaultSweepEvery.
	SweepEvery time.Duration
	// Clock is the time of the alerts (received, windows, rate limits).
	// Nil means time.Now.
	Clock func() time.Time
	// Logger; the Server logs as "webhook". Nil means no logging.
	Logger *zap.Logger
}

// Defaults of Options.
const (
	DefaultDuplicateWindow = 2 * time.Second
	DefaultAnswerWithin    = 2500 * time.Millisecond
	DefaultCallTimeout     = 30 * time.Second
	DefaultSweepEvery      = 10 * time.Second
	// OverdueAfter is how late a scheduled alert may be before the
	// sweeper marks it failed (its node stopped).
	OverdueAfter = 30 * time.Second
	// StaleAfter is how long an alert may stay running before the
	// sweeper marks it failed (its node stopped during its calls): longer
	// than any alert's calls can last (MaxAccounts calls of the longest
	// CallTimeout).
	StaleAfter = 30 * time.Minute
)

// ReadPolicy is the per-user budget of GET /v1/api/webhook and its
// alerts: a dashboard's reads.
var ReadPolicy = budget.Policy{Name: "webhook", Rate: 60, Period: time.Minute, Burst: 20}

// Door is the admission policy of POST /v1/send/{webhookId} (see the
// package documentation): the webhook's key as the token, the pro plan,
// the trading budget (New fills in the budgets and the token reader).
var Door = admit.Door{
	Name:               "webhook",
	Kind:               auth.KindAPI,
	Plan:               auth.PlanPro,
	PlanCode:           errcode.PlanRequired,
	PlanDetail:         "TradingView alerts need the pro plan or higher",
	MissingTokenDetail: "the alert carries no key: add key=<your webhook key>; to its message",
	InvalidTokenDetail: "the webhook or its key is unknown: copy both again from the dashboard",
	Source:             protocol.SourceWebhook,
	RateLimitHeaders:   true,
}

// ReadDoor is the admission policy of the GET routes: the trading API's
// (an API token, the pro plan), then ReadPolicy.
var ReadDoor = func() admit.Door {
	d := tradecall.Door
	d.Name, d.RateLimitHeaders = "webhook-read", true
	d.PlanDetail = "TradingView alerts need the pro plan or higher"
	return d
}()

// Server is the webhook door. Run sweeps the scheduled alerts; Close
// stops the delayed alerts' timers and the calls still running, and waits
// for them.
type Server struct {
	opts     Options
	log      *zap.Logger
	door     admit.Door
	readDoor admit.Door
	auth     *admit.Admitter
	activity *tradecall.Activity
	ny       *time.Location
	// rates serializes each user's rate-limit count and record.
	rates keylock.Locks
	// group owns the calls that outlive their request and the delayed
	// alerts' timers.
	group lifecycle.Group
}

// New returns a Server.
func New(opts Options) (*Server, error) {
	if opts.Store == nil || opts.Keys == nil || opts.Admit == nil || opts.Budget == nil || opts.Desktop == nil {
		return nil, errors.New("webhook: Options.Store, Keys, Admit, Budget and Desktop are required")
	}
	if opts.DuplicateWindow < 0 || opts.AnswerWithin < 0 || opts.CallTimeout < 0 || opts.SweepEvery < 0 {
		return nil, errors.New("webhook: Options durations must not be negative")
	}
	if opts.DuplicateWindow == 0 {
		opts.DuplicateWindow = DefaultDuplicateWindow
	}
	if opts.AnswerWithin == 0 {
		opts.AnswerWithin = DefaultAnswerWithin
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.SweepEvery == 0 {
		opts.SweepEvery = DefaultSweepEvery
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.ReadBudget == (budget.Policy{}) {
		opts.ReadBudget = ReadPolicy
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		return nil, err
	}
	rb, err := budget.New(budget.Options{Policy: opts.ReadBudget, Backend: opts.Budgets})
	if err != nil {
		return nil, err
	}
	// The key's check runs over the store alone: no cache, so that a
	// rotated key is refused at once on every node.
	adm, err := admit.New(admit.Options{Auth: authenticator{st: opts.Store}, Logger: opts.Logger, Leases: opts.Budgets,
		Refusals: opts.Refusals})
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, log: opts.Logger.Named("webhook"), auth: adm, ny: ny,
		activity: tradecall.NewActivity(opts.Events, opts.Clock)}
	s.door = Door
	s.door.IP = opts.IPBudget
	s.door.Budgets = []*budget.Limiter{opts.Budget}
	s.door.Token = s.token
	// The webhook's principal names the webhook's id where a token's
	// names its hash (authenticator).
	s.door.SourceID = func(p auth.Principal) string { return p.TokenHash }
	s.readDoor = ReadDoor
	s.readDoor.IP = opts.IPBudget
	s.readDoor.Budgets = []*budget.Limiter{rb}
	return s, nil
}

// Mux is where Register adds the routes; *http.ServeMux implements it.
type Mux interface {
	Handle(pattern string, handler http.Handler)
}

// Paths of the GET routes.
const (
	InfoPath    = "/v1/api/webhook"
	AlertsPath  = "/v1/api/webhook/alerts"
	sendPattern = "POST " + SendPath
)

// Register adds the door's routes to mux.
func (s *Server) Register(mux Mux) {
	mux.Handle(sendPattern, http.HandlerFunc(s.send))
	mux.Handle("GET "+InfoPath, http.HandlerFunc(s.info))
	mux.Handle("GET "+AlertsPath, http.HandlerFunc(s.alerts))
}

// Run sweeps the alerts whose node stopped, every SweepEvery, until ctx
// ends or Close is called, marking them failed: the scheduled ones
// OverdueAfter past their due time (ReasonStopped: they are never run
// late) and the ones still running StaleAfter after they started
// (ReasonStoppedRunning: their outcome is unknown). It returns nil.
func (s *Server) Run(ctx context.Context) error {
	ctx, leave, ok := s.group.Enter(ctx)
	if !ok {
		return nil
	}
	defer leave()
	t := time.NewTicker(s.opts.SweepEvery)
	defer t.Stop()
	for {
		s.sweep(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Close stops the delayed alerts' timers (their alerts stay scheduled:
// the sweeper of a node still running marks them failed), cuts short the
// calls still running and waits for them and for Run. It is idempotent.
func (s *Server) Close() error {
	s.group.Close()
	return nil
}

// count counts one request by outcome.
func (s *Server) count(outcome string) {
	if s.opts.Metrics != nil {
		s.opts.Metrics.WebhookAlert(outcome)
	}
}
