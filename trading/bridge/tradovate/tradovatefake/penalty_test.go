package tradovatefake_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge/tradovate/tradovatefake"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// ticketBody is a penalty ticket answer.
type ticketBody struct {
	Ticket string `json:"p-ticket"`
	Time   int    `json:"p-time"`
}

func TestPenalizeNextAnyEndpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	id := f.place(f.order("Buy", "Limit", 1, 5990, 0))
	f.fake.PenalizeNext("/order/cancelorder", 1, 2*time.Second)

	var tk ticketBody
	require.Equal(t, http.StatusOK, f.post("/order/cancelorder", tradovatewire.CancelOrderRequest{OrderID: id,
		IsAutomated: true}, &tk), "a ticket is HTTP 200")
	require.NotEmpty(t, tk.Ticket)
	assert.Equal(t, 2, tk.Time)
	assert.Equal(t, tradovatewire.StatusWorking, f.orders()[id].OrdStatus, "a ticketed request is not handled")

	// Resent before p-time: the same ticket, the time that remains.
	f.auth.Advance(time.Second)
	body := map[string]any{"orderId": id, "isAutomated": true, "p-ticket": tk.Ticket}
	var again ticketBody
	require.Equal(t, http.StatusOK, f.post("/order/cancelorder", body, &again))
	assert.Equal(t, ticketBody{Ticket: tk.Ticket, Time: 1}, again)
	assert.Equal(t, tradovatewire.StatusWorking, f.orders()[id].OrdStatus)

	// Resent after p-time: handled.
	f.auth.Advance(time.Second)
	var res tradovatewire.CommandResponse
	require.Equal(t, http.StatusOK, f.post("/order/cancelorder", body, &res))
	assert.NotZero(t, res.CommandID)
	assert.Equal(t, tradovatewire.StatusCanceled, f.orders()[id].OrdStatus)
	assert.Equal(t, 1, f.fake.Tickets("/order/cancelorder"))
	assert.Equal(t, 1, f.fake.TicketedHandled("/order/cancelorder"))
}

func TestPenaltyTicketOnAReadWithoutBody(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	f.fake.PenalizeNext("contract/find", 1, time.Second)
	var tk ticketBody
	require.Equal(t, http.StatusOK, f.get("/contract/find?name="+esTradovate, &tk))
	require.NotEmpty(t, tk.Ticket)
	f.auth.Advance(time.Second)
	var c tradovatewire.Contract
	require.Equal(t, http.StatusOK, f.get("/contract/find?name="+esTradovate+"&p-ticket="+tk.Ticket, &c))
	assert.Equal(t, esTradovate, c.Name)
}

// Requests are counted per client address, whatever the login: the
// requests of two logins share one budget.
func TestPenaltyTicketsPerAddressAcrossLogins(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(o *tradovatefake.Options) {
		o.AddressLimit, o.AddressWindow, o.AddressPenalty = 4, time.Minute, 3*time.Second
	})
	first := f.login().AccessToken
	second := f.login().AccessToken // 2 requests counted
	require.NotEqual(t, first, second)
	require.Equal(t, http.StatusOK, f.call(http.MethodGet, "/account/list", first, nil, nil))
	require.Equal(t, http.StatusOK, f.call(http.MethodGet, "/account/list", second, nil, nil))
	var tk ticketBody
	require.Equal(t, http.StatusOK, f.call(http.MethodGet, "/account/list", first, nil, &tk))
	require.NotEmpty(t, tk.Ticket, "the fifth request of the address in a minute")
	assert.Equal(t, 3, tk.Time)
	var other ticketBody
	require.Equal(t, http.StatusOK, f.call(http.MethodGet, "/account/list", second, nil, &other))
	require.NotEmpty(t, other.Ticket, "the other login too")

	f.auth.Advance(3 * time.Second)
	var accts []tradovatewire.Account
	require.Equal(t, http.StatusOK, f.call(http.MethodGet, "/account/list?p-ticket="+tk.Ticket, first, nil, &accts))
	assert.NotEmpty(t, accts, "the ticketed resend is handled, and not counted")
	f.auth.Advance(time.Minute)
	require.Equal(t, http.StatusOK, f.call(http.MethodGet, "/account/list", first, nil, &accts))
	assert.NotEmpty(t, accts, "a new window")
	assert.Equal(t, 2, f.fake.Tickets("/account/list"))
}
