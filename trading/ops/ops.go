package ops

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// Defaults of Options.
const (
	// DefaultBracketDelay is the wait of CancelAndBracket between its
	// cancellations and its bracket.
	DefaultBracketDelay = 300 * time.Millisecond
	// DefaultClearTimeout is how long ReversePosition, Reverse, FlatPlace
	// and flattenFirst wait for the old position and its orders to clear.
	DefaultClearTimeout = 5 * time.Second
	// DefaultPollInterval is how often those waits look again.
	DefaultPollInterval = 50 * time.Millisecond
)

// Options configure Ops.
type Options struct {
	// Platform is the trading platform; required.
	Platform bridge.Platform
	// Logger receives the operations' logs; nil discards them.
	Logger *zap.Logger
	// Now is the clock that lookbackTime windows are measured on; it must
	// be the platform's clock (sim.ManualClock.Now in tests). Default
	// time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends, returning ctx.Err() then. Every wait
	// of an operation goes through it, so tests replace it to run without
	// sleeping. Default: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// BracketDelay is CancelAndBracket's wait after its cancellations.
	// Default DefaultBracketDelay; negative is invalid.
	BracketDelay time.Duration
	// ClearTimeout bounds the wait for a closed position to clear. Default
	// DefaultClearTimeout.
	ClearTimeout time.Duration
	// PollInterval is the step of that wait. Default DefaultPollInterval;
	// at most ClearTimeout.
	PollInterval time.Duration
	// NewOcoID returns a fresh OCO id for CancelAndBracket calls that name
	// none. Default: "bracket-" and 16 random hex digits.
	NewOcoID func() string
	// Persist keeps the strategy tags' ownership of positions across agent
	// restarts (bucket TagsBucket); New loads it. Nil keeps it in memory
	// only: after a restart no tag owns anything.
	Persist Persist
}

// Ops runs operations against one platform. It is safe for concurrent use:
// writes that touch one account and instrument run one at a time, in the
// order they acquire it.
type Ops struct {
	p     bridge.Platform
	opts  Options
	log   *zap.Logger
	locks *locker
	book  *tagBook
	ids   *idMap
	// instruments caches resolve's answers for a second.
	instruments instrumentCache
	// subs is the quote subscription the relay asked for.
	subs subscriptions
	// gate judges every order before it is placed (SetGate).
	gate gateHolder
	// refusals is told the writes a strategy lock refused
	// (SetRefusalObserver).
	refusals atomic.Pointer[func(OwnerRefusal)]
	// watcher follows the entries placed with exits or a cancel-after
	// (SetEntryWatcher).
	watcher watcherHolder
}

// New validates opts, fills its defaults and returns Ops.
func New(opts Options) (*Ops, error) {
	if opts.Platform == nil {
		return nil, errors.New("ops: Options.Platform is required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	switch {
	case opts.BracketDelay < 0:
		return nil, errors.New("ops: Options.BracketDelay must not be negative")
	case opts.BracketDelay == 0:
		opts.BracketDelay = DefaultBracketDelay
	}
	switch {
	case opts.ClearTimeout < 0:
		return nil, errors.New("ops: Options.ClearTimeout must not be negative")
	case opts.ClearTimeout == 0:
		opts.ClearTimeout = DefaultClearTimeout
	}
	switch {
	case opts.PollInterval < 0:
		return nil, errors.New("ops: Options.PollInterval must not be negative")
	case opts.PollInterval == 0:
		opts.PollInterval = min(DefaultPollInterval, opts.ClearTimeout)
	}
	if opts.PollInterval > opts.ClearTimeout {
		return nil, errors.New("ops: Options.PollInterval must not exceed ClearTimeout")
	}
	if opts.NewOcoID == nil {
		opts.NewOcoID = newOcoID
	}
	book, err := loadTagBook(opts.Persist, opts.Logger.Named("ops").Named("tags"))
	if err != nil {
		return nil, err
	}
	return &Ops{
		p:     opts.Platform,
		opts:  opts,
		log:   opts.Logger.Named("ops"),
		locks: newLocker(),
		book:  book,
		ids:   newIDMap(maxIDAliases),
	}, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func newOcoID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "bracket-" + hex.EncodeToString(b[:])
}

// key names one account's holding of one contract (the full contract name).
type key struct{ account, instrument string }

// Limits of text arguments.
const (
	maxNameLen = 64  // account, instrument, root, ids of orders and strategies
	maxTagLen  = 128 // strategyTag, ocoId, orderId, ATM template, class names
	maxQty     = 10_000
	maxPrice   = 1e9
)

// missing refuses a call whose required fields are absent, naming them.
func missing(names ...string) error {
	return protocol.NewError(protocol.CodeMissingFields, "missing required fields: "+strings.Join(names, ", "))
}

// fields collects the names of absent required fields.
type fields []string

func (f *fields) need(name string, present bool) {
	if !present {
		*f = append(*f, name)
	}
}

func (f fields) err() error {
	if len(f) == 0 {
		return nil
	}
	return missing(f...)
}

func invalid(detail string) error { return protocol.NewError(protocol.CodeInvalidArgument, detail) }

// text checks an optional text argument: printable, no longer than max.
func text(name, v string, max int) error {
	if v == "" {
		return nil
	}
	if len(v) > max || !utf8.ValidString(v) {
		return invalid(fmt.Sprintf("%s must be at most %d characters of valid text", name, max))
	}
	for _, r := range v {
		if !unicode.IsPrint(r) {
			return invalid(name + " must hold printable characters only")
		}
	}
	return nil
}

// account checks a required account argument.
func account(v string) error {
	if strings.TrimSpace(v) == "" {
		return missing("account")
	}
	return text("account", v, maxNameLen)
}

// quantity checks a contract quantity.
func quantity(name string, n int) error {
	if n < 1 || n > maxQty {
		return invalid(fmt.Sprintf("%s must be between 1 and %d", name, maxQty))
	}
	return nil
}

// positive checks a price.
func positive(name string, p float64) error {
	if math.IsNaN(p) || math.IsInf(p, 0) || p <= 0 || p > maxPrice {
		return invalid(name + " must be a positive price")
	}
	return nil
}

// distance checks a trailing distance: above zero, finite, in price units.
func distance(name string, d float64) error {
	if math.IsNaN(d) || math.IsInf(d, 0) || d <= 0 || d > maxPrice {
		return invalid(name + " must be a positive distance in price units")
	}
	return nil
}

// onTick checks that price is a multiple of the instrument's tick size.
// The refusal gives the tick size and the nearest valid values on either
// side (those above zero): computed, never the value sent.
func onTick(name string, price float64, info protocol.InstrumentInfo) error {
	tick := info.TickSize
	if tick <= 0 {
		return nil
	}
	n := price / tick
	if math.Abs(n-math.Round(n)) <= 1e-6 {
		return nil
	}
	detail := name + " must be a multiple of the instrument's tick size, " + formatNumber(tick)
	var near []string
	for _, v := range []float64{RoundToTick(math.Floor(n)*tick, tick), RoundToTick(math.Ceil(n)*tick, tick)} {
		if v > 0 {
			near = append(near, formatNumber(v))
		}
	}
	switch len(near) {
	case 1:
		detail += "; the nearest valid value is " + near[0]
	case 2:
		detail += "; the nearest valid values are " + near[0] + " and " + near[1]
	}
	return invalid(detail)
}

// formatNumber spells a price or a tick size as short as it is exact:
// 0.25, 5990, 1.0975.
func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// resolve checks an instrument argument and resolves it on the platform to
// its full contract name and description.
func (o *Ops) resolve(ctx context.Context, name, instrument string) (protocol.InstrumentInfo, error) {
	if strings.TrimSpace(instrument) == "" {
		return protocol.InstrumentInfo{}, missing(name)
	}
	if err := text(name, instrument, maxNameLen); err != nil {
		return protocol.InstrumentInfo{}, err
	}
	now := o.opts.Now()
	if info, ok := o.instruments.get(instrument, now); ok {
		return info, nil
	}
	info, err := o.p.Instrument(ctx, instrument)
	if err != nil {
		return protocol.InstrumentInfo{}, wireError(err)
	}
	o.instruments.put(instrument, info, now)
	return info, nil
}

// instrumentTTL is how long a resolved instrument is reused. A root's
// front month rolls at one instant; for at most this long after it, an
// order naming the root may still go to the previous contract, which
// trades until its expiry days later.
const instrumentTTL = time.Second

// maxCachedInstruments bounds the cache; it is emptied when full.
const maxCachedInstruments = 1024

// instrumentCache remembers resolved instruments for instrumentTTL of the
// platform's clock, by the name as sent.
type instrumentCache struct {
	mu sync.Mutex
	m  map[string]cachedInstrument
}

type cachedInstrument struct {
	info  protocol.InstrumentInfo
	until time.Time
}

func (c *instrumentCache) get(name string, now time.Time) (protocol.InstrumentInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[name]
	if !ok || !now.Before(e.until) || now.Before(e.until.Add(-instrumentTTL)) {
		return protocol.InstrumentInfo{}, false
	}
	return e.info, true
}

func (c *instrumentCache) put(name string, info protocol.InstrumentInfo, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedInstruments {
		c.m = make(map[string]cachedInstrument)
	}
	c.m[name] = cachedInstrument{info: info, until: now.Add(instrumentTTL)}
}

// signedQty returns a position's signed quantity: long positive.
func signedQty(p protocol.Position) int {
	if p.MarketPosition == protocol.MarketPositionShort {
		return -p.Quantity
	}
	if p.MarketPosition == protocol.MarketPositionLong {
		return p.Quantity
	}
	return 0
}

// side returns +1 for Buy and -1 for Sell.
func side(action string) int {
	if action == protocol.ActionSell {
		return -1
	}
	return 1
}

// actionFor returns the action that trades n (signed) contracts.
func actionFor(n int) string {
	if n < 0 {
		return protocol.ActionSell
	}
	return protocol.ActionBuy
}

func sign(n int) int {
	switch {
	case n > 0:
		return 1
	case n < 0:
		return -1
	}
	return 0
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// marketPosition spells a signed quantity's direction.
func marketPosition(n int) string {
	switch {
	case n > 0:
		return protocol.MarketPositionLong
	case n < 0:
		return protocol.MarketPositionShort
	}
	return protocol.MarketPositionFlat
}

// maxListedAccounts bounds the account names an account_not_found lists.
const maxListedAccounts = 20

// Explain completes an error's detail with what only the platform can say,
// so that the caller learns how to fix the call: account_not_found says that
// account names are case-sensitive and lists the platform's account names
// (the user's own, never the caller's text). Other errors are returned as
// they are. The dispatcher passes every error it answers through Explain.
func (o *Ops) Explain(ctx context.Context, pe *protocol.Error) *protocol.Error {
	if pe == nil || pe.Code != protocol.CodeAccountNotFound {
		return pe
	}
	detail := "no account of that name on the platform; account names are case-sensitive"
	accounts, err := o.p.Accounts(ctx)
	if err != nil {
		return protocol.NewError(pe.Code, detail)
	}
	names := make([]string, 0, min(len(accounts), maxListedAccounts))
	for _, a := range accounts {
		if len(names) == maxListedAccounts {
			break
		}
		names = append(names, a.Name)
	}
	switch {
	case len(names) == 0:
		detail += "; the platform has no accounts"
	case len(accounts) > len(names):
		detail += fmt.Sprintf("; the accounts are %s and %d more", strings.Join(names, ", "), len(accounts)-len(names))
	default:
		detail += "; the accounts are " + strings.Join(names, ", ")
	}
	return protocol.NewError(pe.Code, detail)
}

// instrumentDetail says why an instrument was refused and how to write one.
// It names the root only when the platform knows it, never the caller's
// text.
func instrumentDetail(e *bridge.InstrumentError) string {
	var why string
	switch e.Cause {
	case bridge.InstrumentMalformed:
		why = "the instrument is not in an accepted form"
	case bridge.InstrumentUnknownRoot:
		why = "the platform trades no instrument of that root"
	case bridge.InstrumentNotContractMonth:
		why = "that month is not a contract month of " + e.Root
		if e.Months != "" {
			why += " (its months are " + monthNames(e.Months) + ")"
		}
	case bridge.InstrumentExpired:
		why = "that " + e.Root + " contract has expired"
	case bridge.InstrumentNotListed:
		why = "that " + e.Root + " contract is not listed yet"
	default:
		why = "the instrument is unknown, not a contract month, or expired"
	}
	if e.Root == "" && e.Cause != bridge.InstrumentMalformed && e.Cause != bridge.InstrumentUnknownRoot {
		why = "the instrument is unknown, not a contract month, or expired"
	}
	if e.Front != "" {
		why += "; the front month is " + e.Front
	}
	return why + "; " + instrumentForms(e.Root)
}

// instrumentForms shows the accepted forms of an instrument, with root
// when it is known.
func instrumentForms(root string) string {
	if root == "" {
		return `write it as "ES 12-26" (root and contract month), "ES" (the front month) or "ESZ26" (month code)`
	}
	return fmt.Sprintf(`write it as "%s 12-26" (root and contract month), "%s" (the front month) or "%sZ26" (month code)`, root, root, root)
}

// monthNames spells month codes ("HMUZ") as "H (Mar), M (Jun), …".
func monthNames(codes string) string {
	parts := make([]string, 0, len(codes))
	for i := 0; i < len(codes); i++ {
		if m := protocol.MonthOfCode(codes[i]); m != 0 {
			parts = append(parts, fmt.Sprintf("%c (%s)", codes[i], m.String()[:3]))
		}
	}
	return strings.Join(parts, ", ")
}

// UnavailableDetail begins the detail of platform_unavailable; the
// platform's reason, when it gives one (bridge.UnavailableError), follows
// after ": ". The relay's broker family answers the same error in its own
// words and finds the reason after it.
const UnavailableDetail = "the trading platform is not connected to the agent"

// wireError turns a platform error into the wire error the caller sees.
// Details are fixed sentences: they never repeat the caller's input.
func wireError(err error) error {
	if err == nil {
		return nil
	}
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	if reason, ok := badRequest(err); ok {
		return protocol.NewError(protocol.CodeInvalidArgument, reason)
	}
	var re *bridge.RejectError
	var ie *bridge.InstrumentError
	var ue *bridge.UnavailableError
	var ne *bridge.NotSupportedError
	switch {
	case errors.As(err, &ie):
		return protocol.NewError(protocol.CodeInvalidInstrument, instrumentDetail(ie))
	case errors.As(err, &re):
		if re.Code != "" {
			return protocol.NewError(re.Code, re.Reason)
		}
		return protocol.NewError(protocol.CodeOrderRejected, re.Reason)
	case errors.As(err, &ne):
		return protocol.NewError(protocol.CodeNotSupported, notSupportedDetail(ne))
	case errors.Is(err, bridge.ErrNotSupported):
		return protocol.NewError(protocol.CodeNotSupported, "the trading platform does not support this")
	case errors.Is(err, bridge.ErrAccountNotFound):
		return protocol.NewError(protocol.CodeAccountNotFound, "no such account on the platform")
	case errors.Is(err, bridge.ErrInstrumentUnknown):
		return protocol.NewError(protocol.CodeInvalidInstrument, "the instrument is unknown, not a contract month, or expired; "+instrumentForms(""))
	case errors.Is(err, bridge.ErrOrderNotFound):
		return protocol.NewError(protocol.CodeOrderNotFound, "no such order on the account")
	case errors.As(err, &ue):
		return protocol.NewError(protocol.CodePlatformUnavailable, UnavailableDetail+": "+ue.Reason)
	case errors.Is(err, bridge.ErrNotConnected):
		return protocol.NewError(protocol.CodePlatformUnavailable, UnavailableDetail)
	case errors.Is(err, bridge.ErrOutcomeUnknown):
		return protocol.NewError(protocol.CodeOutcomeUnknown, "the link to the trading platform broke after the call reached it; check the account's orders and positions before trying again")
	case errors.Is(err, bridge.ErrTemplateNotFound):
		return protocol.NewError(protocol.CodeTemplateNotFound, "no ATM template of that name")
	case errors.Is(err, bridge.ErrStrategyNotFound):
		return protocol.NewError(protocol.CodeStrategyNotFound, "no such strategy on the account")
	case errors.Is(err, bridge.ErrStrategyClass):
		return protocol.NewError(protocol.CodeInvalidArgument, "strategyClass names no strategy class of the platform")
	case errors.Is(err, bridge.ErrStrategyTerminal):
		return protocol.NewError(protocol.CodeStrategyTerminal, "the strategy has ended and cannot change state")
	case errors.Is(err, context.DeadlineExceeded):
		return protocol.NewError(protocol.CodeDeadlineExceeded, "the platform did not answer in time")
	case errors.Is(err, context.Canceled):
		return protocol.NewError(protocol.CodeCancelled, "the call was cancelled")
	}
	return fmt.Errorf("ops: %w", err)
}

// notSupportedDetail says what the platform lacks and what to do instead.
func notSupportedDetail(e *bridge.NotSupportedError) string {
	what := e.What
	if what == "" {
		what = "this"
	}
	detail := "the trading platform does not support " + what
	if e.Reason != "" {
		detail += ": " + e.Reason
	}
	return detail
}
