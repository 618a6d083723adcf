package broker

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/trading/ops"
)

// Call implements the trading API's Caller (tradecall.Caller) for the broker
// family: the function runs in the dispatcher of the user's linked
// login, as the agent's dispatcher runs it for the desktop family, with
// the same request id rules (a write's id runs once, also across relay
// restarts and across relay nodes: the journal is in the store). With a
// Router it runs on the node running the user's instance (see
// Options.Router). Its errors are the agent's codes, except:
//
//   - no link: 409 tradovate_not_linked;
//   - the broker cannot be reached, or its login waits on a captcha, its
//     rate limit or new credentials: 503 broker_unavailable with the
//     reason; also while the link moves to another relay node, and when
//     the node running it goes away during a read;
//   - an account the login does not carry: 409
//     account_identity_unresolved;
//   - a write whose node went away or did not answer in time:
//     agentcall.ErrConnectionLost or agentcall.ErrTimeout, which the trading API
//     answers 503 outcome_unknown.
func (m *Manager) Call(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
	if strings.HasPrefix(fn, fnPrefix) {
		// The Manager's own functions come over the Router only.
		return nil, protocol.NewError(protocol.CodeUnknownFunction, "no such function")
	}
	// A link the relay broker command (or another node) deleted or
	// replaced is not traded on a moment longer.
	m.restartIfStale(ctx, userID)
	raw, err := m.routed(ctx, userID, fn, requestID, args)
	write := false
	if f, ok := protocol.LookupFunction(fn); ok {
		write = f.Write
	}
	switch {
	case err == nil:
		return raw, nil
	case errors.Is(err, ErrNotLinked):
		return nil, &httpapi.Error{Status: http.StatusConflict, Code: errcode.TradovateNotLinked,
			Detail: "no Tradovate login is linked: link one before calling the broker routes"}
	case !write && errors.Is(err, agentcall.ErrConnectionLost):
		return nil, &httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.BrokerUnavailable,
			Detail: "the broker is unavailable: the relay node running the link went away during the call; try again", RetryAfter: 1}
	case !write && errors.Is(err, agentcall.ErrTimeout):
		return nil, &httpapi.Error{Status: http.StatusGatewayTimeout, Code: errcode.DeadlineExceeded,
			Detail: "the relay node running the broker link did not answer in time"}
	}
	return nil, err
}

// callError maps the dispatcher's error to the broker family's answer.
func callError(perr *protocol.Error) error {
	switch perr.Code {
	case protocol.CodePlatformUnavailable:
		// The platform's reason follows the operations' own words.
		reason, ok := strings.CutPrefix(perr.Detail, ops.UnavailableDetail+": ")
		if !ok || reason == "" {
			reason = "the broker cannot be reached; try again shortly"
		}
		return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.BrokerUnavailable,
			Detail: "the broker is unavailable: " + reason}
	case protocol.CodeAccountNotFound:
		return &httpapi.Error{Status: http.StatusConflict, Code: errcode.AccountIdentityUnresolved,
			Detail: "the account is not one of the linked broker login's accounts"}
	}
	return perr
}

// readier is a platform that can say when it is ready for calls (its
// first connection and snapshot are done).
type readier interface {
	Ready(ctx context.Context) error
}

// ready waits, within ReadyTimeout, for a platform that is still
// connecting, so that the first call after a link or a relay restart is
// not refused for being early. A platform that stays away answers the
// call itself (broker_unavailable).
func (in *instance) ready(ctx context.Context) error {
	r, ok := in.platform.(readier)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, in.m.opts.ReadyTimeout)
	defer cancel()
	if err := r.Ready(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
