// Package ninjatrader is the agent's bridge to NinjaTrader 8: a
// bridge.Platform that speaks the add-on protocol (docs/ninjatrader-protocol.md,
// types in ntwire) to the NinjaScript add-on running inside NinjaTrader
// (installer/ninjatrader), over TCP on 127.0.0.1.
//
// Run dials the add-on (its port and secret come from the add-on's
// discovery file), says hello, takes a snapshot, and from then on keeps a
// mirror of NinjaTrader's connections, accounts, positions, orders,
// executions and strategies up to date from the add-on's numbered events.
// Reads are served from the mirror; writes are requests the add-on answers
// after it has sent the events they caused, so a caller reads its own
// writes. Duplicated events are dropped, events that arrive early wait for
// the missing ones, and a gap that does not close, a reconnect or a new
// add-on session (NinjaTrader restarted) takes a fresh snapshot: whatever
// changed meanwhile reaches the event stream as events.
//
// While the add-on cannot be reached, every call fails with a
// *bridge.UnavailableError saying why (add-on not installed, NinjaTrader
// not running or closed, wrong secret, …), and Run keeps trying with
// backoff. When an ATI fallback is configured, the order commands the ATI
// file interface supports go through it meanwhile (see ATI).
package ninjatrader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/internal/backoff"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// Kind is the platform kind the bridge reports.
const Kind = "ninjatrader"

// Defaults of Options.
const (
	DefaultRequestTimeout = 10 * time.Second
	DefaultDialTimeout    = 2 * time.Second
	DefaultMinBackoff     = 250 * time.Millisecond
	DefaultMaxBackoff     = 5 * time.Second
	// DefaultGapWait is how long an event may wait for a missing one before
	// the bridge takes a snapshot.
	DefaultGapWait = time.Second
	// DefaultGapEvents is how many events may wait for a missing one
	// before the bridge takes a snapshot.
	DefaultGapEvents = 64
)

// Options configures a Platform.
type Options struct {
	// DiscoveryFile is the add-on's discovery file; DefaultDiscoveryFile()
	// when empty.
	DiscoveryFile string
	// Port and Secret, when set, override the discovery file's (with both
	// set, no discovery file is needed).
	Port   int
	Secret string
	// NinjaTraderDir is NinjaTrader's user folder ("Documents\NinjaTrader
	// 8"), used to tell "add-on not installed" from "NinjaTrader not
	// running"; when empty, the folder the discovery file last named
	// (userDataDir), else DefaultNinjaTraderDir() (without Sessions).
	NinjaTraderDir string
	// OverrideTrusted says that Port and Secret come from settings only
	// the machine's administrators can change (the service's config
	// file): with Port set, the listener's process is not checked.
	OverrideTrusted bool
	// PortOwner checks that the process the discovery file names listens
	// on its port and is NinjaTrader, before the bridge connects;
	// DefaultPortOwner() when nil (none on systems without one: no check).
	PortOwner PortOwner
	// Sessions, when set, finds the discovery file of the trader whose
	// NinjaTrader runs (the agent runs as another user, the SYSTEM
	// service), instead of DiscoveryFile.
	Sessions SessionScanner
	// ATI, when set, serves the order commands the ATI file interface
	// supports while the add-on cannot be reached.
	ATI ATI

	Logger *zap.Logger
	// Now is the clock of trading sessions (orders and executions of the
	// current session, watermarks); time.Now when nil.
	Now func() time.Time
	// Client names the agent in its hello.
	Client string

	RequestTimeout time.Duration
	DialTimeout    time.Duration
	MinBackoff     time.Duration
	MaxBackoff     time.Duration
	GapWait        time.Duration
	GapEvents      int
	// PingAfter and DeadAfter override the protocol's ping rule (tests).
	PingAfter time.Duration
	DeadAfter time.Duration
	// EventBuffer is how far a reader of Events may fall behind.
	EventBuffer int
}

// Platform is the NinjaTrader bridge. Create it with New, run its
// connection loop with Run, and Close it.
type Platform struct {
	opts Options
	log  *zap.Logger
	feed *bridge.Feed

	run       bridge.RunGuard
	closeOnce sync.Once

	mu          sync.Mutex
	sess        *session // the ready session, nil while unavailable
	unavailable *bridge.UnavailableError
	sessionID   string // the add-on session last welcomed
	addonVer    string
	platformVer string
	mirror      *mirror
	userDataDir string // NinjaTrader's folder, as the discovery file last named it
}

// New returns a Platform; nothing is dialled until Run.
func New(opts Options) (*Platform, error) {
	if opts.DiscoveryFile == "" {
		opts.DiscoveryFile = DefaultDiscoveryFile()
	}
	if opts.PortOwner == nil {
		opts.PortOwner = DefaultPortOwner()
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Client == "" {
		opts.Client = "tradebridge-agent"
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.RequestTimeout, DefaultRequestTimeout)
	def(&opts.DialTimeout, DefaultDialTimeout)
	def(&opts.MinBackoff, DefaultMinBackoff)
	def(&opts.MaxBackoff, DefaultMaxBackoff)
	def(&opts.GapWait, DefaultGapWait)
	def(&opts.PingAfter, pingAfter)
	def(&opts.DeadAfter, deadAfter)
	if opts.GapEvents <= 0 {
		opts.GapEvents = DefaultGapEvents
	}
	if opts.MaxBackoff < opts.MinBackoff {
		return nil, errors.New("ninjatrader: Options.MaxBackoff is below MinBackoff")
	}
	if opts.Port < 0 || opts.Port > 65535 {
		return nil, errors.New("ninjatrader: Options.Port is out of range")
	}
	p := &Platform{
		opts:        opts,
		log:         opts.Logger,
		feed:        bridge.NewFeed(opts.EventBuffer),
		unavailable: unavailable(ReasonNotStarted),
		mirror:      newMirror(),
	}
	return p, nil
}

// Kind implements bridge.Platform.
func (p *Platform) Kind() string { return Kind }

// Run keeps the bridge connected to the add-on until ctx ends or the
// Platform closes: it dials, takes a snapshot, follows events, and after
// a failure tries again with exponential backoff and full jitter. It
// returns nil when it stops, and an error if it is already running
// (bridge.ErrRunning) or the Platform is closed (bridge.ErrClosed). After
// it returns it may be run again (by the next agent over the same
// platform).
func (p *Platform) Run(ctx context.Context) error {
	ctx, end, err := p.run.Begin(ctx)
	if err != nil {
		return fmt.Errorf("ninjatrader: %w", err)
	}
	defer end()

	var wg sync.WaitGroup
	defer wg.Wait()

	if p.opts.ATI != nil {
		wg.Add(1)
		go func() { defer wg.Done(); p.forwardATI(ctx) }()
	}
	bridge.Reconnect(ctx, backoff.Backoff{Min: p.opts.MinBackoff, Max: p.opts.MaxBackoff}, p.runSession)
	p.setUnavailable(unavailable(ReasonStopped))
	return nil
}

// Close stops Run, waits for it, and ends every event stream. It is
// idempotent.
func (p *Platform) Close() error {
	p.closeOnce.Do(func() {
		p.run.Close()
		p.setUnavailable(unavailable(ReasonStopped))
		p.feed.Close()
	})
	return nil
}

// Events implements bridge.Platform.
func (p *Platform) Events(ctx context.Context) <-chan bridge.Event { return p.feed.Subscribe(ctx) }

// Status describes the link to the add-on, for diagnostics.
type Status struct {
	Connected bool `json:"connected"`
	// Code and Reason say why it is not connected.
	Code            string `json:"code,omitempty"`
	Reason          string `json:"reason,omitempty"`
	SessionID       string `json:"sessionId,omitempty"`
	AddonVersion    string `json:"addonVersion,omitempty"`
	PlatformVersion string `json:"platformVersion,omitempty"`
	// Seq is the last add-on event applied in the current session.
	Seq uint64 `json:"seq"`
	// ATI reports that order commands go to the ATI files meanwhile.
	ATI bool `json:"ati"`
}

// Status returns the link's state.
func (p *Platform) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Status{SessionID: p.sessionID, AddonVersion: p.addonVer, PlatformVersion: p.platformVer}
	if p.sess != nil {
		st.Connected = true
		st.Seq = p.sess.applied()
	} else if p.unavailable != nil {
		st.Code, st.Reason = p.unavailable.Code, p.unavailable.Reason
		st.ATI = p.opts.ATI != nil
	}
	return st
}

// ready returns the ready session, or why there is none.
func (p *Platform) ready() (*session, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.sess != nil:
		return p.sess, nil
	case p.opts.ATI != nil:
		return nil, unavailable(ReasonNeedsAddon)
	}
	return nil, p.unavailable
}

// setUnavailable records why the add-on cannot be reached. When a ready
// session ends, the platform's connections are reported gone.
func (p *Platform) setUnavailable(why *bridge.UnavailableError) {
	p.mu.Lock()
	wasReady := p.sess != nil
	p.sess = nil
	if p.unavailable == nil || p.unavailable.Code != why.Code {
		p.log.Info("ninjatrader: not available", zap.String("why", why.Code))
	}
	p.unavailable = why
	p.mu.Unlock()
	if wasReady {
		p.feed.Publish(bridge.Event{Kind: bridge.EventConnections, Connections: []protocol.Connection{}})
	}
}

// Why the add-on cannot be reached (bridge.UnavailableError.Code).
const (
	ReasonNotStarted       = "not_started"
	ReasonStopped          = "stopped"
	ReasonNotInstalled     = "addon_not_installed"
	ReasonNotRunning       = "ninjatrader_not_running"
	ReasonClosed           = "ninjatrader_closed"
	ReasonWrongSecret      = "wrong_secret"
	ReasonVersion          = "addon_version_unsupported"
	ReasonBusy             = "addon_busy"
	ReasonConnecting       = "connecting"
	ReasonConnectionLost   = "connection_lost"
	ReasonDiscoveryInvalid = "discovery_file_invalid"
	ReasonProtocol         = "addon_protocol_error"
	// ReasonPortOwner: the add-on's port is not the named NinjaTrader's;
	// the bridge does not connect.
	ReasonPortOwner = "addon_port_not_ninjatrader"
	// ReasonDiscoveryUntrusted: the discovery file is not the trader's.
	ReasonDiscoveryUntrusted = "discovery_file_untrusted"
	// ReasonSeveralTraders: NinjaTrader runs for more than one user.
	ReasonSeveralTraders = "several_traders"
)

// reasons are the sentences of the Reason codes, for traders and support.
var reasons = map[string]string{
	ReasonNotStarted:       "the agent has not connected to NinjaTrader yet",
	ReasonStopped:          "the agent's NinjaTrader bridge is stopped",
	ReasonNotInstalled:     "the NinjaTrader add-on is not installed: import it in NinjaTrader with Tools > Import > NinjaScript Add-On",
	ReasonNotRunning:       "NinjaTrader is not running, or its TradeBridge add-on is not installed",
	ReasonClosed:           "NinjaTrader closed",
	ReasonWrongSecret:      "the NinjaTrader add-on refused the agent's secret: remove the secret from the agent's configuration, or copy the add-on's",
	ReasonVersion:          "the NinjaTrader add-on speaks a protocol version the agent does not: update the add-on and the agent",
	ReasonBusy:             "another agent is connected to the NinjaTrader add-on",
	ReasonConnecting:       "the agent is connecting to NinjaTrader",
	ReasonConnectionLost:   "the connection to NinjaTrader's add-on was lost",
	ReasonDiscoveryInvalid: "the NinjaTrader add-on's discovery file cannot be read",
	ReasonProtocol:         "the NinjaTrader add-on broke the protocol; the agent reconnects",
	ReasonPortOwner: "the program listening on the add-on's port is not the NinjaTrader its discovery file names; " +
		"the agent does not connect to it",
	ReasonDiscoveryUntrusted: "the NinjaTrader add-on's discovery file does not belong to the user running NinjaTrader; " +
		"the agent does not trust it",
	ReasonSeveralTraders: "NinjaTrader runs in several users' sessions; the service serves one trader",
	ReasonNeedsAddon: "this needs the NinjaTrader add-on (NinjaTrader: Tools > Import > NinjaScript Add-On); " +
		"without it only orders, cancels, changes, flattens, positions and order states work, through NinjaTrader's ATI files",
}

// unavailable returns the error of a Reason code.
func unavailable(code string) *bridge.UnavailableError {
	return &bridge.UnavailableError{Code: code, Reason: reasons[code]}
}

// wrapf wraps err once with context.
func wrapf(err error, format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, err)...)
}

var _ bridge.StatusReporter = (*Platform)(nil)

// Diagnose implements bridge.StatusReporter from Status: whether the
// add-on answers, with the add-on's and NinjaTrader's versions, or why it
// does not and whether orders go through the ATI files meanwhile.
func (p *Platform) Diagnose() (bool, string) {
	st := p.Status()
	if st.Connected {
		detail := "connected to the NinjaTrader add-on"
		if v := versionText(st.AddonVersion); v != "" {
			detail += " " + v
		}
		if v := versionText(st.PlatformVersion); v != "" {
			detail += " in NinjaTrader " + v
		}
		return true, detail
	}
	detail := st.Reason
	if detail == "" {
		detail = "the NinjaTrader add-on cannot be reached"
	}
	if st.Code != "" {
		detail += " (" + st.Code + ")"
	}
	if st.ATI {
		detail += "; orders, cancels, changes and flattens go through NinjaTrader's ATI files meanwhile"
	}
	return false, detail
}

// versionText keeps a version string the add-on sent only when it looks
// like one: at most 32 letters, digits, dots, dashes and pluses.
func versionText(v string) string {
	if len(v) > 32 {
		return ""
	}
	for _, r := range v {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '.', r == '-', r == '+':
		default:
			return ""
		}
	}
	return v
}
