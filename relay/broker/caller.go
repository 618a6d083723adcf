package broker

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"tradebridge/agent/ops"
	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// Call implements the trading API's Caller (tradecall.Caller) for the tv
// family: the function runs in the dispatcher of the user's linked
// login, as the agent's dispatcher runs it for the desktop family, with
// the same request id rules (a write's id runs once, also across relay
// restarts: the journal is in the store). Its errors are the agent's
// codes, except:
//
//   - no link: 409 tradovate_not_linked;
//   - the broker cannot be reached, or its login waits on a captcha, its
//     rate limit or new credentials: 503 broker_unavailable with the
//     reason;
//   - an account the login does not carry: 409
//     account_identity_unresolved.
func (m *Manager) Call(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
	// A link the relay broker command (or another node) deleted or
	// replaced is not traded on a moment longer.
	m.restartIfStale(ctx, userID)
	in, err := m.instance(ctx, userID)
	switch {
	case errors.Is(err, ErrNotLinked):
		return nil, &httpapi.Error{Status: http.StatusConflict, Code: errcode.TradovateNotLinked,
			Detail: "no Tradovate login is linked: link one before calling the broker routes"}
	case err != nil:
		return nil, err
	}
	if err := in.ready(ctx); err != nil {
		return nil, err
	}
	raw, perr := in.stack.Dispatcher.Handle(ctx, &protocol.Request{Fn: fn, RequestID: requestID, Args: args})
	if perr != nil {
		return nil, callError(perr)
	}
	return raw, nil
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
