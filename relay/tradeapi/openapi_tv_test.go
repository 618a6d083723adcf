package tradeapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/apischema"
	"tradebridge/relay/broker"
	"tradebridge/relay/errcode"
	"tradebridge/relay/profile"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
	"tradebridge/relay/tradeapi"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

var update = flag.Bool("update", false, "rewrite the golden files of the broker family's OpenAPI documents (testdata/openapi.tv.json)")

// brokerGolden is the golden file of the broker family's document in the
// standard profile, as it is served. The compatible one differs only in
// where the members of data stand, which its own tests check.
var brokerGolden = filepath.Join("testdata", "openapi.tv.json")

// loadBrokerOpenAPI loads and validates the broker family's document in
// profile p with kin-openapi, as a client generator would read it.
func loadBrokerOpenAPI(t *testing.T, p profile.Profile) *openapi3.T {
	t.Helper()
	raw, err := json.Marshal(tradeapi.BrokerOpenAPIFor(p))
	require.NoError(t, err)
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()))
	return doc
}

// brokerLinkRoutes are the link routes of package relay/broker the document
// describes by hand.
var brokerLinkRoutes = []string{
	"POST " + broker.LinkPath, "DELETE " + broker.LinkPath, "GET " + broker.StatusPath, "POST " + broker.LinkOAuthPath,
}

// operations lists doc's operations as "METHOD path".
func operations(doc *openapi3.T) map[string]*openapi3.Operation {
	out := map[string]*openapi3.Operation{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			out[method+" "+path] = op
		}
	}
	return out
}

// The broker family's documents validate, hold exactly the family's
// routes and link routes, each once, and nothing of the desktop family's
// own; every operation has a typed 200 body and, for every other status,
// the error schema listing its codes.
func TestBrokerOpenAPIDocuments(t *testing.T) {
	t.Parallel()
	var want []string
	for _, r := range tradeapi.BrokerRoutes() {
		want = append(want, r[0]+" "+r[1])
	}
	want = append(want, brokerLinkRoutes...)
	for _, p := range profile.All {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			doc := loadBrokerOpenAPI(t, p)
			require.Equal(t, "3.1.0", doc.OpenAPI)
			require.Equal(t, "tv", doc.Extensions["x-family"])
			require.Equal(t, string(p), doc.Extensions["x-profile"])
			ops := operations(doc)
			got := slices.Sorted(func(yield func(string) bool) {
				for k := range ops {
					if !yield(k) {
						return
					}
				}
			})
			require.ElementsMatch(t, want, got, "every route of the family once, and no other")
			require.Len(t, got, len(want))
			ids := map[string]string{}
			for where, op := range ops {
				require.True(t, strings.HasPrefix(where[strings.Index(where, " ")+1:], tradeapi.BrokerPrefix), where)
				require.NotContains(t, ids, op.OperationID, "%s: operationId %s is unique", where, op.OperationID)
				ids[op.OperationID] = where
				ok := op.Responses.Status(http.StatusOK)
				require.NotNil(t, ok, where)
				body := ok.Value.Content.Get("application/json").Schema.Value
				require.NotNil(t, body, where)
				require.NotNil(t, ok.Value.Headers["RateLimit"], where)
				for _, st := range []int{401, 403, 429, 500, 503} {
					require.NotNil(t, op.Responses.Status(st), "%s answers %d", where, st)
				}
				for code, r := range op.Responses.Map() {
					if code == "200" {
						continue
					}
					es := r.Value.Content.Get("application/json").Schema.Value
					require.Len(t, es.AllOf, 2, "%s %s", where, code)
					require.Equal(t, "#/components/schemas/Error", es.AllOf[0].Ref, "%s %s", where, code)
					require.NotEmpty(t, es.AllOf[1].Value.Properties["error"].Value.Enum, "%s %s lists its codes", where, code)
				}
			}
			// The data of a trading route is its typed component.
			place := ops["POST "+tradeapi.BrokerPrefix+"accounts/{account}/orders/place"]
			body := place.Responses.Status(http.StatusOK).Value.Content.Get("application/json").Schema.Value
			if p == profile.Standard {
				require.True(t, strings.HasSuffix(place.Responses.Status(http.StatusOK).Value.Content.Get("application/json").Schema.Ref, "WriteResponse"))
				require.Contains(t, body.Properties, "orderId")
			} else {
				require.Len(t, body.AllOf, 2)
			}
			// The link routes answer data in both profiles.
			status := ops["GET "+broker.StatusPath].Responses.Status(http.StatusOK).Value.Content.Get("application/json").Schema
			require.Equal(t, "#/components/schemas/BrokerStatusResponse", status.Ref)
			require.Equal(t, "#/components/schemas/BrokerStatus", status.Value.Properties["data"].Ref)
			for _, desktopOnly := range []string{
				"/v1/api/tv/market/bars", "/v1/api/tv/market/quote", "/v1/api/tv/accounts/{account}/strategies",
				"/v1/api/tv/atm-templates", "/v1/api/tv/accounts/{account}/watermarks", "/v1/api/tv/accounts/snapshot",
				"/v1/api/accounts", "/v1/api/accounts/{account}/orders/place",
			} {
				require.Nil(t, doc.Paths.Value(desktopOnly), desktopOnly)
			}
		})
	}
}

// errorCodesOf maps each operation of doc to its error codes by status.
func errorCodesOf(doc *openapi3.T) map[string]map[string][]string {
	out := map[string]map[string][]string{}
	for where, op := range operations(doc) {
		out[where] = map[string][]string{}
		for st, r := range op.Responses.Map() {
			codes, _ := r.Value.Extensions["x-error-codes"].([]any)
			for _, c := range codes {
				out[where][st] = append(out[where][st], c.(string))
			}
		}
	}
	return out
}

// Each route lists the codes the broker family answers, at their
// statuses, and none it never answers.
func TestBrokerOpenAPIErrorCodes(t *testing.T) {
	t.Parallel()
	perOp := errorCodesOf(loadBrokerOpenAPI(t, profile.Standard))
	const (
		place     = "POST /v1/api/tv/accounts/{account}/orders/place"
		change    = "POST /v1/api/tv/accounts/{account}/orders/{orderId}/change"
		cancelAll = "POST /v1/api/tv/orders/cancelall"
		accounts  = "GET /v1/api/tv/accounts"
		positions = "GET /v1/api/tv/accounts/{account}/positions"
		link      = "POST /v1/api/tv/link"
		unlink    = "DELETE /v1/api/tv/link"
		status    = "GET /v1/api/tv/status"
		oauth     = "POST /v1/api/tv/link/oauth"
	)
	type want struct {
		op, status, code string
		listed           bool
	}
	cases := []want{
		{place, "409", errcode.TradovateNotLinked, true},
		{place, "409", errcode.AccountIdentityUnresolved, true},
		{place, "409", errcode.RequestInProgress, true},
		{place, "400", protocol.CodeNotSupported, true},
		{place, "400", "tradovate_max_pos_limit_reached", true},
		{place, "400", "tradovate_no_quote", true},
		{place, "400", "tradovate_unknown_reason", true},
		{place, "400", errcode.InvalidArgument, true},
		{place, "400", protocol.CodeAccountNotFound, false},
		{place, "400", protocol.CodeTemplateNotFound, false},
		{place, "400", protocol.CodeUnknownFunction, false},
		{place, "408", errcode.BodyTimeout, true},
		{place, "408", errcode.AddonDisconnected, false},
		{place, "408", errcode.PlatformUnavailable, false},
		{place, "422", errcode.IdempotencyKeyReused, true},
		{place, "503", errcode.BrokerUnavailable, true},
		{place, "503", errcode.OutcomeUnknown, true},
		{place, "429", errcode.RateLimited, true},
		{change, "400", "tradovate_trailing_stop_non_order_qty_modify", true},
		{cancelAll, "400", "tradovate_too_late", true},
		{cancelAll, "409", errcode.TradovateNotLinked, true},
		{cancelAll, "409", errcode.AccountIdentityUnresolved, false},
		{accounts, "409", errcode.TradovateNotLinked, true},
		{accounts, "409", errcode.AccountIdentityUnresolved, false},
		{accounts, "503", errcode.BrokerUnavailable, true},
		{accounts, "503", errcode.OutcomeUnknown, false},
		{accounts, "400", "tradovate_unknown_reason", false},
		{positions, "409", errcode.AccountIdentityUnresolved, true},
		{link, "400", errcode.BrokerLoginFailed, true},
		{link, "400", errcode.MissingRequiredFields, true},
		{link, "503", errcode.BrokerUnavailable, true},
		{link, "409", errcode.TradovateNotLinked, false},
		{link, "408", errcode.BodyTimeout, true},
		{unlink, "400", errcode.UnexpectedBody, true},
		{status, "400", errcode.UnknownParameter, true},
		{status, "409", errcode.TradovateNotLinked, false},
		{oauth, "404", errcode.NotFound, true},
		{oauth, "503", errcode.BrokerUnavailable, true},
	}
	// Every failure reason of the broker is listed on every write.
	for _, r := range tradovatewire.FailureReasons {
		cases = append(cases, want{place, "400", tradovatewire.RejectCode(r), true}, want{cancelAll, "400", tradovatewire.RejectCode(r), true})
	}
	for _, tc := range cases {
		require.Contains(t, perOp, tc.op)
		got := slices.Contains(perOp[tc.op][tc.status], tc.code)
		require.Equal(t, tc.listed, got, "%s %s %s", tc.op, tc.status, tc.code)
	}
	// A GET reads no body and has no agent: it answers no 408.
	require.NotContains(t, perOp[accounts], "408")
	// The desktop family's 408 addon_disconnected and 400
	// account_not_found are on no route of the broker family.
	for op, byStatus := range perOp {
		for st, codes := range byStatus {
			for _, c := range []string{errcode.AddonDisconnected, protocol.CodeAccountNotFound, protocol.CodeUnknownFunction} {
				require.NotContains(t, codes, c, "%s %s", op, st)
			}
		}
	}
}

// The broker family's Order carries trailDistance and its order-placing
// routes take the trailing types; the desktop documents have neither.
func TestBrokerOpenAPITrailingStops(t *testing.T) {
	t.Parallel()
	brokerDoc := loadBrokerOpenAPI(t, profile.Standard)
	desk := loadOpenAPI(t, profile.Standard)
	order := brokerDoc.Components.Schemas["Order"].Value
	require.Contains(t, order.Properties, "trailDistance")
	require.NotContains(t, order.Required, "trailDistance")
	require.NotContains(t, desk.Components.Schemas["Order"].Value.Properties, "trailDistance")

	bodyOf := func(doc *openapi3.T, path string) *openapi3.Schema {
		return doc.Paths.Value(path).Post.RequestBody.Value.Content.Get("application/json").Schema.Value
	}
	for _, tc := range []struct {
		route    string
		trailing bool
	}{
		{"accounts/{account}/orders/place", true},
		{"accounts/{account}/orders/flatplace", true},
		{"accounts/{account}/positions/reverseposition", true},
		{"accounts/{account}/orders/{orderId}/change", false},
		{"accounts/{account}/orders/cancel_and_bracket", false},
	} {
		b := bodyOf(brokerDoc, tradeapi.BrokerPrefix+tc.route)
		_, hasTrail := b.Properties["trailDistance"]
		require.Equal(t, tc.trailing, hasTrail, tc.route)
		if tc.trailing {
			require.Contains(t, b.Properties["orderType"].Value.Enum, protocol.OrderTypeTrailingStop, tc.route)
			require.Contains(t, b.Properties["orderType"].Value.Enum, protocol.OrderTypeTrailingStopLimit, tc.route)
			d := bodyOf(desk, "/v1/api/"+tc.route)
			require.NotContains(t, d.Properties, "trailDistance", tc.route)
			require.NotContains(t, d.Properties["orderType"].Value.Enum, protocol.OrderTypeTrailingStop, tc.route)
		}
	}
}

// The documents are the golden files (go test ./relay/tradeapi -run
// TestBrokerOpenAPIGolden -update rewrites them after a deliberate change).
func TestBrokerOpenAPIGolden(t *testing.T) {
	t.Parallel()
	got, err := apischema.Encode(tradeapi.BrokerOpenAPIFor(profile.Standard))
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.WriteFile(brokerGolden, got, 0o644))
		return
	}
	want, err := os.ReadFile(brokerGolden)
	require.NoError(t, err, "write the golden file with go test ./relay/tradeapi -run TestBrokerOpenAPIGolden -update")
	require.True(t, bytes.Equal(want, got), "%s changed: check the change, then go test ./relay/tradeapi -run TestBrokerOpenAPIGolden -update", brokerGolden)
}

// The broker family serves its documents without a token, at both paths,
// as they are built; the desktop family's stay where they
// are, and the AsyncAPI document is not under /v1/api/tv.
func TestBrokerDocumentsServed(t *testing.T) {
	t.Parallel()
	f := newFamilies(t, 1000)
	for _, tc := range []struct {
		path string
		p    profile.Profile
	}{
		{tradeapi.BrokerOpenAPIPath, profile.Standard},
		{tradeapi.BrokerOpenAPICompatiblePath, profile.Compatible},
	} {
		require.Contains(t, f.brokerRoutes, "GET "+tc.path)
		r := f.env.do("GET", tc.path, "", "")
		require.Equal(t, http.StatusOK, r.Status, tc.path)
		require.Equal(t, "application/json", r.Header.Get("Content-Type"), tc.path)
		require.Equal(t, "tv", r.Body["x-family"], tc.path)
		require.Equal(t, string(tc.p), r.Body["x-profile"], tc.path)
		want, err := apischema.Encode(tradeapi.BrokerOpenAPIFor(tc.p))
		require.NoError(t, err)
		require.Equal(t, string(want), r.Raw, tc.path)
		// A token changes nothing, and nothing is called.
		require.Equal(t, r.Raw, f.env.do("GET", tc.path, "tb_api_notv", "").Raw, tc.path)
	}
	for _, path := range tradeapi.DocumentPaths {
		r := f.env.do("GET", path, "", "")
		require.Equal(t, http.StatusOK, r.Status, path)
		require.Nil(t, r.Body["x-family"], path)
	}
	require.Equal(t, http.StatusNotFound, f.env.do("GET", tradeapi.BrokerPrefix+"asyncapi.json", "", "").Status)
	require.Empty(t, f.broker.all())
	require.Empty(t, f.desktop.all())
}

// The link routes described by hand are relay/broker's: their paths, and
// the members of broker.Status with the same required ones and kinds.
func TestBrokerLinkSchemasMatchTheBrokerPackage(t *testing.T) {
	t.Parallel()
	doc := loadBrokerOpenAPI(t, profile.Standard)
	for _, r := range brokerLinkRoutes {
		method, path, _ := strings.Cut(r, " ")
		require.NotNil(t, doc.Paths.Value(path), r)
		require.NotNil(t, doc.Paths.Value(path).GetOperation(method), r)
	}
	s := doc.Components.Schemas["BrokerStatus"].Value
	st := reflect.TypeFor[broker.Status]()
	var names, required []string
	for i := range st.NumField() {
		tag := st.Field(i).Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		names = append(names, name)
		if !strings.Contains(opts, "omitempty") {
			required = append(required, name)
		}
	}
	sort.Strings(required)
	require.ElementsMatch(t, names, slices.Collect(func(yield func(string) bool) {
		for k := range s.Properties {
			if !yield(k) {
				return
			}
		}
	}))
	require.Equal(t, required, s.Required)
	require.ElementsMatch(t, []any{broker.EnvDemo, broker.EnvLive}, s.Properties["env"].Value.Enum)
	require.ElementsMatch(t, []any{broker.MethodAPIKey, broker.MethodOAuth}, s.Properties["method"].Value.Enum)

	at := time.Date(2026, 11, 18, 15, 0, 0, 0, time.UTC)
	for _, v := range []broker.Status{
		{Accounts: []string{}},
		{Linked: true, Env: broker.EnvDemo, Method: broker.MethodAPIKey, LinkedAt: &at, Session: tradovate.StateRateLimited,
			TokenExpires: &at, RetryAt: &at, Connected: true, Accounts: []string{"DEMO1234"}},
	} {
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		var body any
		require.NoError(t, json.Unmarshal(raw, &body))
		require.NoError(t, s.VisitJSON(body, openapi3.EnableJSONSchema2020()), string(raw))
	}
}

// brokerRelay is the broker family as the relay wires it: its trading routes
// and documents, and the link routes of a broker.Manager, admitted by the
// family's door; c routes requests through its document.
type brokerRelay struct {
	srv    *httptest.Server
	router routers.Router
}

func newBrokerRelay(t *testing.T, login func(context.Context, string, broker.Secrets) (broker.Session, error), oauth bool) *brokerRelay {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	require.NoError(t, st.CreateUser(context.Background(), store.User{ID: "usr_pro", Name: "usr_pro", Plan: "pro", CreatedAt: time.Now()}))
	keys, err := sealed.Generate("test")
	require.NoError(t, err)
	adm, err := admit.New(admit.Options{Auth: newFakeAuth()})
	require.NoError(t, err)
	opts := broker.Options{Store: st, Keys: keys, Login: login,
		NewPlatform: func(context.Context, broker.PlatformConfig) (broker.Platform, error) {
			return nil, errors.New("no broker in this test")
		}}
	if oauth {
		opts.OAuth = tradovate.OAuthClient{ID: "client-1", RedirectURL: "https://relay.example/v1/tv/oauth/callback"}
	}
	bm, err := broker.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { bm.Close() })
	brokerAPI, err := tradeapi.New(tradeapi.Options{Family: tradeapi.FamilyBroker, Caller: bm, Admit: adm, Idempotency: st})
	require.NoError(t, err)
	mux := http.NewServeMux()
	brokerAPI.Register(mux)
	bm.Register(mux, adm, brokerAPI.Door())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	raw, err := json.Marshal(tradeapi.BrokerOpenAPIFor(profile.Standard))
	require.NoError(t, err)
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	require.NoError(t, err)
	doc.Servers = openapi3.Servers{{URL: srv.URL + "/"}}
	router, err := legacy.NewRouter(doc)
	require.NoError(t, err)
	return &brokerRelay{srv: srv, router: router}
}

// check sends a request with the user's token and validates it and the
// answer against the document; it returns the answer's status and error
// code.
func (r *brokerRelay) check(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, r.srv.URL+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tb_api_pro")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	route, params, err := r.router.FindRoute(req)
	require.NoError(t, err, "%s %s is a documented route", method, path)
	in := &openapi3filter.RequestValidationInput{Request: req.Clone(context.Background()), PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	if body != "" {
		in.Request.Body = io.NopCloser(strings.NewReader(body))
	}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)

	resp, err := r.srv.Client().Do(req)
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, reqErr, "%s %s: what the relay accepts, the document accepts", method, path)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	out.SetBodyBytes(raw)
	require.NoError(t, openapi3filter.ValidateResponse(context.Background(), out), "%s %s answered %d %s", method, path, resp.StatusCode, raw)
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(raw, &e)
	return resp.StatusCode, e.Error
}

// The link routes and a trading route answer as the document says:
// request, status, headers and body validated with kin-openapi.
func TestBrokerLinkRoutesAnswerAsDocumented(t *testing.T) {
	t.Parallel()
	const creds = `{"env":"demo","username":"trader","password":"pw","appId":"app","appVersion":"1.0","cid":7,"sec":"s3cret"}`
	refuse := func(context.Context, string, broker.Secrets) (broker.Session, error) {
		return broker.Session{}, broker.ErrLoginRefused
	}
	accept := func(context.Context, string, broker.Secrets) (broker.Session, error) {
		return broker.Session{AccessToken: "tok", Expires: time.Now().Add(time.Hour)}, nil
	}
	type step struct {
		method, path, body string
		status             int
		code               string
	}
	for _, tc := range []struct {
		name  string
		login func(context.Context, string, broker.Secrets) (broker.Session, error)
		oauth bool
		steps []step
	}{
		{"unlinked", refuse, false, []step{
			{"GET", broker.StatusPath, "", http.StatusOK, ""},
			{"GET", broker.StatusPath + "?x=1", "", http.StatusBadRequest, errcode.UnknownParameter},
			{"GET", "/v1/api/tv/accounts", "", http.StatusConflict, errcode.TradovateNotLinked},
			{"POST", "/v1/api/tv/accounts/DEMO1/orders/place", `{"action":"Sell","instrument":"ES","orderType":"TrailingStop","quantity":1,"timeInForce":"Day","trailDistance":4}`,
				http.StatusConflict, errcode.TradovateNotLinked},
			{"POST", "/v1/api/tv/accounts/DEMO1/orders/place", `{"action":"Sell","instrument":"ES","orderType":"Trailing","quantity":1,"timeInForce":"Day","trailDistance":4}`,
				http.StatusBadRequest, errcode.InvalidArgument},
			{"DELETE", broker.LinkPath, "", http.StatusOK, ""},
			{"POST", broker.LinkPath, creds, http.StatusBadRequest, errcode.BrokerLoginFailed},
			{"POST", broker.LinkPath, strings.Replace(creds, `"demo"`, `"paper"`, 1), http.StatusBadRequest, errcode.InvalidArgument},
			{"POST", broker.LinkPath, `{"env":"demo"}`, http.StatusBadRequest, errcode.MissingRequiredFields},
			{"POST", broker.LinkPath, strings.Replace(creds, `"cid":7`, `"cid":"7"`, 1), http.StatusBadRequest, errcode.InvalidField},
			{"POST", broker.LinkOAuthPath, `{"env":"demo"}`, http.StatusNotFound, errcode.NotFound},
		}},
		{"linked", accept, true, []step{
			{"POST", broker.LinkPath, creds, http.StatusOK, ""},
			{"GET", broker.StatusPath, "", http.StatusOK, ""},
			{"POST", broker.LinkOAuthPath, `{"env":"live"}`, http.StatusOK, ""},
			{"DELETE", broker.LinkPath, "", http.StatusOK, ""},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newBrokerRelay(t, tc.login, tc.oauth)
			for _, s := range tc.steps {
				status, code := r.check(t, s.method, s.path, s.body)
				require.Equal(t, s.status, status, "%s %s", s.method, s.path)
				require.Equal(t, s.code, code, "%s %s", s.method, s.path)
			}
		})
	}
}
