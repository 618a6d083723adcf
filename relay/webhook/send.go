package webhook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/store"
	"tradebridge/relay/webhook/alertcmd"
)

// Outcomes of requests, as the metric counts them besides the alerts'
// statuses.
const (
	outcomeAddress        = "address_not_allowed"
	outcomeUnknownWebhook = "unknown_webhook"
	outcomeWrongKey       = "wrong_key"
	outcomeRateLimited    = "rate_limited"
	outcomePlan           = "plan_required"
	outcomeTooLarge       = "too_large"
	outcomeUnavailable    = "unavailable"
	outcomeBadBody        = "bad_body"
	outcomeDuplicate      = "duplicate"
)

// reqState is what the admission of one alert learns on the way: the
// body (read by the token reader) and why a refusal was made. It rides
// the request's context from send to the token reader and the
// authenticator.
type reqState struct {
	body        []byte
	contentType string
	alert       alertcmd.Alert
	calls       []alertcmd.Call
	parseErr    *alertcmd.Error
	refusal     string
}

type stateKey struct{}

// stateOf returns the request's state; a throwaway one when there is
// none.
func stateOf(ctx context.Context) *reqState {
	if rs, ok := ctx.Value(stateKey{}).(*reqState); ok {
		return rs
	}
	return &reqState{}
}

func (rs *reqState) setRefusal(o string) { rs.refusal = o }

// allowed reports whether the request's address is in Options.Allow
// (every address when it is empty).
func (s *Server) allowed(r *http.Request) bool {
	if len(s.opts.Allow) == 0 {
		return true
	}
	a, err := netip.ParseAddr(httpapi.ClientAddr(r))
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range s.opts.Allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// token is the door's token reader: it reads the body (at most
// alertcmd.MaxBody), parses it, and returns the webhook's id and the
// key the body carries, joined by tokenSep. An id not of a webhook's
// form is refused before the body is read.
func (s *Server) token(r *http.Request) (string, *httpapi.Error) {
	rs := stateOf(r.Context())
	id := r.PathValue("webhookId")
	if !ValidID(id) {
		rs.refusal = outcomeUnknownWebhook
		return "", &httpapi.Error{Status: http.StatusUnauthorized, Code: errcode.Unauthorized, Detail: Door.InvalidTokenDetail}
	}
	body, e := readBody(r)
	if e != nil {
		rs.refusal = outcomeBadBody
		if e.Status == http.StatusRequestEntityTooLarge {
			rs.refusal = outcomeTooLarge
		}
		return "", e
	}
	rs.body, rs.contentType = body, r.Header.Get("Content-Type")
	rs.alert, rs.calls, rs.parseErr = read(body, rs.contentType)
	key := alertKey(rs.alert, body)
	if key == "" {
		rs.refusal = outcomeWrongKey
		return "", nil
	}
	return id + tokenSep + key, nil
}

// read parses an alert's body and plans its calls (alertcmd.Alert.Calls):
// the alert as far as it could be read, its calls, and the error of a
// body that does not parse or plan.
func read(body []byte, contentType string) (alertcmd.Alert, []alertcmd.Call, *alertcmd.Error) {
	a, err := alertcmd.Parse(body, contentType)
	if err != nil {
		return a, nil, asAlertError(err)
	}
	calls, err := a.Calls()
	if err != nil {
		return a, nil, asAlertError(err)
	}
	return a, calls, nil
}

// alertKey is the key an alert's body carries: the parsed one, else the
// first key= pair of the text (scanKey); "" for none.
func alertKey(a alertcmd.Alert, body []byte) string {
	if a.Key != "" {
		return a.Key
	}
	return scanKey(body)
}

// asAlertError returns err as an *alertcmd.Error.
func asAlertError(err error) *alertcmd.Error {
	var ae *alertcmd.Error
	if errors.As(err, &ae) {
		return ae
	}
	return &alertcmd.Error{Detail: "the alert could not be read"}
}

// readBody reads the whole body, at most alertcmd.MaxBody bytes: 413
// body_too_large beyond, 408 body_timeout when it does not arrive in
// time.
func readBody(r *http.Request) ([]byte, *httpapi.Error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, alertcmd.MaxBody+1))
	var ne net.Error
	switch {
	case err != nil && (errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()):
		return nil, &httpapi.Error{Status: http.StatusRequestTimeout, Code: errcode.BodyTimeout, Detail: "the body was not received in time"}
	case err != nil:
		return nil, &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.InvalidArgument, Detail: "the body could not be read to its end"}
	case len(b) > alertcmd.MaxBody:
		return nil, &httpapi.Error{Status: http.StatusRequestEntityTooLarge, Code: errcode.BodyTooLarge,
			Detail: "the alert is larger than the limit of " + strconv.Itoa(alertcmd.MaxBody) + " bytes"}
	}
	return b, nil
}

// scanKey finds the key of a body alertcmd could not read it from (a
// JSON body that is not JSON): the value of the first key= pair of the
// text, matched without regard to case.
func scanKey(body []byte) string {
	for seg := range strings.FieldsFuncSeq(string(body), func(r rune) bool { return r == ';' || r == '\n' || r == '\r' }) {
		k, v, ok := strings.Cut(seg, "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "key") {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// refusalOutcome names a refused admission for the metric.
func refusalOutcome(rs *reqState, status int) string {
	if rs.refusal != "" {
		return rs.refusal
	}
	switch status {
	case http.StatusTooManyRequests:
		return outcomeRateLimited
	case http.StatusForbidden:
		return outcomePlan
	case http.StatusUnauthorized:
		return outcomeWrongKey
	case http.StatusRequestEntityTooLarge:
		return outcomeTooLarge
	}
	return outcomeUnavailable
}

// send answers POST /v1/send/{webhookId}.
func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	if !s.allowed(r) {
		s.count(outcomeAddress)
		httpapi.WriteError(w, http.StatusForbidden, httpapi.Error{Code: errcode.AddressNotAllowed,
			Detail: "alerts are not accepted from this address"})
		return
	}
	rs := &reqState{}
	r = r.WithContext(context.WithValue(r.Context(), stateKey{}, rs))
	sr := &httpapi.StatusRecorder{ResponseWriter: w}
	ad, ok := s.auth.Admit(sr, r, &s.door)
	if !ok {
		s.count(refusalOutcome(rs, sr.Status))
		return
	}
	defer ad.Done()
	s.receive(w, r, ad.Principal, rs)
}

// received is an alert admitted and recorded.
type received struct {
	p         auth.Principal
	webhookID string
	alert     alertcmd.Alert
	calls     []alertcmd.Call
	// dupKey is the alert's duplicate key, whose record answers the
	// duplicates.
	dupKey string
	rec    store.WebhookAlert
	// fail is the failure of an alert recorded failed at once (it did
	// not parse).
	fail *failure
}

// receive handles an admitted alert: the budget of its calls, its gates,
// then, in one transaction, the duplicate's claim and the record; then
// its kill switch, its delay or its calls.
func (s *Server) receive(w http.ResponseWriter, r *http.Request, p auth.Principal, rs *reqState) {
	ctx := r.Context()
	now := s.opts.Clock().UTC().Truncate(time.Millisecond)
	in := &received{p: p, webhookID: p.TokenHash, alert: rs.alert, calls: rs.calls}
	// The trading budget: the door charged one; each further call
	// costs one more.
	if n := len(in.calls); n > 1 {
		if dec := s.opts.Budget.AllowN(p.UserID, n-1); !dec.Allowed {
			httpapi.WriteRateLimited(w, s.opts.Budget.Policy(), dec)
			s.auth.Refused(p, &s.door, s.opts.Budget.Policy().Name)
			s.count(outcomeRateLimited)
			return
		}
	}
	a := &in.alert
	accounts, _ := json.Marshal(nonNil(a.Accounts))
	in.rec = store.WebhookAlert{UserID: p.UserID, ReceivedAt: now, Text: alertcmd.Redact(rs.body, rs.contentType),
		Command: a.Command, Accounts: accounts, Destination: a.Destination, UpdatedAt: now}
	// The gates decided before the record: a duplicate records nothing,
	// so what they decided for it is dropped.
	if rs.parseErr != nil {
		in.rec.Status, in.rec.Reason = store.WebhookFailed, rs.parseErr.Detail
		in.fail = badAlert(rs.parseErr)
	}
	release := func() {}
	if in.rec.Status == "" {
		if a.RateLimit != nil {
			// Counted and recorded under the user's lock, so that two
			// alerts at once count each other.
			unlock, err := s.rates.Lock(ctx, p.UserID)
			if err != nil {
				return // the caller left
			}
			var once sync.Once
			release = func() { once.Do(unlock) }
			defer release()
		}
		g, err := s.gates(ctx, p.UserID, a, len(in.calls), now)
		if err != nil {
			s.unavailable(w, err)
			return
		}
		in.rec.Status, in.rec.Reason, in.rec.RateID, in.rec.DueAt = g.status, g.reason, g.rateID, g.dueAt
	}
	// The duplicates' claim and the record, in one transaction. The
	// key's record holds the answer of an alert decided now, else the
	// alert's id while it runs.
	sum := sha256.Sum256(rs.body)
	fp := hex.EncodeToString(sum[:])
	in.dupKey = "webhook:dup:" + fp
	claim := store.Idempotent{UserID: p.UserID, Key: in.dupKey, Fingerprint: fp, CreatedAt: now}
	seq, got, claimed, err := s.opts.Store.ReceiveWebhookAlert(ctx, claim, now.Add(-s.opts.DuplicateWindow), in.rec,
		func(seq int64) store.Idempotent {
			in.rec.Seq = seq
			switch in.rec.Status {
			case store.WebhookFailed, store.WebhookBlocked, store.WebhookScheduled:
				code, body := in.answerBody(in.rec.Status, nil, in.fail)
				return store.Idempotent{State: store.IdemDone, Status: code, Body: body}
			}
			return store.Idempotent{Body: mustJSON(map[string]string{"alertId": AlertID(seq)})}
		})
	release()
	if err != nil {
		s.unavailable(w, err)
		return
	}
	if !claimed {
		s.count(outcomeDuplicate)
		replay(w, got)
		return
	}
	in.rec.Seq = seq
	switch in.rec.Status {
	case store.WebhookFailed, store.WebhookBlocked:
		s.published(in, in.rec.Status)
		s.answer(w, in, in.rec.Status, nil, in.fail)
		return
	}
	if a.KillSwitch != nil {
		if f := s.killSwitch(ctx, in, *a.KillSwitch); f != nil {
			s.finish(in, []string{in.rec.Status}, store.WebhookFailed, f.Detail, []Result{}, f)
			s.answer(w, in, store.WebhookFailed, nil, f)
			return
		}
	}
	switch {
	case len(in.calls) == 0:
		s.finish(in, []string{store.WebhookRunning}, store.WebhookExecuted, "", []Result{}, nil)
		s.answer(w, in, store.WebhookExecuted, nil, nil)
	case in.rec.Status == store.WebhookScheduled:
		s.schedule(in)
		s.answer(w, in, store.WebhookScheduled, nil, nil)
	default:
		s.runAndAnswer(w, r, in)
	}
}

// gated is what an alert's own gates decide before it is recorded: its
// status (blocked, scheduled or running) and why it is blocked, the id
// its rate_limit counts it under, and a delayed alert's due time.
type gated struct {
	status, reason, rateID string
	dueAt                  time.Time
}

// gates applies the gates of a parsed alert with n calls, received at
// now, in order: its rate_limit (the alerts of its id in the store: the
// caller that records the alert holds the user's lock), its trading
// window (start_time, end_time, unless bypass_trade_windows), its delay.
// Only the store's failure is an error.
func (s *Server) gates(ctx context.Context, userID string, a *alertcmd.Alert, n int, now time.Time) (gated, error) {
	var g gated
	if a.RateLimit != nil {
		rateID := cmp.Or(a.ID, "*")
		count, err := s.opts.Store.CountWebhookAlerts(ctx, userID, rateID, now.Add(-a.RateLimit.Per))
		if err != nil {
			return gated{}, err
		}
		if count >= a.RateLimit.N {
			return gated{status: store.WebhookBlocked, reason: "rate_limit: " + strconv.Itoa(a.RateLimit.N) +
				" alerts of this id already in the last " + a.RateLimit.Per.String()}, nil
		}
		g.rateID = rateID
	}
	if !a.BypassWindows {
		if open, _ := a.InWindow(alertcmd.Clock(now.In(s.ny))); !open {
			return gated{status: store.WebhookBlocked, reason: "outside the alert's trading window (start_time to end_time, New York time)"}, nil
		}
	}
	g.status = store.WebhookRunning
	if a.Delay > 0 && n > 0 {
		g.status, g.dueAt = store.WebhookScheduled, now.Add(a.Delay)
	}
	return g, nil
}

// badAlert is the failure of an alert that does not parse: 400, the
// detail alertcmd wrote.
func badAlert(e *alertcmd.Error) *failure {
	code := errcode.InvalidArgument
	switch {
	case strings.HasPrefix(e.Detail, "missing required field"):
		code = errcode.MissingRequiredFields
	case e.Instrument:
		code = errcode.InvalidInstrument
	}
	return &failure{Status: http.StatusBadRequest, Code: code, Detail: e.Detail}
}

// unavailable answers 503 storage_unavailable: nothing was recorded.
func (s *Server) unavailable(w http.ResponseWriter, err error) {
	s.log.Warn("the store failed while receiving an alert", zap.Error(err))
	s.count(outcomeUnavailable)
	httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.StorageUnavailable,
		Detail: "the relay cannot record alerts right now; nothing was run", RetryAfter: 5})
}

// replay answers a duplicate with the first alert's answer, or 202
// running while the first still runs.
func replay(w http.ResponseWriter, got store.Idempotent) {
	if got.State == store.IdemDone && got.Status != 0 {
		httpapi.WriteRaw(w, got.Status, got.Body)
		return
	}
	var first struct {
		AlertID string `json:"alertId"`
	}
	_ = json.Unmarshal(got.Body, &first)
	httpapi.Write(w, http.StatusAccepted, Answer{AlertID: first.AlertID, Status: store.WebhookRunning, Results: []Result{}})
}

// Answer is the data of an alert's answer.
type Answer struct {
	AlertID string   `json:"alertId"`
	Status  string   `json:"status"`
	Results []Result `json:"results"`
	// DueAt is a scheduled alert's due time.
	DueAt string `json:"dueAt,omitempty"`
}

// failure is an alert's failed answer: the first failure's status, code
// and detail.
type failure struct {
	Status     int
	Code       string
	Detail     string
	RetryAfter int
}

// failureBody is the wire form of a failed alert's answer: the spec's
// error object with the alert's id.
type failureBody struct {
	Success    bool   `json:"success"`
	Error      string `json:"error"`
	Detail     string `json:"detail,omitempty"`
	AlertID    string `json:"alertId"`
	RetryAfter int    `json:"retryAfter,omitempty"`
}

// answerBody is the status and body of an alert's answer.
func (in *received) answerBody(status string, results []Result, f *failure) (int, []byte) {
	id := AlertID(in.rec.Seq)
	if f != nil {
		return f.Status, mustJSON(failureBody{Error: f.Code, Detail: f.Detail, AlertID: id, RetryAfter: f.RetryAfter})
	}
	if results == nil {
		results = []Result{}
	}
	a := Answer{AlertID: id, Status: status, Results: results}
	code := http.StatusOK
	switch status {
	case store.WebhookScheduled:
		code, a.DueAt = http.StatusAccepted, in.rec.DueAt.UTC().Format(time.RFC3339Nano)
	case store.WebhookRunning:
		code = http.StatusAccepted
	}
	var buf bytes.Buffer
	buf.WriteString(`{"success":true,"data":`)
	buf.Write(mustJSON(a))
	buf.WriteString("}\n")
	return code, buf.Bytes()
}

// answer writes an alert's answer and counts it.
func (s *Server) answer(w http.ResponseWriter, in *received, status string, results []Result, f *failure) {
	code, body := in.answerBody(status, results, f)
	s.count(status)
	if f != nil && f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	httpapi.WriteRaw(w, code, body)
}

// mustJSON encodes v, which always encodes.
func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// nonNil returns s, or an empty slice for nil.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
