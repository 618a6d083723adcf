package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/store"
	"tradebridge/relay/webhook"
	"tradebridge/relay/webhook/alertcmd"
)

// Webhook is the user's TradingView webhook; *webhook.Server implements
// it (see package webhook: Show, Rotate, Try, History).
type Webhook interface {
	// Show returns the user's URL and key, made on first use.
	Show(ctx context.Context, userID string) (webhook.Info, error)
	// Rotate issues a new key (the old one stops at once) and records who
	// did it in the activity log.
	Rotate(ctx context.Context, userID string, by protocol.ActivitySource) (webhook.Info, error)
	// Try is the dry run of an alert body: what it would do, without
	// doing anything.
	Try(ctx context.Context, userID string, body []byte, contentType string) (webhook.TryResult, error)
	// History is a page of the alert history, newest first.
	History(ctx context.Context, userID string, before int64, limit int) (webhook.Page, error)
}

// HistoryPage is how many alerts the TradingView page shows at once.
const HistoryPage = 20

// BuilderCommands are the commands the message builder offers: those
// written from a few choices (the others need an order or strategy id).
var BuilderCommands = []string{
	alertcmd.CmdPlace, alertcmd.CmdFlatPlace, alertcmd.CmdClosePosition, alertcmd.CmdReverse,
	alertcmd.CmdReversePosition, alertcmd.CmdFlatten, alertcmd.CmdFlattenEverything,
	alertcmd.CmdCancelOrders, alertcmd.CmdCancelAllOrders,
}

// Choices of the builder's selects, as the language spells them.
var (
	builderActions      = []string{"BUY", "SELL"}
	builderOrderTypes   = []string{"MARKET", "LIMIT", "STOPMARKET", "STOPLIMIT"}
	builderTIFs         = []string{"DAY", "GTC"}
	builderDestinations = []string{alertcmd.DestinationDesktop, alertcmd.DestinationBroker}
)

// ChartPlaceholders are the TradingView placeholders the builder writes
// when the trader picks "from the chart", by the language's key, and the
// example value a dry run tries each with (TradingView replaces them
// before it sends the alert; the relay never receives them).
var ChartPlaceholders = []struct{ Field, Placeholder, Example string }{
	{"instrument", "{{ticker}}", "ES1!"},
	{"action", "{{strategy.order.action}}", "buy"},
	{"qty", "{{strategy.order.contracts}}", "1"},
}

// builder is the message builder's form: one value per key of the
// language it writes, as the trader chose it.
type builder struct {
	Command, Destination, Account, Instrument, Action, Qty, OrderType, TIF string
	LimitPrice, StopPrice, TakeProfit, StopLoss                            string
	FlattenFirst, FromChart                                                bool
	// Sent: the trader sent the form (the query has a command); the
	// first visit shows the defaults without judging them.
	Sent bool
}

// readBuilder reads the builder's form from a query, with the defaults
// for what it lacks; account is the default account.
func readBuilder(q url.Values, account string) builder {
	pick := func(key string, choices []string) string {
		v := strings.ToUpper(strings.TrimSpace(q.Get(key)))
		if key == "destination" {
			v = strings.ToLower(v)
		}
		if slices.Contains(choices, v) {
			return v
		}
		return choices[0]
	}
	b := builder{
		Command: pick("command", BuilderCommands), Destination: pick("destination", builderDestinations),
		Action: pick("action", builderActions), OrderType: pick("order_type", builderOrderTypes), TIF: pick("tif", builderTIFs),
		Account: strings.TrimSpace(q.Get("account")), Instrument: strings.TrimSpace(q.Get("instrument")),
		Qty: strings.TrimSpace(q.Get("qty")), LimitPrice: strings.TrimSpace(q.Get("limit_price")),
		StopPrice: strings.TrimSpace(q.Get("stop_price")), TakeProfit: strings.TrimSpace(q.Get("take_profit")),
		StopLoss: strings.TrimSpace(q.Get("stop_loss")), FlattenFirst: q.Get("flatten_first") != "",
		FromChart: q.Get("from_chart") != "", Sent: q.Has("command"),
	}
	if !b.Sent {
		b.Account, b.Instrument, b.Qty = account, "ES", "1"
	}
	return b
}

// query is the builder's form as a query string.
func (b builder) query() string {
	q := url.Values{"command": {b.Command}, "destination": {b.Destination}, "account": {b.Account},
		"instrument": {b.Instrument}, "action": {b.Action}, "qty": {b.Qty}, "order_type": {b.OrderType}, "tif": {b.TIF},
		"limit_price": {b.LimitPrice}, "stop_price": {b.StopPrice}, "take_profit": {b.TakeProfit}, "stop_loss": {b.StopLoss}}
	if b.FlattenFirst {
		q.Set("flatten_first", "true")
	}
	if b.FromChart {
		q.Set("from_chart", "true")
	}
	return q.Encode()
}

// builderError is what is wrong with the builder's choices: the key of
// the language it concerns and a sentence.
type builderError struct {
	Field, Detail string
}

// message writes the alert message of the builder's choices with key:
// one `key=value;` pair per line, only the keys the command takes
// (alertcmd.Takes), prices only where the order type needs them. The
// message is then read by the webhook's own parser (with the chart's
// placeholders tried as their examples); what it refuses is the error,
// in its words.
func (b builder) message(key string) (string, *builderError) {
	var lines []string
	var bad *builderError
	add := func(field, value string) {
		if value == "" || !alertcmd.Takes(b.Command, field) {
			return
		}
		if strings.ContainsAny(value, ";\r\n") && bad == nil {
			bad = &builderError{Field: field, Detail: field + " cannot hold a ; or a line break"}
			return
		}
		lines = append(lines, field+"="+value+";")
	}
	chart := func(field, value string) string {
		if !b.FromChart {
			return value
		}
		for _, p := range ChartPlaceholders {
			if p.Field == field {
				return p.Placeholder
			}
		}
		return value
	}
	ticks := func(field, value string) string {
		if value == "" {
			return ""
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil || n <= 0 || n > 100000 {
			if bad == nil {
				bad = &builderError{Field: field, Detail: field + " is a number of ticks above 0"}
			}
			return ""
		}
		return strconv.FormatFloat(n, 'f', -1, 64) + " ticks"
	}
	lines = append(lines, "key="+key+";")
	add("command", b.Command)
	if b.Destination == alertcmd.DestinationBroker {
		add("destination", b.Destination)
	}
	add("account", b.Account)
	add("instrument", chart("instrument", b.Instrument))
	add("action", chart("action", b.Action))
	add("qty", chart("qty", b.Qty))
	add("order_type", b.OrderType)
	ot, _ := protocol.NormalizeOrderType(b.OrderType)
	prices := protocol.OrderPricesOf(ot)
	if prices.Limit {
		add("limit_price", b.LimitPrice)
	}
	if prices.Stop {
		add("stop_price", b.StopPrice)
	}
	add("tif", b.TIF)
	add("take_profit", ticks("take_profit", b.TakeProfit))
	add("stop_loss", ticks("stop_loss", b.StopLoss))
	if b.FlattenFirst && b.Command == alertcmd.CmdPlace {
		add("flatten_first", "true")
	}
	msg := strings.Join(lines, "\n")
	if bad != nil {
		return msg, bad
	}
	body, _ := withExamples(msg)
	a, err := alertcmd.Parse([]byte(body), "text/plain")
	if err == nil {
		_, err = a.Calls()
	}
	var ae *alertcmd.Error
	if errors.As(err, &ae) {
		return msg, &builderError{Field: ae.Field, Detail: ae.Detail}
	}
	return msg, nil
}

// withExamples returns an alert message with the chart's placeholders
// replaced by their examples, as TradingView replaces them before it
// sends, and the notes saying which were.
func withExamples(msg string) (string, []string) {
	var notes []string
	for _, p := range ChartPlaceholders {
		if strings.Contains(msg, p.Placeholder) {
			msg = strings.ReplaceAll(msg, p.Placeholder, p.Example)
			notes = append(notes, p.Placeholder+" as "+p.Example)
		}
	}
	return msg, notes
}

// contentTypeOf is the Content-Type TradingView sends a message with:
// application/json when it is valid JSON, text/plain otherwise.
func contentTypeOf(msg string) string {
	if json.Valid([]byte(msg)) && strings.HasPrefix(strings.TrimSpace(msg), "{") {
		return "application/json"
	}
	return "text/plain"
}

// webhookView is the TradingView page's data.
type webhookView struct {
	// Allowed: the user's plan takes TradingView alerts; else the page
	// says so instead of showing a URL that cannot work.
	Allowed bool
	// URL and Key are the webhook's (the URL absolute, on the dashboard's
	// origin).
	URL, Key string
	// Rotated: the key was rotated just now.
	Rotated bool
	Builder builder
	// Message is the builder's message; BuildError what the parser says
	// of it.
	Message    string
	BuildError *builderError
	// TryAction is where "Try it" posts: with the builder's choices, so
	// that the page comes back with them.
	TryAction string
	Try       *tryView
	// Accounts and BrokerAccounts are the accounts the builder offers:
	// the agent's (online) and the linked broker login's; OtherAccount
	// the builder's account when it is neither (typed before, or
	// several), offered too.
	Accounts, BrokerAccounts []string
	OtherAccount             string
	Commands, Actions        []string
	OrderTypes, TIFs         []string
	// Takes lists, by key of the language, the offered commands that
	// take it (for the script, which hides the others' inputs).
	Takes map[string]string
	// Alerts is the history's page; Next the older page's URL.
	Alerts []alertRow
	Next   string
	// First: the newest page, which the stream socket keeps live.
	First bool
}

// alertRow is one alert of the history.
type alertRow struct {
	ID, Command, Accounts, Destination, Status, Reason string
	At                                                 time.Time
}

// tryView is a dry run's result as the page shows it.
type tryView struct {
	// Outcome is ok or error (#try-result's data-outcome); Would the dry
	// run's verdict (data-would).
	Outcome, Would string
	Headline       string
	Summary        string
	Calls          []tryCallView
	Notes          []string
	// Error is the refusal's or failure's code and detail.
	Code, Detail string
}

// tryCallView is one call of a dry run.
type tryCallView struct {
	Account, Fn, Skipped string
	Args                 []argPair
}

// argPair is one argument of a call: its name (dotted for nested) and
// value.
type argPair struct{ Name, Value string }

// webhookPage serves GET /app/webhook: the URL and key, the builder
// (its choices in the query), the alert history (before= pages).
func (s *Server) webhookPage(w http.ResponseWriter, r *http.Request, sess *session) {
	v, wv, ok := s.webhookPageView(w, r, sess, "")
	if !ok {
		return
	}
	wv.Rotated = r.URL.Query().Get("rotated") == "1"
	s.render(w, http.StatusOK, "webhook", v)
}

// webhookPageView is the TradingView page's view, with formErr as its
// refusal ("" for none) and what readWebhook read as its data; when that
// cannot be read, the refusal is answered to w and ok is false.
func (s *Server) webhookPageView(w http.ResponseWriter, r *http.Request, sess *session, formErr string) (*view, *webhookView, bool) {
	v := &view{Title: "TradingView", Nav: "webhook", Error: formErr}
	s.signedView(r, sess, v)
	wv, status, msg := s.readWebhook(r, sess)
	if msg != "" {
		s.renderError(w, r, sess, status, msg)
		return nil, nil, false
	}
	v.Data = wv
	return v, wv, true
}

// readWebhook reads what the TradingView page shows: the webhook (on a
// plan that takes alerts), the builder's message of the query, the
// history's page. A failure is a status and a sentence for the page.
func (s *Server) readWebhook(r *http.Request, sess *session) (*webhookView, int, string) {
	if s.opts.Webhook == nil {
		return nil, http.StatusNotFound, "TradingView alerts are not available on this relay."
	}
	ctx := r.Context()
	q := r.URL.Query()
	wv := &webhookView{Allowed: sess.p.Plan.AtLeast(webhook.Door.Plan), Commands: BuilderCommands, Actions: builderActions,
		OrderTypes: builderOrderTypes, TIFs: builderTIFs, Takes: takesTable(), First: q.Get("before") == ""}
	var before int64
	if b := q.Get("before"); b != "" {
		seq, ok := webhook.ParseAlertID(b)
		if !ok {
			return nil, http.StatusBadRequest, "That page of the alert history does not exist."
		}
		before = seq
	}
	if wv.Allowed {
		in, err := s.opts.Webhook.Show(ctx, sess.p.UserID)
		if err != nil {
			status, msg := s.webhookFailed(err, "reading the webhook")
			return nil, status, msg
		}
		wv.URL, wv.Key = origin(r)+in.URL, in.Key
		wv.Accounts, wv.BrokerAccounts = s.knownAccounts(ctx, sess.p.UserID)
		first := ""
		if len(wv.Accounts) > 0 {
			first = wv.Accounts[0]
		}
		wv.Builder = readBuilder(q, first)
		if a := wv.Builder.Account; a != "" && !slices.Contains(wv.Accounts, a) && !slices.Contains(wv.BrokerAccounts, a) {
			wv.OtherAccount = a
		}
		wv.Message, wv.BuildError = wv.Builder.message(in.Key)
		if !wv.Builder.Sent {
			wv.BuildError = nil
		}
		wv.TryAction = "/app/webhook/try?" + wv.Builder.query() + "#try-result"
	}
	page, err := s.opts.Webhook.History(ctx, sess.p.UserID, before, HistoryPage)
	if err != nil {
		status, msg := s.webhookFailed(err, "reading the alert history")
		return nil, status, msg
	}
	wv.Alerts = alertRows(page)
	if page.Next != nil {
		wv.Next = "/app/webhook?" + url.Values{"before": {*page.Next}}.Encode() + "#webhook-alerts"
	}
	return wv, http.StatusOK, ""
}

// webhookFailed is the status and sentence of a failure of Webhook.
func (s *Server) webhookFailed(err error, doing string) (int, string) {
	if errors.Is(err, webhook.ErrNoKeys) {
		return http.StatusServiceUnavailable, "TradingView alerts need the relay's key file, which this relay was started without: ask its operator."
	}
	s.log.Warn(doing, zap.Error(err))
	return http.StatusServiceUnavailable, "The relay cannot read your TradingView webhook right now. Try again shortly."
}

// knownAccounts returns the accounts the builder offers: the agent's
// when it is online (as it last reported them), the linked broker
// login's.
func (s *Server) knownAccounts(ctx context.Context, userID string) (desktop, broker []string) {
	if ans, err := s.opts.Agent.Read(ctx, userID); err == nil && ans.Connected && ans.Agent != nil {
		for _, c := range ans.Agent.Connections {
			for _, a := range c.Accounts {
				if !slices.Contains(desktop, a) {
					desktop = append(desktop, a)
				}
			}
		}
	}
	if s.opts.Broker != nil {
		if st, err := s.opts.Broker.Status(ctx, userID); err == nil && st.Linked {
			broker = st.Accounts
		}
	}
	return desktop, broker
}

// takesTable lists, for each key the builder writes, the offered
// commands that take it.
func takesTable() map[string]string {
	out := map[string]string{}
	for _, f := range []string{"account", "instrument", "action", "qty", "order_type", "limit_price", "stop_price", "tif",
		"take_profit", "stop_loss", "flatten_first"} {
		var cmds []string
		for _, c := range BuilderCommands {
			if alertcmd.Takes(c, f) && (f != "flatten_first" || c == alertcmd.CmdPlace) {
				cmds = append(cmds, c)
			}
		}
		out[f] = strings.Join(cmds, " ")
	}
	return out
}

// alertRows are a history page's rows.
func alertRows(p webhook.Page) []alertRow {
	rows := make([]alertRow, 0, len(p.Alerts))
	for _, a := range p.Alerts {
		var accounts []string
		_ = json.Unmarshal(a.Accounts, &accounts)
		at, _ := time.Parse(time.RFC3339Nano, a.ReceivedAt)
		rows = append(rows, alertRow{ID: a.AlertID, At: at, Command: a.Command, Accounts: strings.Join(accounts, ", "),
			Destination: a.Destination, Status: a.Status, Reason: a.Reason})
	}
	return rows
}

// webhookMessage serves GET /app/webhook/message: the builder's message
// of the query, for the page's script to show as the trader chooses
// ({"message","error","field"}).
func (s *Server) webhookMessage(w http.ResponseWriter, r *http.Request, sess *session) {
	if s.opts.Webhook == nil || !sess.p.Plan.AtLeast(webhook.Door.Plan) {
		httpapi.WriteError(w, http.StatusForbidden, httpapi.Error{Code: errcode.PlanRequired, Detail: webhook.Door.PlanDetail})
		return
	}
	in, err := s.opts.Webhook.Show(r.Context(), sess.p.UserID)
	if err != nil {
		_, msg := s.webhookFailed(err, "reading the webhook")
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.StorageUnavailable, Detail: msg, RetryAfter: 5})
		return
	}
	b := readBuilder(r.URL.Query(), "")
	msg, bad := b.message(in.Key)
	out := map[string]string{"message": msg, "error": "", "field": "", "tryAction": "/app/webhook/try?" + b.query() + "#try-result"}
	if bad != nil {
		out["error"], out["field"] = bad.Detail, bad.Field
	}
	httpapi.Write(w, http.StatusOK, out)
}

// webhookTry serves POST /app/webhook/try (message): the dry run of the
// message, as TradingView would send it (its placeholders tried as
// examples), shown on the page with the builder of the query.
func (s *Server) webhookTry(w http.ResponseWriter, r *http.Request, sess *session) {
	v, wv, ok := s.webhookPageView(w, r, sess, "")
	if !ok {
		return
	}
	if !wv.Allowed {
		v.Error = webhook.Door.PlanDetail + "."
		s.render(w, http.StatusForbidden, "webhook", v)
		return
	}
	raw := r.PostForm.Get("message")
	wv.Message = raw
	body, examples := withExamples(raw)
	res, err := s.opts.Webhook.Try(r.Context(), sess.p.UserID, []byte(body), contentTypeOf(body))
	if err != nil {
		s.log.Warn("trying an alert", zap.Error(err))
		v.Error = "The relay cannot try the alert right now. Try again shortly."
		s.render(w, http.StatusServiceUnavailable, "webhook", v)
		return
	}
	wv.Try = tryResultView(res, examples)
	s.render(w, http.StatusOK, "webhook", v)
}

// tryResultView is a dry run's result in words.
func tryResultView(res webhook.TryResult, examples []string) *tryView {
	tv := &tryView{Outcome: "ok", Would: res.Would, Summary: res.Summary, Notes: res.Notes}
	if !res.OK() {
		tv.Outcome, tv.Code, tv.Detail = "error", res.Error.Code, res.Error.Detail
	}
	where := "your PC"
	if res.Destination == alertcmd.DestinationBroker {
		where = "your Tradovate login"
	}
	sent := 0
	for _, c := range res.Calls {
		if c.Skipped == "" {
			sent++
		}
		tv.Calls = append(tv.Calls, tryCallView{Account: c.Account, Fn: c.Fn, Skipped: c.Skipped, Args: argPairs(c.Args)})
	}
	switch res.Would {
	case webhook.WouldRun:
		tv.Headline = "This alert would run now: " + plural(sent, "call") + " to " + where + "."
		if len(res.Calls) == 0 {
			tv.Headline = "This alert would run now."
		}
	case webhook.WouldSchedule:
		tv.Headline = "This alert would be accepted and run after its delay: " + plural(sent, "call") + " to " + where + "."
	case webhook.WouldBlock:
		tv.Headline = "This alert would be accepted but held back by its own conditions."
	case webhook.WouldFail:
		tv.Headline = "This alert would fail: " + res.Error.Detail
	case webhook.WouldRefuse:
		tv.Headline = "This alert would be refused (HTTP " + strconv.Itoa(res.Error.Status) + "): " + res.Error.Detail
	}
	if len(examples) > 0 {
		tv.Notes = append(tv.Notes, "TradingView fills in its placeholders when the alert fires; they were tried as "+
			strings.Join(examples, ", ")+".")
	}
	return tv
}

// plural writes n and a noun, in the plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// argPairs lists a call's arguments (a JSON object) in their order,
// nested members by dotted names.
func argPairs(raw []byte) []argPair {
	var out []argPair
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var walk func(prefix string) error
	walk = func(prefix string) error {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		d, ok := t.(json.Delim)
		switch {
		case !ok:
			out = append(out, argPair{Name: prefix, Value: scalar(t)})
			return nil
		case d == '{':
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				name, _ := k.(string)
				if prefix != "" {
					name = prefix + "." + name
				}
				if err := walk(name); err != nil {
					return err
				}
			}
		case d == '[':
			for i := 0; dec.More(); i++ {
				if err := walk(prefix + "." + strconv.Itoa(i)); err != nil {
					return err
				}
			}
		}
		_, err = dec.Token() // the closing delimiter
		return err
	}
	if err := walk(""); err != nil && !errors.Is(err, io.EOF) {
		return []argPair{{Name: "arguments", Value: string(raw)}}
	}
	return out
}

// scalar writes a JSON scalar.
func scalar(t json.Token) string {
	switch v := t.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return "null"
}

// webhookAlerts serves GET /app/webhook/alerts: the history's newest
// page's rows alone (HTML), which the page fetches again when the stream
// socket says an alert was received.
func (s *Server) webhookAlerts(w http.ResponseWriter, r *http.Request, sess *session) {
	if s.opts.Webhook == nil {
		httpapi.WriteError(w, http.StatusNotFound, httpapi.Error{Code: errcode.NotFound, Detail: "TradingView alerts are not available on this relay"})
		return
	}
	page, err := s.opts.Webhook.History(r.Context(), sess.p.UserID, 0, HistoryPage)
	if err != nil {
		_, msg := s.webhookFailed(err, "reading the alert history")
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.StorageUnavailable, Detail: msg, RetryAfter: 5})
		return
	}
	var buf bytes.Buffer
	if err := s.pages.byName["webhook"].ExecuteTemplate(&buf, "webhook-alerts", alertRows(page)); err != nil {
		s.log.Error("rendering the alert history", zap.Error(err))
		httpapi.WriteError(w, http.StatusInternalServerError, httpapi.Error{Detail: "the alert history could not be shown"})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// webhookRotate serves POST /app/webhook/rotate (confirm): a new key, the
// old one refused at once, recorded with this session as who rotated it;
// 303 back to the page, which shows the new key.
func (s *Server) webhookRotate(w http.ResponseWriter, r *http.Request, sess *session) {
	refuse := func(status int, msg string) {
		if v, _, ok := s.webhookPageView(w, r, sess, msg); ok {
			s.render(w, status, "webhook", v)
		}
	}
	switch {
	case s.opts.Webhook == nil:
		s.renderError(w, r, sess, http.StatusNotFound, "TradingView alerts are not available on this relay.")
		return
	case !sess.p.Plan.AtLeast(webhook.Door.Plan):
		refuse(http.StatusForbidden, webhook.Door.PlanDetail+".")
		return
	case r.PostForm.Get("confirm") != "rotate":
		refuse(http.StatusBadRequest, "Tick the box to confirm: alerts with the current key stop working at once.")
		return
	}
	if _, err := s.opts.Webhook.Rotate(r.Context(), sess.p.UserID, sess.src); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			s.renderError(w, r, sess, http.StatusNotFound, "You have no TradingView webhook.")
			return
		}
		status, msg := s.webhookFailed(err, "rotating the webhook's key")
		s.renderError(w, r, sess, status, msg)
		return
	}
	http.Redirect(w, r, "/app/webhook?rotated=1#webhook-key", http.StatusSeeOther)
}
