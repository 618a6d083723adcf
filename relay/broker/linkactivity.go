package broker

import (
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/events"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate"
)

// What the broker family records in the users' activity logs, published
// to Options.Events: broker.linked when a login is linked over HTTP (POST
// LinkPath, source api with the token's id; the OAuth callback, which
// comes without a token, source broker), broker.unlinked when DELETE
// LinkPath removes one; and, from the running link's session,
// broker.loginFailed when the broker refuses the linked login (or asks for
// a captcha) as the relay signs in or renews, and broker.tokenExpired when
// an OAuth link's session expired and cannot be renewed. A login that
// keeps failing records one entry per distinct failure: the session does
// not retry a refusal, an instance records each failure state once, and
// the entry's ref (the failure and the link's time) keeps an instance
// restarted on this or another node from recording it again. A captcha
// is a wait the session ends by itself (detail.retryAt): its entry's ref
// names the wait's end too, and a login that succeeds after it records
// nothing (no kind tells a recovery).

// Errors of broker.loginFailed and broker.tokenExpired (detail.error).
const (
	// LoginErrorRefused: the broker refused the login's credentials or
	// API key, or reports the login locked (tradovate.CodeLoginFailed).
	LoginErrorRefused = tradovate.CodeLoginFailed
	// LoginErrorCaptcha: the broker asks for a human check on the login
	// (tradovate.CodeCaptchaRequired).
	LoginErrorCaptcha = tradovate.CodeCaptchaRequired
	// LoginErrorTokenExpired: an OAuth link's session expired; the relay
	// holds no credentials to log in again.
	LoginErrorTokenExpired = "token_expired"
)

// record publishes an entry of userID's log, if the Manager has Events.
func (m *Manager) record(userID, ref string, e protocol.ActivityEntry) {
	if m.opts.Events == nil {
		return
	}
	m.opts.Events.Publish(events.Activity(userID, ref, e))
}

// apiSource is the source of a link route called with p's API token.
func apiSource(p auth.Principal) protocol.ActivitySource {
	return protocol.ActivitySource{Kind: protocol.SourceAPI, ID: auth.TokenID(p.TokenHash)}
}

// brokerSource is the source of what the broker family does on its own
// (the OAuth callback, the link's session).
var brokerSource = protocol.ActivitySource{Kind: protocol.SourceBroker}

// linkDetail is broker.linked's detail.
type linkDetail struct {
	Env    string `json:"env"`
	Method string `json:"method"`
}

// linkedEntry is broker.linked's entry.
func linkedEntry(env, method string, src protocol.ActivitySource) protocol.ActivityEntry {
	d, _ := json.Marshal(linkDetail{Env: env, Method: method})
	return protocol.ActivityEntry{At: now(), Kind: protocol.ActivityBrokerLinked, Source: src,
		Summary: "Linked a Tradovate login (" + env + ", " + method + ")", Detail: d}
}

// unlinkedEntry is broker.unlinked's entry.
func unlinkedEntry(src protocol.ActivitySource) protocol.ActivityEntry {
	return protocol.ActivityEntry{At: now(), Kind: protocol.ActivityBrokerUnlinked, Source: src,
		Summary: "Unlinked the Tradovate login", Detail: json.RawMessage(`{}`)}
}

// now is an entry's time: the real time, as links keep.
func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// loginDetail is broker.loginFailed's and broker.tokenExpired's detail:
// reason is the kind of refusal (tradovate.LoginError.Kind: credentials,
// api_key, locked, refused) when the broker refused the login.
type loginDetail struct {
	Error  string `json:"error"`
	Env    string `json:"env"`
	Reason string `json:"reason,omitempty"`
	// RetryAt is when the relay tries the login again by itself (a
	// captcha's wait).
	RetryAt *time.Time `json:"retryAt,omitempty"`
}

// loginWatch follows the session of one running link
// (PlatformConfig.OnSessionState) and records its failures, each
// distinct failure once while the session lasts.
type loginWatch struct {
	m    *Manager
	link Link

	mu   sync.Mutex
	last string // the failure recorded last; "" once the session is ok
}

// state takes a new state of the session. It runs under the session's
// lock: it only publishes, which never blocks.
func (w *loginWatch) state(state string, err error) {
	kind, code, reason, summary := loginFailure(state, err)
	var retryAt *time.Time
	var ce *tradovate.CaptchaError
	if errors.As(err, &ce) {
		t := ce.RetryAt.UTC().Truncate(time.Second)
		retryAt = &t
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if state == tradovate.StateOK {
		w.last = ""
		return
	}
	if kind == "" || w.last == kind+code {
		return
	}
	w.last = kind + code
	d, _ := json.Marshal(loginDetail{Error: code, Env: w.link.Env, Reason: reason, RetryAt: retryAt})
	// One entry per failure of one link, on any node, across restarts:
	// the session does not get past a refusal until the login is
	// linked again, which gives the link another time. A captcha's wait
	// ends by itself: its entry is one per wait (the session records
	// none again while it keeps meeting captchas; a restarted instance
	// meets a new one).
	ref := "broker:" + kind + ":" + code + ":" + strconv.FormatInt(w.link.LinkedAt.UnixMilli(), 10)
	if retryAt != nil {
		ref += ":" + strconv.FormatInt(retryAt.Unix(), 10)
	}
	w.m.record(w.link.UserID, ref, protocol.ActivityEntry{At: now(), Kind: kind, Source: brokerSource, Summary: summary, Detail: d})
}

// loginFailure classifies a session state: the entry's kind, its error,
// the refusal's reason and the summary; kind is "" for a state that is no
// failure of the login (logging in, rate limited, unreachable).
func loginFailure(state string, err error) (kind, code, reason, summary string) {
	var le *tradovate.LoginError
	isLogin := errors.As(err, &le)
	switch {
	case state == tradovate.StateLoginFailed && isLogin && le.Kind == "oauth":
		return protocol.ActivityBrokerTokenExpired, LoginErrorTokenExpired, "",
			"The Tradovate session expired and cannot be renewed; link the account again"
	case state == tradovate.StateLoginFailed:
		sentence := "Tradovate refused the login"
		if isLogin {
			reason, sentence = le.Kind, le.Reason // a fixed sentence, never the broker's text
		}
		return protocol.ActivityBrokerLoginFailed, LoginErrorRefused, reason,
			"Tradovate login failed: " + sentence + "; link the account again"
	case state == tradovate.StateCaptchaRequired:
		summary = "Tradovate login failed: Tradovate asks for a human check on this login"
		var ue *bridge.UnavailableError
		if errors.As(err, &ue) && ue.Reason != "" {
			summary = "Tradovate login failed: " + ue.Reason
		}
		return protocol.ActivityBrokerLoginFailed, LoginErrorCaptcha, "", summary
	}
	return "", "", "", ""
}

// marketDataDetail is broker.marketDataRefused's detail.
type marketDataDetail struct {
	Instrument string `json:"instrument"`
	Env        string `json:"env"`
	// Reason is "refused", or "delayed" when the broker offered delayed
	// data only.
	Reason string `json:"reason"`
}

// quotesRefused records that the broker refused an instrument's quotes
// on link: one entry per instrument and day (UTC) of a link, on any node
// and across restarts, however often the relay asks again.
func (m *Manager) quotesRefused(link Link, instrument string, delayed bool) {
	d := marketDataDetail{Instrument: instrument, Env: link.Env, Reason: "refused"}
	summary := "Tradovate refused the market data of " + instrument +
		": positions in it have no price and their unrealized P&L is unknown; the login needs a real-time market-data subscription"
	if delayed {
		d.Reason = "delayed"
		summary = "Tradovate offers delayed market data only for " + instrument +
			": positions in it have no price and their unrealized P&L is unknown; the login needs a real-time market-data subscription"
	}
	raw, _ := json.Marshal(d)
	at := now()
	ref := "broker:" + protocol.ActivityBrokerMarketDataRefused + ":" + instrument + ":" + at.Format(time.DateOnly) + ":" +
		strconv.FormatInt(link.LinkedAt.UnixMilli(), 10)
	m.record(link.UserID, ref, protocol.ActivityEntry{At: at, Kind: protocol.ActivityBrokerMarketDataRefused, Source: brokerSource,
		Summary: summary, Detail: raw})
}
