package tradovatefake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/internal/testkit"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/bridge/tradovate/tradovatefake"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start is the simulator's time in the tests: Monday 5 October 2026,
// 10:30 in New York, a trading session, ES 12-26 the front month.
var start = time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)

// es is the front ES contract, by both names.
const (
	es          = "ES 12-26"
	esTradovate = "ESZ6"
)

// fixture is a fake over a simulator on a manual clock.
type fixture struct {
	t      *testing.T
	fake   *tradovatefake.Server
	market *sim.Platform
	clock  *sim.ManualClock
	auth   *testkit.Clock // the token clock, Options.Now
	client *http.Client   // the fixture's own: no test shares connections
	token  string         // an access token, after login
	md     string         // its market-data token
}

// newFixture starts a fake over a new simulator with ES at 6000 (bid
// 6000, ask 6000.25). edit changes the options first.
func newFixture(t *testing.T, edit ...func(*tradovatefake.Options)) *fixture {
	t.Helper()
	clock := sim.NewManualClock(start)
	market, err := sim.New(sim.Options{Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { _ = market.Close() })
	require.NoError(t, market.SetPrice(es, 6000))
	ac := testkit.NewClock(time.Date(2026, time.October, 5, 12, 0, 0, 0, time.UTC))
	opts := tradovatefake.Options{Market: market, Now: ac.Now}
	for _, e := range edit {
		e(&opts)
	}
	fake, err := tradovatefake.Start(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = fake.Close() })
	return &fixture{t: t, fake: fake, market: market, clock: clock, auth: ac, client: newClient(t)}
}

// newClient returns an HTTP client of its own, whose idle connections
// close when the test ends.
func newClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// credentials are the default credentials the fake accepts.
func credentials() tradovatewire.AccessTokenRequest {
	return tradovatewire.AccessTokenRequest{Name: tradovatefake.DefaultName, Password: tradovatefake.DefaultPassword,
		AppID: tradovatefake.DefaultAppID, AppVersion: "1.0", CID: tradovatefake.DefaultCID, Sec: tradovatefake.DefaultSec}
}

// login logs in with the default credentials and keeps the tokens.
func (f *fixture) login() tradovatewire.AccessTokenResponse {
	f.t.Helper()
	var resp tradovatewire.AccessTokenResponse
	require.Equal(f.t, http.StatusOK, f.call(http.MethodPost, "/auth/accesstokenrequest", "", credentials(), &resp))
	require.NotEmpty(f.t, resp.AccessToken, "login refused: %+v", resp)
	f.token, f.md = resp.AccessToken, resp.MDAccessToken
	return resp
}

// call sends a REST request (body encoded as JSON unless nil) with token
// as bearer when set, decodes the answer into out when set, and returns
// the status.
func (f *fixture) call(method, path, token string, body, out any) int {
	f.t.Helper()
	status, b, err := f.do(method, path, token, body)
	require.NoError(f.t, err)
	if out != nil && len(b) > 0 {
		require.NoError(f.t, json.Unmarshal(b, out), "answer: %s", b)
	}
	return status
}

// raw is call returning the answer's bytes.
func (f *fixture) raw(method, path, token string, body any) (int, []byte) {
	f.t.Helper()
	status, b, err := f.do(method, path, token, body)
	require.NoError(f.t, err)
	return status, b
}

// do sends a REST request and returns the status and body, or the error
// of the exchange.
func (f *fixture) do(method, path, token string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Long)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, f.fake.RESTURL()+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// get and post are call with the fixture's token.
func (f *fixture) get(path string, out any) int {
	f.t.Helper()
	return f.call(http.MethodGet, path, f.token, nil, out)
}

func (f *fixture) post(path string, body, out any) int {
	f.t.Helper()
	return f.call(http.MethodPost, path, f.token, body, out)
}

// accountID is the broker id of a simulator account.
func (f *fixture) accountID(name string) int64 {
	f.t.Helper()
	id, ok := f.fake.AccountID(name)
	require.True(f.t, ok, name)
	return id
}

// order is a placeorder request on Sim101 in ESZ6.
func (f *fixture) order(action, typ string, qty int, price, stop float64) tradovatewire.PlaceOrderRequest {
	return tradovatewire.PlaceOrderRequest{AccountSpec: tradovatefake.DefaultName, AccountID: f.accountID("Sim101"),
		Action: action, Symbol: esTradovate, OrderQty: qty, OrderType: typ, Price: price, StopPrice: stop,
		IsAutomated: true}
}

// place places an order and returns its id, failing on a refusal.
func (f *fixture) place(req tradovatewire.PlaceOrderRequest) int64 {
	f.t.Helper()
	var resp tradovatewire.PlaceOrderResponse
	require.Equal(f.t, http.StatusOK, f.post("/order/placeorder", req, &resp))
	require.Empty(f.t, resp.FailureReason, resp.FailureText)
	require.NotZero(f.t, resp.OrderID)
	return resp.OrderID
}

// orders, versions, fills and positions read the lists.
func (f *fixture) orders() map[int64]tradovatewire.Order {
	f.t.Helper()
	var os []tradovatewire.Order
	require.Equal(f.t, http.StatusOK, f.get("/order/list", &os))
	out := make(map[int64]tradovatewire.Order)
	for _, o := range os {
		out[o.ID] = o
	}
	return out
}

// version returns an order's current version (the highest id).
func (f *fixture) version(orderID int64) tradovatewire.OrderVersion {
	f.t.Helper()
	var vs []tradovatewire.OrderVersion
	require.Equal(f.t, http.StatusOK, f.get("/orderVersion/list", &vs))
	var cur tradovatewire.OrderVersion
	for _, v := range vs {
		if v.OrderID == orderID && v.ID > cur.ID {
			cur = v
		}
	}
	require.NotZero(f.t, cur.ID, "no version of order %d", orderID)
	return cur
}

func (f *fixture) positions() []tradovatewire.Position {
	f.t.Helper()
	var ps []tradovatewire.Position
	require.Equal(f.t, http.StatusOK, f.get("/position/list", &ps))
	return ps
}

func (f *fixture) fills() []tradovatewire.Fill {
	f.t.Helper()
	var fs []tradovatewire.Fill
	require.Equal(f.t, http.StatusOK, f.get("/fill/list", &fs))
	return fs
}

// contractID finds ESZ6's id.
func (f *fixture) contractID() int64 {
	f.t.Helper()
	var c tradovatewire.Contract
	require.Equal(f.t, http.StatusOK, f.get("/contract/find?name="+esTradovate, &c))
	return c.ID
}

// ws is a test's end of a socket.
type ws struct {
	t    *testing.T
	conn *websocket.Conn
	id   int64
	// pending are messages read while waiting for something else.
	pending []tradovatewire.Message
}

// dial opens a socket and reads its "o".
func (f *fixture) dial(url string) *ws {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: f.client})
	require.NoError(f.t, err)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	f.t.Cleanup(func() { _ = conn.CloseNow() })
	w := &ws{t: f.t, conn: conn}
	fr := w.frame()
	require.Equal(f.t, tradovatewire.FrameOpen, fr.Kind)
	return w
}

// frame reads the next frame that is no heartbeat.
func (w *ws) frame() tradovatewire.Frame {
	w.t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
		_, b, err := w.conn.Read(ctx)
		cancel()
		require.NoError(w.t, err)
		fr, err := tradovatewire.ParseFrame(b)
		require.NoError(w.t, err, "frame %q", b)
		if fr.Kind != tradovatewire.FrameHeartbeat {
			return fr
		}
	}
}

// message returns the next message of an "a" frame.
func (w *ws) message() tradovatewire.Message {
	w.t.Helper()
	for len(w.pending) == 0 {
		fr := w.frame()
		require.Equal(w.t, tradovatewire.FrameArray, fr.Kind)
		w.pending = fr.Messages
	}
	m := w.pending[0]
	w.pending = w.pending[1:]
	return m
}

// request sends a request and returns the response to it; events read
// meanwhile are kept for later.
func (w *ws) request(endpoint, query string, body []byte) tradovatewire.Message {
	w.t.Helper()
	w.id++
	id := w.id
	w.send(tradovatewire.FormatRequest(tradovatewire.Request{Endpoint: endpoint, ID: id, Query: query, Body: body}))
	var events []tradovatewire.Message
	for {
		m := w.message()
		if !m.IsEvent() && m.I == id {
			w.pending = append(events, w.pending...)
			return m
		}
		events = append(events, m)
	}
}

func (w *ws) send(b []byte) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
	defer cancel()
	require.NoError(w.t, w.conn.Write(ctx, websocket.MessageText, b))
}

// authorize authorizes the socket with token and checks the answer.
func (w *ws) authorize(token string, status int) {
	w.t.Helper()
	w.send(tradovatewire.FormatRequest(tradovatewire.Authorize(token)))
	m := w.message()
	require.Equal(w.t, int64(0), m.I)
	require.Equal(w.t, status, m.S)
}

// userSocket dials the user socket, authorizes it and syncs it.
func (f *fixture) userSocket() (*ws, syncAnswer) {
	f.t.Helper()
	w := f.dial(f.fake.UserSocketURL())
	w.authorize(f.token, http.StatusOK)
	body, err := json.Marshal(tradovatewire.SyncRequest{SplitResponses: true, EntityTypes: tradovatewire.SyncEntityTypes})
	require.NoError(f.t, err)
	m := w.request("user/syncrequest", "", body)
	require.Equal(f.t, http.StatusOK, m.S)
	var snap syncAnswer
	require.NoError(f.t, json.Unmarshal(m.D, &snap))
	return w, snap
}

// syncAnswer is the syncrequest answer as a test reads it.
type syncAnswer struct {
	tradovatewire.SyncResponse
}

// propsEvent is a props event as a test reads it.
type propsEvent struct {
	tradovatewire.PropsEvent
}

// props reads events until n props events were read, and returns them.
func (w *ws) props(n int) []propsEvent {
	w.t.Helper()
	var out []propsEvent
	for len(out) < n {
		m := w.message()
		if m.E != tradovatewire.EventProps {
			continue
		}
		var p propsEvent
		require.NoError(w.t, json.Unmarshal(m.D, &p.PropsEvent))
		out = append(out, p)
	}
	return out
}

// propsUntil reads props events up to and including the first one match
// accepts.
func (w *ws) propsUntil(match func(propsEvent) bool) []propsEvent {
	w.t.Helper()
	var out []propsEvent
	for {
		p := w.props(1)[0]
		out = append(out, p)
		if match(p) {
			return out
		}
	}
}

// kinds lists the events as "entityType eventType".
func kinds(ps []propsEvent) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.EntityType + " " + p.EventType
	}
	return out
}

// entity decodes an event's entity.
func entity[T any](t *testing.T, p propsEvent) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(p.Entity, &v))
	return v
}

// readFails waits until reading the socket fails (it was closed).
func (w *ws) readFails() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
	defer cancel()
	for {
		_, _, err := w.conn.Read(ctx)
		if err != nil {
			require.NoError(w.t, ctx.Err(), "the socket stayed open")
			return
		}
	}
}

// symbolBody is an md/subscribequote body.
func symbolBody(symbol string) []byte { return []byte(`{"symbol":"` + symbol + `"}`) }

// itoa writes an id in decimal.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }
