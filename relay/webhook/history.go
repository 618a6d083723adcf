package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"

	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/store"
	"tradebridge/relay/tradecall"
)

// Limits of the history's limit parameter.
const (
	DefaultLimit = 100
	MaxLimit     = 500
)

// InfoEndpoint and AlertsEndpoint describe the GET routes' parameters, as
// the trading API's table does (package tradecall): the routes check
// their query against them, and the OpenAPI document describes them from
// them.
var (
	InfoEndpoint = tradecall.Endpoint{
		Method:  http.MethodGet,
		Path:    InfoPath,
		Summary: "The caller's TradingView webhook: the URL and the key to paste into TradingView (made on first use)",
	}
	AlertsEndpoint = tradecall.Endpoint{
		Method:  http.MethodGet,
		Path:    AlertsPath,
		Summary: "The TradingView alerts the caller's webhook received, newest first, with what each did",
		Params: []tradecall.Param{
			{Name: "before", In: tradecall.InQuery, Type: tradecall.TString, Max: 32,
				Doc: "an alert id (tva_…): only the alerts older than it; data.next of the previous page"},
			{Name: "limit", In: tradecall.InQuery, Type: tradecall.TInteger, Min: 1, Max: MaxLimit, Default: int64(DefaultLimit),
				Doc: "the most alerts to answer"},
		},
	}
)

// info answers GET /v1/api/webhook.
func (s *Server) info(w http.ResponseWriter, r *http.Request) {
	ad, ok := s.opts.Admit.Admit(w, r, &s.readDoor)
	if !ok {
		return
	}
	defer ad.Done()
	if _, e := tradecall.ParseHTTP(w, r, &InfoEndpoint); e != nil {
		httpapi.WriteError(w, e.Status, *e)
		return
	}
	in, err := Show(r.Context(), s.opts.Store, s.opts.Keys, ad.Principal.UserID, s.opts.Clock())
	if err != nil {
		s.readFailed(w, r, err)
		return
	}
	httpapi.Write(w, http.StatusOK, in)
}

// AlertView is one alert of the history as GET /v1/api/webhook/alerts
// shows it.
type AlertView struct {
	AlertID    string `json:"alertId"`
	ReceivedAt string `json:"receivedAt"`
	// Text is the alert's body without its key.
	Text        string          `json:"text"`
	Command     string          `json:"command"`
	Accounts    json.RawMessage `json:"accounts"`
	Destination string          `json:"destination"`
	Status      string          `json:"status"`
	Reason      string          `json:"reason"`
	Results     json.RawMessage `json:"results"`
	// DueAt is a scheduled alert's due time.
	DueAt string `json:"dueAt,omitempty"`
}

// View is a stored alert as the history shows it.
func View(a store.WebhookAlert) AlertView {
	v := AlertView{AlertID: AlertID(a.Seq), ReceivedAt: a.ReceivedAt.UTC().Format(time.RFC3339Nano), Text: a.Text,
		Command: a.Command, Accounts: a.Accounts, Destination: a.Destination, Status: a.Status, Reason: a.Reason,
		Results: a.Results}
	if !a.DueAt.IsZero() {
		v.DueAt = a.DueAt.UTC().Format(time.RFC3339Nano)
	}
	if len(v.Accounts) == 0 {
		v.Accounts = json.RawMessage(`[]`)
	}
	if len(v.Results) == 0 {
		v.Results = json.RawMessage(`[]`)
	}
	return v
}

// Page is the data of GET /v1/api/webhook/alerts.
type Page struct {
	// Alerts are the alerts, newest first.
	Alerts []AlertView `json:"alerts"`
	// Next is the before of the next page: the id of the last alert when
	// the page is full, else nil.
	Next *string `json:"next"`
}

// alerts answers GET /v1/api/webhook/alerts.
func (s *Server) alerts(w http.ResponseWriter, r *http.Request) {
	ad, ok := s.opts.Admit.Admit(w, r, &s.readDoor)
	if !ok {
		return
	}
	defer ad.Done()
	args, e := tradecall.ParseHTTP(w, r, &AlertsEndpoint)
	if e != nil {
		httpapi.WriteError(w, e.Status, *e)
		return
	}
	limit := DefaultLimit
	if n, ok := args["limit"].(int64); ok {
		limit = int(n)
	}
	var before int64
	if b, ok := args["before"].(string); ok {
		seq, ok := ParseAlertID(b)
		if !ok {
			httpapi.WriteError(w, http.StatusBadRequest, httpapi.Error{Code: errcode.InvalidArgument,
				Detail: "the query parameter before must be an alert id (tva_ and a number), as data.next gives it",
				Fields: []httpapi.FieldError{{Path: "before", Code: errcode.FieldCodeStringPatternMismatch}}})
			return
		}
		before = seq
	}
	page, err := s.History(r.Context(), ad.Principal.UserID, before, limit)
	if err != nil {
		s.readFailed(w, r, err)
		return
	}
	httpapi.Write(w, http.StatusOK, page)
}

// History returns a page of the user's alert history, newest first: at
// most limit alerts (1 to MaxLimit) older than the alert of seq before
// (0: from the newest), as GET /v1/api/webhook/alerts answers it.
func (s *Server) History(ctx context.Context, userID string, before int64, limit int) (Page, error) {
	limit = min(max(limit, 1), MaxLimit)
	list, err := s.opts.Store.ListWebhookAlerts(ctx, userID, before, limit)
	if err != nil {
		return Page{}, err
	}
	page := Page{Alerts: make([]AlertView, 0, len(list))}
	for _, a := range list {
		page.Alerts = append(page.Alerts, View(a))
	}
	if len(list) == limit {
		next := AlertID(list[len(list)-1].Seq)
		page.Next = &next
	}
	return page, nil
}

// readFailed answers a read the store or the key ring failed.
func (s *Server) readFailed(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() == nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Warn("reading the webhook", zap.Error(err))
	}
	httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.StorageUnavailable,
		Detail: "the relay cannot read its store right now; retry shortly", RetryAfter: 5})
}
