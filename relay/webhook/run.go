package webhook

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/errcode"
	"tradebridge/relay/events"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/seqid"
	"tradebridge/relay/store"
	"tradebridge/relay/tradecall"
	"tradebridge/relay/webhook/alertcmd"
)

// AlertID is the id of the alert of seq: "tva_<seq>".
func AlertID(seq int64) string { return seqid.Format(alertPrefix, seq) }

// ParseAlertID returns the seq of an alert id, and false when id is not
// one.
func ParseAlertID(id string) (int64, bool) { return seqid.Parse(alertPrefix, id) }

// alertPrefix is the prefix of the alerts' ids.
const alertPrefix = "tva_"

// Statuses of a Result.
const (
	ResultExecuted = "executed"
	ResultBlocked  = "blocked"
	ResultFailed   = "failed"
)

// Result is the outcome of an alert on one account (for
// FLATTENEVERYTHING and CANCELALLORDERS, "": every account).
type Result struct {
	Account string `json:"account"`
	// Status is executed, blocked or failed.
	Status string `json:"status"`
	// OrderIDs are the orders the call placed or changed.
	OrderIDs []string `json:"orderIds"`
	// Error says why the call was blocked or failed.
	Error *ResultError `json:"error,omitempty"`

	// httpStatus is the status the trading API answers the error with.
	httpStatus int
	retryAfter int
}

// ResultError is a Result's error: a code of the trading API's list and
// its detail.
type ResultError struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// blockedCodes are the refusals of an alert's own conditions on the
// position (require_market_position, max_positions, closing only): the
// alert is blocked, not failed.
var blockedCodes = []string{protocol.CodeMarketPositionMismatch, protocol.CodeMaxPositions}

// killSwitch sets the user's kill switch through the Management API's
// code; the failure it answered, or nil.
func (s *Server) killSwitch(ctx context.Context, in *received, on bool) *failure {
	if s.opts.Manage == nil {
		return &failure{Status: http.StatusServiceUnavailable, Code: errcode.ManagementUnavailable,
			Detail: "the kill switch cannot be set from alerts on this relay"}
	}
	body := []byte(`{"enabled":` + strconv.FormatBool(on) + `}`)
	status, answer := s.opts.Manage.Invoke(context.WithoutCancel(ctx), in.p, source(in.webhookID), http.MethodPut,
		"controls/kill-switch", body)
	if status == http.StatusOK {
		return nil
	}
	var e struct {
		Error      string `json:"error"`
		Detail     string `json:"detail"`
		RetryAfter int    `json:"retryAfter"`
	}
	_ = json.Unmarshal(answer, &e)
	return &failure{Status: status, Code: cmp.Or(e.Error, errcode.InternalError), Detail: "kill_switch: " + e.Detail,
		RetryAfter: e.RetryAfter}
}

// source is the activity log's source of what a webhook's alert does.
func source(webhookID string) protocol.ActivitySource {
	return protocol.ActivitySource{Kind: protocol.SourceWebhook, ID: webhookID}
}

// outcome is a finished run: the alert's status and its answer.
type outcome struct {
	status  string
	results []Result
	fail    *failure
}

// runAndAnswer runs in's calls on a goroutine of the Server and answers
// with their outcome, or 202 running when they are not done within
// AnswerWithin.
func (s *Server) runAndAnswer(w http.ResponseWriter, r *http.Request, in *received) {
	done := make(chan outcome, 1)
	if !s.group.Go(func(ctx context.Context) { done <- s.execute(ctx, in) }) {
		f := &failure{Status: http.StatusServiceUnavailable, Code: errcode.ShuttingDown,
			Detail: "the relay is shutting down; nothing was sent", RetryAfter: 1}
		s.finish(in, []string{store.WebhookRunning}, store.WebhookFailed, f.Detail, []Result{}, f)
		s.answer(w, in, store.WebhookFailed, nil, f)
		return
	}
	t := time.NewTimer(s.opts.AnswerWithin)
	defer t.Stop()
	select {
	case o := <-done:
		s.answer(w, in, o.status, o.results, o.fail)
	case <-t.C:
		s.count(store.WebhookRunning)
		code, body := in.answerBody(store.WebhookRunning, nil, nil)
		httpapi.WriteRaw(w, code, body)
	case <-r.Context().Done():
	}
}

// schedule runs a delayed alert when it is due, on a goroutine of the
// Server; a Server closing before then leaves it scheduled (the sweeper
// of a node still running marks it failed).
func (s *Server) schedule(in *received) {
	s.group.Go(func(ctx context.Context) {
		t := time.NewTimer(max(in.rec.DueAt.Sub(s.opts.Clock()), 0))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ok, err := s.opts.Store.UpdateWebhookAlert(ctx, in.p.UserID, in.rec.Seq, []string{store.WebhookScheduled},
			store.WebhookAlertUpdate{Status: store.WebhookRunning, At: s.opts.Clock()})
		if err != nil {
			s.log.Warn("starting a delayed alert", zap.Error(err))
			return
		}
		if !ok {
			return // the sweeper took it
		}
		o := s.execute(ctx, in)
		s.count(o.status)
	})
}

// execute runs in's calls one after the other, records the outcome in
// the history and the activity log, and returns it.
func (s *Server) execute(ctx context.Context, in *received) outcome {
	closingOnly := s.closingOnly(&in.alert, s.opts.Clock())
	results := make([]Result, 0, len(in.calls))
	for i, c := range in.calls {
		results = append(results, s.call(ctx, in, i, c, closingOnly))
	}
	o := outcome{status: store.WebhookExecuted, results: results}
	blocked := 0
	for _, r := range results {
		switch r.Status {
		case ResultFailed:
			if o.fail == nil {
				o.status = store.WebhookFailed
				o.fail = &failure{Status: r.httpStatus, Code: r.Error.Code, Detail: r.Error.Detail, RetryAfter: r.retryAfter}
			}
		case ResultBlocked:
			blocked++
		}
	}
	reason := ""
	switch {
	case o.fail != nil:
		reason = o.fail.Detail
	case blocked == len(results):
		o.status = store.WebhookBlocked
		reason = results[0].Error.Detail
	}
	s.finish(in, []string{store.WebhookRunning}, o.status, reason, results, o.fail)
	return o
}

// closingOnly reports whether an alert's closing_only_after has passed at
// now (and its window has not ended): only the calls that close run.
func (s *Server) closingOnly(a *alertcmd.Alert, now time.Time) bool {
	if a.BypassWindows {
		return false
	}
	_, closing := a.InWindow(alertcmd.Clock(now.In(s.ny)))
	return closing
}

// prepared is one of an alert's calls as the trading operations get it:
// its function and arguments after the alert's closing-only rule.
type prepared struct {
	fn   string
	args json.RawMessage
	// skip, when set, is why the call is not made: its result is blocked
	// with it.
	skip *ResultError
	// placeBlocked, when set, is why a FLATPLACE made after
	// closing_only_after only flattens: its result is blocked with it
	// once the flatten ran.
	placeBlocked *ResultError
}

// prepare returns call c of alert a as it is sent: as planned, or, when
// closingOnly, a PLACE made reduce-only, a FLATPLACE made a flatten, and
// any other call that opens skipped.
func prepare(a *alertcmd.Alert, c alertcmd.Call, closingOnly bool) prepared {
	p := prepared{fn: c.Fn, args: c.Args}
	if !closingOnly || !c.Opens {
		return p
	}
	const why = "the alert's closing_only_after has passed: only orders that close run (rule: closingOnlyAfter)"
	switch c.Fn {
	case protocol.FnPlaceOrder:
		p.args = reduceOnly(c.Args)
	case protocol.FnFlatPlace:
		p.fn = protocol.FnFlatten
		p.args = mustJSON(protocol.FlattenArgs{Account: c.Account, Instrument: a.Instrument, StrategyTag: a.StrategyTag})
		p.placeBlocked = &ResultError{Code: protocol.CodeTradingBlocked, Detail: why + "; the position was flattened, nothing placed"}
	default:
		p.skip = &ResultError{Code: protocol.CodeTradingBlocked, Detail: why}
	}
	return p
}

// route returns the caller of alert a's call c for the user and its
// activity family ("" desktop, "tv" broker), or the error that stops
// the call before it is sent: no broker family on this relay, or exits
// for an agent that is not connected or too old to take them.
func (s *Server) route(userID string, a *alertcmd.Alert, c alertcmd.Call) (tradecall.Caller, string, *httpapi.Error) {
	if a.Destination == alertcmd.DestinationBroker {
		if s.opts.Broker == nil {
			return nil, "", &httpapi.Error{Status: http.StatusConflict, Code: errcode.TradovateNotLinked,
				Detail: "the broker family is not available on this relay"}
		}
		return s.opts.Broker, "tv", nil
	}
	if c.Exits {
		// Never sent unless the agent is known to take them: an older
		// one would drop the stop loss.
		info, ok := s.opts.Desktop.Info(userID)
		switch {
		case !ok:
			e, _ := tradecall.CallError(agentcall.ErrNotConnected, true)
			return nil, "", &e
		case info.Hello.ProtocolVersion < protocol.ExitsProtocolVersion:
			return nil, "", &httpapi.Error{Status: http.StatusConflict, Code: errcode.AddonVersionUnsupported,
				Detail: "this alert's exits, relative prices or cancel_after need a newer trading add-on: update the agent"}
		}
	}
	return s.opts.Desktop, "", nil
}

// call runs one of the alert's calls and returns its Result.
func (s *Server) call(ctx context.Context, in *received, i int, c alertcmd.Call, closingOnly bool) Result {
	a := &in.alert
	r := Result{Account: c.Account, OrderIDs: []string{}}
	pc := prepare(a, c, closingOnly)
	if pc.skip != nil {
		r.Status, r.Error = ResultBlocked, pc.skip
		return r
	}
	fn, args := pc.fn, pc.args
	caller, family, e := s.route(in.p.UserID, a, c)
	if e != nil {
		return failed(r, e.Status, e.Code, e.Detail)
	}
	cctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	if a.BypassWindows {
		cctx = protocol.WithCallOptions(cctx, protocol.CallOptions{BypassWindows: true})
	}
	res, err := caller.Call(cctx, in.p.UserID, fn, "wh:"+AlertID(in.rec.Seq)+":"+strconv.Itoa(i), args)
	if err == nil {
		if cerr := tradecall.CheckWriteResult(fn, res); cerr != nil {
			s.log.Error("agent answered an alert's write with a malformed result", zap.String("user", in.p.UserID),
				zap.String("fn", fn), zap.Error(cerr))
			err = cerr
		}
	}
	s.activity.Record(tradecall.Write{Principal: in.p, Source: protocol.SourceWebhook, Family: family, Fn: fn, Args: args,
		SourceID: in.webhookID}, tradecall.CallOutcome(fn, res, err, ctx.Err() != nil))
	if err != nil {
		e, ok := tradecall.CallError(err, true)
		switch {
		case ok:
		case ctx.Err() != nil:
			e = errOutcomeUnknown
		default:
			e.Status, e.Code, e.Detail = http.StatusInternalServerError, errcode.InternalError, "the relay failed to complete the call"
		}
		if slices.Contains(blockedCodes, e.Code) {
			r.Status, r.Error = ResultBlocked, &ResultError{Code: e.Code, Detail: e.Detail}
			return r
		}
		r = failed(r, e.Status, e.Code, e.Detail)
		r.retryAfter = e.RetryAfter
		return r
	}
	r.OrderIDs = orderIDs(res)
	r.Status = ResultExecuted
	if pc.placeBlocked != nil {
		r.Status, r.Error = ResultBlocked, pc.placeBlocked
	}
	return r
}

// errOutcomeUnknown is the error of a call cut short by the relay's
// shutdown.
var errOutcomeUnknown = httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.OutcomeUnknown,
	Detail: "the relay stopped during the call; the add-on may or may not have acted: read the orders before sending again"}

// failed returns r failed with the status, code and detail.
func failed(r Result, status int, code, detail string) Result {
	r.Status, r.httpStatus = ResultFailed, status
	r.Error = &ResultError{Code: code, Detail: detail}
	return r
}

// reduceOnly returns PlaceOrder's arguments with smartOptions'
// reduceOnly set.
func reduceOnly(args json.RawMessage) json.RawMessage {
	var p protocol.PlaceOrderArgs
	if json.Unmarshal(args, &p) != nil {
		return args
	}
	opts := map[string]any{}
	_ = json.Unmarshal(p.SmartOptions, &opts)
	opts["reduceOnly"] = true
	p.SmartOptions = mustJSON(opts)
	return mustJSON(p)
}

// orderIDs returns the ids of the orders a call's result names, each
// once: the closing orders, the order, the orders.
func orderIDs(result json.RawMessage) []string {
	var r struct {
		OrderID       string   `json:"orderId"`
		OrderIDs      []string `json:"orderIds"`
		CloseOrderIDs []string `json:"closeOrderIds"`
	}
	_ = json.Unmarshal(result, &r)
	out := []string{}
	for _, ids := range [][]string{r.CloseOrderIDs, {r.OrderID}, r.OrderIDs} {
		for _, id := range ids {
			if id != "" && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}

// finish records in's outcome in the history, from one of the statuses
// from, with the answer its duplicates get (fail's, or status's), and
// publishes its webhook.received entry.
func (s *Server) finish(in *received, from []string, status, reason string, results []Result, fail *failure) {
	now := s.opts.Clock()
	u := store.WebhookAlertUpdate{Status: status, Reason: reason, At: now}
	if results != nil {
		u.Results = mustJSON(results)
	}
	code, body := in.answerBody(status, results, fail)
	dup := store.Idempotent{UserID: in.p.UserID, Key: in.dupKey, State: store.IdemDone, Status: code, Body: body, UpdatedAt: now}
	ok, err := s.opts.Store.FinishWebhookAlert(context.Background(), in.p.UserID, in.rec.Seq, from, u, dup)
	if err != nil {
		s.log.Warn("recording an alert's outcome", zap.Error(err))
	}
	if ok {
		s.published(in, status)
	}
}

// published publishes the webhook.received entry of in with its status.
func (s *Server) published(in *received, status string) {
	if s.opts.Events == nil {
		return
	}
	account := ""
	if len(in.alert.Accounts) > 0 {
		account = in.alert.Accounts[0]
	}
	s.opts.Events.Publish(events.Activity(in.p.UserID, "", receivedEntry(in.webhookID, in.rec.Seq, in.rec.Command, account,
		status, s.opts.Clock())))
}

// receivedEntry is the webhook.received entry of an alert.
func receivedEntry(webhookID string, seq int64, command, account, status string, at time.Time) protocol.ActivityEntry {
	id := AlertID(seq)
	summary := "TradingView alert " + id
	if command != "" {
		summary += " (" + command
		if account != "" {
			summary += " on " + account
		}
		summary += ")"
	}
	summary += ": " + status
	return protocol.ActivityEntry{
		At:      at.UTC().Truncate(time.Millisecond),
		Kind:    protocol.ActivityWebhookReceived,
		Account: account,
		Source:  source(webhookID),
		Summary: protocol.CutActivitySummary(summary),
		Detail:  mustJSON(map[string]string{"webhookId": webhookID, "outcome": status, "alertId": id}),
	}
}

// sweep marks failed the alerts whose node stopped: the scheduled ones
// OverdueAfter past their due time, never run late, and the ones running
// StaleAfter after they started, whose outcome nobody will learn.
func (s *Server) sweep(ctx context.Context) {
	now := s.opts.Clock()
	overdue, err := s.opts.Store.OverdueWebhookAlerts(ctx, now.Add(-OverdueAfter), 100)
	if err == nil {
		s.fail(ctx, overdue, store.WebhookScheduled, ReasonStopped, now)
		var stale []store.WebhookAlert
		if stale, err = s.opts.Store.StaleWebhookAlerts(ctx, now.Add(-StaleAfter), 100); err == nil {
			s.fail(ctx, stale, store.WebhookRunning, ReasonStoppedRunning, now)
		}
	}
	if err != nil && ctx.Err() == nil {
		s.log.Warn("looking for alerts whose node stopped", zap.Error(err))
	}
}

// fail marks the alerts of list failed for reason, each while it is
// still in status from, and publishes their webhook.received entries.
func (s *Server) fail(ctx context.Context, list []store.WebhookAlert, from, reason string, now time.Time) {
	for _, a := range list {
		ok, err := s.opts.Store.UpdateWebhookAlert(ctx, a.UserID, a.Seq, []string{from},
			store.WebhookAlertUpdate{Status: store.WebhookFailed, Reason: reason, At: now})
		if err != nil || !ok {
			continue
		}
		s.count(store.WebhookFailed)
		if s.opts.Events == nil {
			continue
		}
		w, err := s.opts.Store.Webhook(ctx, a.UserID)
		if err != nil {
			continue
		}
		var accounts []string
		_ = json.Unmarshal(a.Accounts, &accounts)
		account := ""
		if len(accounts) > 0 {
			account = accounts[0]
		}
		s.opts.Events.Publish(events.Activity(a.UserID, "", receivedEntry(w.ID, a.Seq, a.Command, account, store.WebhookFailed, now)))
	}
}

// Reasons of the alerts the sweeper marks failed.
const (
	// ReasonStopped is the reason of a scheduled alert its node did not
	// run.
	ReasonStopped = "the relay stopped before the delay ended; nothing was sent"
	// ReasonStoppedRunning is the reason of an alert whose node stopped
	// while its calls ran.
	ReasonStoppedRunning = "the relay stopped while the alert ran; its orders may or may not have been placed: check the account before sending it again"
)
