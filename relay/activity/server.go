package activity

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/store"
	"tradebridge/relay/tradecall"
)

// Path is the route's path.
const Path = "/v1/api/activity"

// Limits of the route's limit parameter.
const (
	DefaultLimit = 100
	MaxLimit     = 500
)

// Policy is the per-user budget of the route's reads: a dashboard or a
// bot polling, not a stream (subscribeActivity is the stream).
var Policy = budget.Policy{Name: "activity", Rate: 60, Period: time.Minute, Burst: 20}

// Door is the route's admission policy (see package admit): the trading
// API's (the client address's budget, an API token, the pro plan: 403
// plan_required), then the user's activity budget (Policy), whose state
// the answer carries in the RateLimit headers. NewServer fills in the
// budgets.
var Door = func() admit.Door {
	d := tradecall.Door
	d.Name, d.RateLimitHeaders = "activity", true
	d.PlanDetail = "the activity log needs the pro plan or higher"
	return d
}()

// Endpoint describes the route's parameters, as the trading API's table
// does (package tradecall): the route checks its query against it, and
// the OpenAPI document describes it from it.
var Endpoint = tradecall.Endpoint{
	Method:  http.MethodGet,
	Path:    Path,
	Summary: "The caller's activity log, newest first: what was done and decided on the account, by whom, and its outcome",
	Params: []tradecall.Param{
		{Name: "account", In: tradecall.InQuery, Type: tradecall.TString, Format: tradecall.FormatName, Max: 64,
			Doc: "only the entries of this account"},
		{Name: "kind", In: tradecall.InQuery, Type: tradecall.TString, Max: 1024,
			Doc: "only the entries of these kinds: a comma-separated list of activity kinds"},
		{Name: "before", In: tradecall.InQuery, Type: tradecall.TString, Max: 32,
			Doc: "an entry id (act_…): only the entries older than it; data.next of the previous page"},
		{Name: "limit", In: tradecall.InQuery, Type: tradecall.TInteger, Min: 1, Max: MaxLimit, Default: int64(DefaultLimit),
			Doc: "the most entries to answer"},
	},
}

// Reader is what the route reads of the store; store.Store implements it.
type Reader interface {
	ListActivity(ctx context.Context, userID string, q store.ActivityQuery) ([]store.ActivityRecord, error)
}

// ServerOptions configure a Server.
type ServerOptions struct {
	// Store holds the logs. Required.
	Store Reader
	// Admit admits the requests (Door); the relay passes the one
	// Admitter of every door. Required.
	Admit *admit.Admitter
	// IPBudget is the per-client-address budget checked before the
	// token; nil means none.
	IPBudget *budget.Limiter
	// Budget is the per-user budget of the reads; the zero value means
	// Policy.
	Budget budget.Policy
	// Budgets keeps Budget where every relay node sees it (a
	// *budget.Redis); nil means this node's memory.
	Budgets budget.Backend
	// Logger receives the store's failures; the server logs as
	// "activity". Nil means no logging.
	Logger *zap.Logger
}

// Server answers GET /v1/api/activity. It starts no goroutines.
type Server struct {
	opts ServerOptions
	log  *zap.Logger
	door admit.Door
}

// NewServer returns a Server.
func NewServer(opts ServerOptions) (*Server, error) {
	if opts.Store == nil || opts.Admit == nil {
		return nil, errors.New("activity: ServerOptions.Store and ServerOptions.Admit are required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Budget == (budget.Policy{}) {
		opts.Budget = Policy
	}
	b, err := budget.New(budget.Options{Policy: opts.Budget, Backend: opts.Budgets})
	if err != nil {
		return nil, err
	}
	door := Door
	door.IP = opts.IPBudget
	door.Budgets = []*budget.Limiter{b}
	return &Server{opts: opts, log: opts.Logger.Named("activity"), door: door}, nil
}

// Budget returns the per-user budget of the route's reads, for the doors
// that read the log for their callers (MCP's GetActivity) to share.
func (s *Server) Budget() *budget.Limiter { return s.door.Budgets[0] }

// Mux is where Register adds the route.
type Mux interface {
	Handle(pattern string, handler http.Handler)
}

// Register adds GET Path to mux.
func (s *Server) Register(mux Mux) { mux.Handle("GET "+Path, s) }

// Page is the route's data.
type Page struct {
	// Events are the entries, newest first.
	Events []protocol.ActivityEntry `json:"events"`
	// Next is the before of the next page: the id of the last entry when
	// the page is full, else nil (no older entries match).
	Next *string `json:"next"`
}

// ServeHTTP answers GET Path: the caller's entries that the query
// selects, newest first.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ad, ok := s.opts.Admit.Admit(w, r, &s.door)
	if !ok {
		return
	}
	defer ad.Done()
	args, e := tradecall.ParseHTTP(w, r, &Endpoint)
	if e != nil {
		httpapi.WriteError(w, e.Status, *e)
		return
	}
	q, e := Query(args)
	if e != nil {
		httpapi.WriteError(w, e.Status, *e)
		return
	}
	page, err := ReadPage(r.Context(), s.opts.Store, ad.Principal.UserID, q)
	if err != nil {
		if r.Context().Err() == nil {
			s.log.Warn("reading the activity log", zap.Error(err))
		}
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.StorageUnavailable,
			Detail: "the relay cannot read its store right now; retry shortly", RetryAfter: 5})
		return
	}
	httpapi.Write(w, http.StatusOK, page)
}

// ReadPage reads the page of userID's log that q selects, newest first:
// what the route answers, and what the dashboard's activity page shows.
func ReadPage(ctx context.Context, st Reader, userID string, q store.ActivityQuery) (Page, error) {
	recs, err := st.ListActivity(ctx, userID, q)
	if err != nil {
		return Page{}, err
	}
	page := Page{Events: make([]protocol.ActivityEntry, 0, len(recs))}
	for _, rec := range recs {
		page.Events = append(page.Events, Entry(rec))
	}
	if len(recs) == q.Limit && len(recs) > 0 {
		next := EntryID(recs[len(recs)-1].Seq)
		page.Next = &next
	}
	return page, nil
}

// Query reads the typed arguments of Endpoint (tradecall.ParseHTTP's) as
// a store query: the route's and the dashboard's activity page's.
func Query(args map[string]any) (store.ActivityQuery, *httpapi.Error) {
	q := store.ActivityQuery{Limit: DefaultLimit}
	if n, ok := args["limit"].(int64); ok {
		q.Limit = int(n)
	}
	if a, ok := args["account"].(string); ok {
		q.Account = a
	}
	if b, ok := args["before"].(string); ok {
		seq, ok := ParseEntryID(b)
		if !ok {
			return q, invalid("before", "before must be an entry id (act_ and a number), as data.next gives it", errcode.FieldCodeStringPatternMismatch)
		}
		q.Before = seq
	}
	if k, ok := args["kind"].(string); ok {
		for part := range strings.SplitSeq(k, ",") {
			part = strings.TrimSpace(part)
			if !protocol.ValidActivityKind(part) {
				return q, invalid("kind", "kind must be a comma-separated list of activity kinds (see the documentation's list)", errcode.FieldCodeNotAllowed)
			}
			if !slices.Contains(q.Kinds, part) {
				q.Kinds = append(q.Kinds, part)
			}
		}
	}
	return q, nil
}

func invalid(param, detail, code string) *httpapi.Error {
	return &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.InvalidArgument, Detail: "the query parameter " + detail,
		Fields: []httpapi.FieldError{{Path: param, Code: code}}}
}

// Entry is a stored record as the log shows it, with its id.
func Entry(r store.ActivityRecord) protocol.ActivityEntry {
	detail := r.Detail
	if len(detail) == 0 {
		detail = []byte(`{}`)
	}
	return protocol.ActivityEntry{ID: EntryID(r.Seq), At: r.At.UTC(), Kind: r.Kind, Account: r.Account,
		Source:  protocol.ActivitySource{Kind: r.SourceKind, ID: r.SourceID, Name: r.SourceName},
		Summary: r.Summary, Detail: detail}
}
