package tradovatefake_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate/tradovatefake"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

func TestSocketAuthorize(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	for _, tc := range []struct {
		name   string
		url    string
		token  string
		status int
	}{
		{"user socket, access token", f.fake.UserSocketURL(), f.token, http.StatusOK},
		{"user socket, market-data token", f.fake.UserSocketURL(), f.md, http.StatusUnauthorized},
		{"user socket, unknown token", f.fake.UserSocketURL(), "nope", http.StatusUnauthorized},
		{"md socket, market-data token", f.fake.MDURL(), f.md, http.StatusOK},
		{"md socket, access token", f.fake.MDURL(), f.token, http.StatusUnauthorized},
	} {
		w := f.dial(tc.url)
		w.send(tradovatewire.FormatRequest(tradovatewire.Authorize(tc.token)))
		require.Equal(t, tc.status, w.message().S, tc.name)
	}
}

func TestSocketRequestBeforeAuthorize(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	w := f.dial(f.fake.UserSocketURL())
	m := w.request("user/syncrequest", "", []byte(`{"users":[1]}`))
	require.Equal(t, http.StatusUnauthorized, m.S)
	w.authorize(`"`+f.token+`"`, http.StatusOK) // a quoted token is accepted too
	m = w.request("nope/nothing", "", nil)
	require.Equal(t, http.StatusNotFound, m.S)
}

func TestSyncRequestAndProps(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	// Before the socket syncs, a trade happens: the answer has it.
	f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeMarket, 1, 0, 0))
	w, snap := f.userSocket()
	require.Len(t, snap.Users, 1)
	require.Equal(t, tradovatefake.UserID, snap.Users[0].ID)
	require.Len(t, snap.Accounts, 2)
	require.Len(t, snap.CashBalances, 2)
	require.Len(t, snap.Orders, 1)
	require.Len(t, snap.OrderVersions, 1)
	require.Len(t, snap.Fills, 1)
	require.Len(t, snap.Positions, 1)
	require.Len(t, snap.Contracts, 1)
	require.Equal(t, esTradovate, snap.Contracts[0].Name)
	require.Equal(t, 1, snap.Positions[0].NetPos)
	require.Equal(t, 1, f.fake.Requests("user/syncrequest"))
	sent := f.fake.EventsSent()

	// A limit order that rests, then fills when the market comes to it.
	id := f.place(f.order(tradovatewire.ActionSell, tradovatewire.OrderTypeLimit, 1, 6005, 0))
	ps := w.propsUntil(func(p propsEvent) bool {
		return p.EntityType == tradovatewire.EntityOrder && p.EventType == tradovatewire.EventUpdated
	})
	require.Equal(t, []string{"order Created", "orderVersion Created", "order Updated"}, kinds(ps))
	created := entity[tradovatewire.Order](t, ps[0])
	require.Equal(t, id, created.ID)
	require.Equal(t, tradovatewire.StatusPendingNew, created.OrdStatus)
	require.Equal(t, 6005.0, entity[tradovatewire.OrderVersion](t, ps[1]).Price)
	require.Equal(t, tradovatewire.StatusWorking, entity[tradovatewire.Order](t, ps[2]).OrdStatus)

	require.NoError(t, f.market.SetPrice(es, 6005))
	f.fake.Flush()
	ps = w.propsUntil(func(p propsEvent) bool { return p.EntityType == tradovatewire.EntityCashBalance })
	require.Equal(t, []string{"command Created", "order Updated", "fill Created", "fillFee Created", "position Updated", "cashBalance Updated"}, kinds(ps))
	ps = ps[1:] // the placement's command
	require.Equal(t, tradovatewire.StatusFilled, entity[tradovatewire.Order](t, ps[0]).OrdStatus)
	fill := entity[tradovatewire.Fill](t, ps[1])
	require.Equal(t, id, fill.OrderID)
	require.Equal(t, 6005.0, fill.Price)
	require.Equal(t, tradovatewire.ActionSell, fill.Action)
	fee := entity[tradovatewire.FillFee](t, ps[2])
	require.Equal(t, fill.ID, fee.ID, "a fill's fees follow it, under its id")
	require.InDelta(t, 0.62, fee.Total(), 1e-9)
	pos := entity[tradovatewire.Position](t, ps[3])
	require.Zero(t, pos.NetPos, "a flat position is reported with netPos 0")
	require.Equal(t, 1, pos.Sold)
	cash := entity[tradovatewire.CashBalance](t, ps[4])
	require.Equal(t, f.accountID("Sim101"), cash.AccountID)
	require.InDelta(t, 100_000+(6005-6000.25)*50-2*0.62, cash.Amount, 1e-6)

	f.fake.Flush()
	require.Equal(t, sent+9, f.fake.EventsSent(), "every props event read is counted, and only those")
}

func TestPropsOfANewContract(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	w, snap := f.userSocket()
	require.Empty(t, snap.Contracts)
	require.Empty(t, snap.Orders)
	f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeLimit, 1, 5990, 0))
	ps := w.props(4)
	require.Equal(t, []string{"contract Created", "order Created", "orderVersion Created", "order Updated"}, kinds(ps))
	c := entity[tradovatewire.Contract](t, ps[0])
	require.Equal(t, esTradovate, c.Name)
	require.Equal(t, c.ID, entity[tradovatewire.Order](t, ps[1]).ContractID)
}

func TestPriceMovesSendNoProps(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeMarket, 1, 0, 0))
	_, _ = f.userSocket()
	f.fake.Flush()
	sent := f.fake.EventsSent()
	require.NoError(t, f.market.SetPrice(es, 6020))
	f.fake.Flush()
	require.Equal(t, sent, f.fake.EventsSent(), "an unrealized P&L move changes no cash balance")
}

func TestRESTOverTheSocket(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	w, _ := f.userSocket()
	m := w.request("account/list", "", nil)
	require.Equal(t, http.StatusOK, m.S)
	var as []tradovatewire.Account
	require.NoError(t, json.Unmarshal(m.D, &as))
	require.Len(t, as, 2)

	m = w.request("contract/find", "name="+esTradovate, nil)
	require.Equal(t, http.StatusOK, m.S)

	body, err := json.Marshal(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeMarket, 1, 0, 0))
	require.NoError(t, err)
	m = w.request("order/placeorder", "", body)
	require.Equal(t, http.StatusOK, m.S)
	var placed tradovatewire.PlaceOrderResponse
	require.NoError(t, json.Unmarshal(m.D, &placed))
	require.NotZero(t, placed.OrderID)
	require.Equal(t, tradovatewire.StatusFilled, f.orders()[placed.OrderID].OrdStatus)

	m = w.request("order/item", "id="+itoa(placed.OrderID), nil)
	require.Equal(t, http.StatusOK, m.S)
	var item tradovatewire.Order
	require.NoError(t, json.Unmarshal(m.D, &item))
	require.Equal(t, placed.OrderID, item.ID)
	require.Equal(t, tradovatewire.StatusFilled, item.OrdStatus)

	m = w.request("contract/item", "id=1", nil)
	require.Equal(t, http.StatusNotFound, m.S)

	// Any request is a barrier: what the simulator published before it is
	// sent before its answer.
	w.pending = nil
	_, err = f.market.SubmitOrder(t.Context(), bridge.OrderRequest{Account: "Sim102", Instrument: es,
		Action: "Buy", OrderType: "Limit", LimitPrice: 5990, Quantity: 1})
	require.NoError(t, err)
	m = w.request("nothing/here", "", nil)
	require.Equal(t, http.StatusNotFound, m.S)
	require.NotEmpty(t, w.pending, "the order's events came first")
	require.Equal(t, tradovatewire.EventProps, w.pending[0].E)
}

func TestMarketDataQuotes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	contract := f.contractID()
	w := f.dial(f.fake.MDURL())
	w.authorize(f.md, http.StatusOK)

	m := w.request("md/subscribeQuote", "", symbolBody(esTradovate))
	require.Equal(t, http.StatusOK, m.S)
	q := w.quote()
	require.Equal(t, contract, q.ContractID)
	require.Equal(t, 6000.0, q.Entries[tradovatewire.EntryBid].Price)
	require.Equal(t, 6000.25, q.Entries[tradovatewire.EntryOffer].Price)
	require.Equal(t, 6000.0, q.Entries[tradovatewire.EntryTrade].Price)
	require.Positive(t, q.Entries[tradovatewire.EntryBid].Size)

	require.NoError(t, f.market.SetPrice(es, 6004))
	q = w.quote()
	require.Equal(t, 6004.0, q.Entries[tradovatewire.EntryBid].Price)
	require.Equal(t, 6004.0, q.Entries[tradovatewire.EntryHighPrice].Price)

	// A second socket on the same contract gets the quote as it stands.
	w2 := f.dial(f.fake.MDURL())
	w2.authorize(f.md, http.StatusOK)
	m = w2.request("md/subscribequote", "", []byte(`{"symbol":`+itoa(contract)+`}`))
	require.Equal(t, http.StatusOK, m.S)
	require.Equal(t, 6004.0, w2.quote().Entries[tradovatewire.EntryBid].Price)

	m = w.request("md/unsubscribequote", "", symbolBody(esTradovate))
	require.Equal(t, http.StatusOK, m.S)
	require.NoError(t, f.market.SetPrice(es, 6006))
	require.Equal(t, 6006.0, w2.quote().Entries[tradovatewire.EntryBid].Price)
	// The first socket gets no ES quote any more: its next quote is NQ's.
	m = w.request("md/subscribequote", "", symbolBody("NQZ6"))
	require.Equal(t, http.StatusOK, m.S)
	require.NotEqual(t, contract, w.quote().ContractID)

	m = w.request("md/subscribequote", "", symbolBody("ZZZZ6"))
	require.Equal(t, http.StatusNotFound, m.S)
	m = w.request("user/syncrequest", "", []byte(`{}`))
	require.Equal(t, http.StatusNotFound, m.S, "the market-data socket serves market data only")
}

// quote reads the next md event's quote.
func (w *ws) quote() tradovatewire.Quote {
	w.t.Helper()
	for {
		m := w.message()
		if m.E != tradovatewire.EventMD {
			continue
		}
		var ev tradovatewire.MDEvent
		require.NoError(w.t, json.Unmarshal(m.D, &ev))
		require.Len(w.t, ev.Quotes, 1)
		return ev.Quotes[0]
	}
}

func TestQuoteSubscriptionsFollowTheSockets(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	w := f.dial(f.fake.MDURL())
	w.authorize(f.md, http.StatusOK)
	require.Equal(t, http.StatusOK, w.request("md/subscribequote", "", symbolBody(esTradovate)).S)
	w.quote()
	events, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream := f.market.Events(events)
	require.NoError(t, w.conn.CloseNow())
	// Once the socket is gone the fake unsubscribes the simulator: a price
	// move publishes no quote, only what a move always publishes.
	require.Eventually(t, func() bool {
		if f.market.SetPrice(es, 6001) != nil || f.market.SetPrice(es, 6000) != nil {
			return false
		}
		for {
			select {
			case ev := <-stream:
				if ev.Quote != nil {
					return false
				}
			default:
				return true
			}
		}
	}, testkit.Medium, testkit.Tick)
}

func TestHeartbeats(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(o *tradovatefake.Options) { o.Heartbeat = 10 * time.Millisecond })
	f.login()
	w := f.dial(f.fake.UserSocketURL())
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Medium)
	defer cancel()
	_, b, err := w.conn.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, "h", string(b))
	w.send(tradovatewire.ClientHeartbeat) // read and ignored
	w.authorize(f.token, http.StatusOK)
}

func TestMalformedFrameClosesTheSocket(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	w := f.dial(f.fake.UserSocketURL())
	w.send([]byte("no id here"))
	w.readFails()
}

func TestDropSockets(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	w, _ := f.userSocket()
	md := f.dial(f.fake.MDURL())
	f.fake.DropSockets()
	w.readFails()
	md.readFails()
	_, _ = f.userSocket() // a new socket works
	require.Equal(t, http.StatusOK, f.get("/account/list", nil))
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	w, _ := f.userSocket()
	f.fake.Unreachable(true)
	w.readFails()
	_, _, err := f.do(http.MethodGet, "/account/list", f.token, nil)
	require.Error(t, err, "the connection is cut")
	_, _, err = f.do(http.MethodPost, "/auth/accesstokenrequest", "", credentials())
	require.Error(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Medium)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, f.fake.UserSocketURL(), &websocket.DialOptions{HTTPClient: f.client})
	require.Error(t, err)
	require.Nil(t, conn)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}

	f.fake.Unreachable(false)
	require.Equal(t, http.StatusOK, f.get("/account/list", nil))
	_, _ = f.userSocket()
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	f.fake.RateLimit(true)
	for _, tc := range []struct {
		method, path, token string
		body                any
	}{
		{http.MethodPost, "/auth/accesstokenrequest", "", credentials()},
		{http.MethodGet, "/account/list", f.token, nil},
		{http.MethodGet, "/auth/renewaccesstoken", f.token, nil},
	} {
		status, body := f.raw(tc.method, tc.path, tc.token, tc.body)
		require.Equal(t, http.StatusTooManyRequests, status, tc.path)
		require.Empty(t, body, tc.path)
	}
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Medium)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, f.fake.UserSocketURL(), &websocket.DialOptions{HTTPClient: f.client})
	require.Error(t, err)
	require.NotNil(t, resp)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, 1, f.fake.Logins(), "no login got through")

	f.fake.RateLimit(false)
	require.Equal(t, http.StatusOK, f.get("/account/list", nil))
}

func TestBreakNextOrderReply(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	w, _ := f.userSocket()
	f.fake.BreakNextOrderReply()
	require.Empty(t, f.orders(), "reads are answered")
	_, _, err := f.do(http.MethodPost, "/order/placeorder", f.token, f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeMarket, 1, 0, 0))
	require.Error(t, err, "no answer came")
	require.Equal(t, 1, f.fake.OrdersPlaced(), "the order was placed all the same")
	ps := w.propsUntil(func(p propsEvent) bool { return p.EntityType == tradovatewire.EntityFill })
	require.Equal(t, tradovatewire.EntityFill, ps[len(ps)-1].EntityType, "its events were sent")
	require.Len(t, f.orders(), 1)

	f.place(f.order(tradovatewire.ActionSell, tradovatewire.OrderTypeMarket, 1, 0, 0)) // the next one is answered
	require.Equal(t, 2, f.fake.OrdersPlaced())
}

func TestRequestsCounts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	f.get("/account/list", nil)
	f.get("/Account/List", nil)
	_, _ = f.userSocket()
	md := f.dial(f.fake.MDURL())
	md.authorize(f.md, http.StatusOK)
	for path, n := range map[string]int{
		"auth/accesstokenrequest":     1,
		"/auth/accessTokenRequest":    1,
		"account/list":                2,
		"user/syncrequest":            1,
		"authorize":                   2,
		"websocket":                   1,
		"md/websocket":                1,
		"order/placeorder":            0,
		"/v1/account/list":            2,
		"cashBalance/getcashsnapshot": 0,
	} {
		require.Equal(t, n, f.fake.Requests(path), path)
	}
}

func TestCloseIsIdempotentAndEndsSockets(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	w, _ := f.userSocket()
	md := f.dial(f.fake.MDURL())
	md.authorize(f.md, http.StatusOK)
	require.Equal(t, http.StatusOK, md.request("md/subscribequote", "", symbolBody(esTradovate)).S)
	require.NoError(t, f.fake.Close())
	require.NoError(t, f.fake.Close())
	w.readFails()
	md.readFails()
	_, _, err := f.do(http.MethodGet, "/account/list", f.token, nil)
	require.Error(t, err)
	_, ok := f.fake.AccountID("Sim101")
	require.False(t, ok, "a closed fake answers nothing")
}

func TestSilentClientIsDropped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(o *tradovatefake.Options) { o.ClientSilence = 50 * time.Millisecond })
	f.login()
	w := f.dial(f.fake.UserSocketURL())
	w.authorize(f.token, http.StatusOK)
	w.readFails() // no heartbeat from the client: dropped
}

func TestSocketRateLimitAnswers429(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	f.fake.SocketRateLimit("User/SyncRequest", 1)
	w := f.dial(f.fake.UserSocketURL())
	w.authorize(f.token, http.StatusOK)
	m := w.request("user/syncrequest", "", []byte(`{"splitResponses":true}`))
	require.Equal(t, http.StatusTooManyRequests, m.S)
	require.Empty(t, m.D, "no data and no penalty ticket, as documented")
	m = w.request("user/syncrequest", "", []byte(`{"splitResponses":true}`))
	require.Equal(t, http.StatusOK, m.S, "only the next n")
}

func TestShutdownSockets(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	w, _ := f.userSocket()
	f.fake.ShutdownSockets(tradovatefake.ShutdownIPQuota)
	m := w.message()
	require.Equal(t, tradovatewire.EventShutdown, m.E)
	var d struct {
		ReasonCode string `json:"reasonCode"`
	}
	require.NoError(t, json.Unmarshal(m.D, &d))
	require.Equal(t, tradovatefake.ShutdownIPQuota, d.ReasonCode)
	w.readFails()
}

func TestWithheldContracts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeLimit, 1, 5990, 0)) // ES is named
	f.fake.WithholdContracts(true)
	_, snap := f.userSocket()
	require.Empty(t, snap.Contracts)
	require.NotEmpty(t, snap.Orders)
}
