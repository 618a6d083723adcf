package tradovatewire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRejectCodesPinned(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"AccountClosed":                   "tradovate_account_closed",
		"AdvancedTrailingStopUnsupported": "tradovate_advanced_trailing_stop_unsupported",
		"AnotherCommandPending":           "tradovate_another_command_pending",
		"BackMonthProhibited":             "tradovate_back_month_prohibited",
		"ExecutionProviderNotConfigured":  "tradovate_execution_provider_not_configured",
		"ExecutionProviderUnavailable":    "tradovate_execution_provider_unavailable",
		"InvalidContract":                 "tradovate_invalid_contract",
		"InvalidPrice":                    "tradovate_invalid_price",
		"LiquidationOnly":                 "tradovate_liquidation_only",
		"LiquidationOnlyBeforeExpiration": "tradovate_liquidation_only_before_expiration",
		"MaxOrderQtyIsNotSpecified":       "tradovate_max_order_qty_is_not_specified",
		"MaxOrderQtyLimitReached":         "tradovate_max_order_qty_limit_reached",
		"MaxPosLimitMisconfigured":        "tradovate_max_pos_limit_misconfigured",
		"MaxPosLimitReached":              "tradovate_max_pos_limit_reached",
		"MaxTotalPosLimitReached":         "tradovate_max_total_pos_limit_reached",
		"MultipleAccountPlanRequired":     "tradovate_multiple_account_plan_required",
		"NoQuote":                         "tradovate_no_quote",
		"NotEnoughLiquidity":              "tradovate_not_enough_liquidity",
		"OtherExecutionRelated":           "tradovate_other_execution_related",
		"ParentRejected":                  "tradovate_parent_rejected",
		"RiskCheckTimeout":                "tradovate_risk_check_timeout",
		"SessionClosed":                   "tradovate_session_closed",
		"Success":                         "tradovate_success",
		"TooLate":                         "tradovate_too_late",
		"TradingLocked":                   "tradovate_trading_locked",
		"TrailingStopNonOrderQtyModify":   "tradovate_trailing_stop_non_order_qty_modify",
		"Unauthorized":                    "tradovate_unauthorized",
		"UnknownReason":                   "tradovate_unknown_reason",
		"Unsupported":                     "tradovate_unsupported",
	}
	require.Len(t, FailureReasons, len(want))
	seen := map[string]bool{}
	for _, r := range FailureReasons {
		assert.Equal(t, want[r], RejectCode(r), r)
		s := RejectSentence(r)
		assert.NotEmpty(t, s, r)
		assert.True(t, strings.HasSuffix(s, "."), r)
		assert.False(t, seen[s], "sentence of %s repeats another", r)
		seen[s] = true
	}
}

func TestRejectUnknownReason(t *testing.T) {
	t.Parallel()
	for _, r := range []string{"", "NewReasonFromBroker", "maxPosLimitReached", "<script>"} {
		assert.Equal(t, "tradovate_unknown_reason", RejectCode(r), r)
		assert.Equal(t, RejectSentence("UnknownReason"), RejectSentence(r), r)
		if r != "" {
			assert.NotContains(t, RejectSentence(r), r)
		}
	}
}

func TestParseFrame(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want Frame
		err  bool
	}{
		{"open", "o", Frame{Kind: FrameOpen}, false},
		{"heartbeat", "h", Frame{Kind: FrameHeartbeat}, false},
		{"response", `a[{"s":200,"i":0}]`, Frame{Kind: FrameArray, Messages: []Message{{S: 200, I: 0}}}, false},
		{"response with data", `a[{"s":200,"i":3,"d":{"x":1}}]`,
			Frame{Kind: FrameArray, Messages: []Message{{S: 200, I: 3, D: json.RawMessage(`{"x":1}`)}}}, false},
		{"event and unknown fields", `a[{"e":"props","d":[1],"extra":true}]`,
			Frame{Kind: FrameArray, Messages: []Message{{E: "props", D: json.RawMessage(`[1]`)}}}, false},
		{"close", `c[1000,"bye"]`, Frame{Kind: FrameClose, CloseCode: 1000, CloseReason: "bye"}, false},
		{"close without reason", `c[3000]`, Frame{Kind: FrameClose, CloseCode: 3000}, false},
		{"empty", "", Frame{}, true},
		{"unknown letter", "x", Frame{}, true},
		{"array not json", "a[{", Frame{}, true},
		{"open with tail", "ojunk", Frame{}, true},
		{"close empty", "c[]", Frame{}, true},
		{"close code not number", `c["a"]`, Frame{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseFrame([]byte(tt.in))
			if tt.err {
				require.ErrorIs(t, err, ErrMalformedFrame)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestFormatServerFramesRoundTrip(t *testing.T) {
	t.Parallel()
	resp, err := Response(7, 200, map[string]int{"orderId": 5})
	require.NoError(t, err)
	ev, err := Event(EventProps, PropsEvent{EntityType: EntityOrder, EventType: EventCreated, Entity: json.RawMessage(`{"id":5}`)})
	require.NoError(t, err)
	auth, err := Response(0, 200, nil)
	require.NoError(t, err)
	b, err := FormatMessages(auth, resp, ev)
	require.NoError(t, err)
	assert.Equal(t, `a[{"s":200,"i":0},{"s":200,"i":7,"d":{"orderId":5}},{"e":"props","d":{"entityType":"order","eventType":"Created","entity":{"id":5}}}]`, string(b))
	f, err := ParseFrame(b)
	require.NoError(t, err)
	require.Len(t, f.Messages, 3)
	assert.False(t, f.Messages[1].IsEvent())
	assert.True(t, f.Messages[2].IsEvent())
	var pe PropsEvent
	require.NoError(t, json.Unmarshal(f.Messages[2].D, &pe))
	assert.Equal(t, EntityOrder, pe.EntityType)

	c, err := ParseFrame(FormatClose(1000, `say "bye"`))
	require.NoError(t, err)
	assert.Equal(t, Frame{Kind: FrameClose, CloseCode: 1000, CloseReason: `say "bye"`}, c)
	assert.Equal(t, "o", string(FormatOpen()))
	assert.Equal(t, "h", string(FormatHeartbeat()))
	empty, err := FormatMessages()
	require.NoError(t, err)
	assert.Equal(t, "a[]", string(empty))
}

func TestRequestCodec(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "authorize\n0\n\ntok", string(FormatRequest(Authorize("tok"))))
	body := []byte(`{"users":[1]}`)
	b := FormatRequest(Request{Endpoint: "user/syncrequest", ID: 4, Body: body})
	assert.Equal(t, "user/syncrequest\n4\n\n{\"users\":[1]}", string(b))
	r, err := ParseRequest(b)
	require.NoError(t, err)
	assert.Equal(t, Request{Endpoint: "user/syncrequest", ID: 4, Body: body}, r)

	r, err = ParseRequest([]byte("md/getchart\n9\na=1\n{\"x\":\"a\nb\"}"))
	require.NoError(t, err)
	assert.Equal(t, "a=1", r.Query)
	assert.Equal(t, "{\"x\":\"a\nb\"}", string(r.Body))
	r, err = ParseRequest([]byte("order/list\n2"))
	require.NoError(t, err)
	assert.Equal(t, Request{Endpoint: "order/list", ID: 2}, r)

	for _, bad := range []string{"", "[]", "x", "\n1\n\n", "a b\n1\n\n", "x\n-1\n\n", "x\nz\n\n"} {
		_, err := ParseRequest([]byte(bad))
		assert.ErrorIs(t, err, ErrMalformedFrame, "%q", bad)
	}
	assert.True(t, IsClientHeartbeat([]byte("[]")))
	assert.False(t, IsClientHeartbeat([]byte("authorize\n0\n\n[]")))
}

func TestDecodeIgnoresUnknownFields(t *testing.T) {
	t.Parallel()
	var r AccessTokenResponse
	require.NoError(t, json.Unmarshal([]byte(`{"accessToken":"a","mdAccessToken":"m","expirationTime":"2026-11-18T16:20:00.000Z","userId":7,"hasSimPlus":true,"newField":{"x":1}}`), &r))
	exp, ok := r.Expires()
	require.True(t, ok)
	assert.Equal(t, 2026, exp.Year())
	assert.Equal(t, int64(7), r.UserID)
	_, ok = AccessTokenResponse{}.Expires()
	assert.False(t, ok)

	var p AccessTokenResponse
	require.NoError(t, json.Unmarshal([]byte(`{"p-ticket":"T","p-time":15,"p-captcha":false}`), &p))
	assert.Equal(t, AccessTokenResponse{PTicket: "T", PTime: 15}, p)

	req, err := json.Marshal(AccessTokenRequest{Name: "n", PTicket: "T", CID: 3})
	require.NoError(t, err)
	assert.Contains(t, string(req), `"p-ticket":"T"`)
	assert.Contains(t, string(req), `"cid":3`)
	req, err = json.Marshal(AccessTokenRequest{Name: "n"})
	require.NoError(t, err)
	assert.NotContains(t, string(req), "p-ticket")
}

func TestPlaceOCOFlattens(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(PlaceOCORequest{
		PlaceOrderRequest: PlaceOrderRequest{AccountSpec: "u", AccountID: 1, Action: ActionSell, Symbol: "ESZ6", OrderQty: 1, OrderType: OrderTypeLimit, Price: 10, IsAutomated: true},
		Other:             OtherOrder{Action: ActionSell, OrderType: OrderTypeStop, StopPrice: 5},
	})
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Equal(t, "ESZ6", m["symbol"])
	assert.Equal(t, map[string]any{"action": "Sell", "orderType": "Stop", "stopPrice": 5.0}, m["other"])
	assert.NotContains(t, m, "stopPrice")
}

// A trailing order's pegDifference is its distance signed for its action:
// below the market for a Sell, above for a Buy; orders without a trail
// send none.
func TestPegDifference(t *testing.T) {
	t.Parallel()
	assert.Equal(t, -4.0, PegDifference(ActionSell, 4))
	assert.Equal(t, 2.5, PegDifference(ActionBuy, 2.5))
	b, err := json.Marshal(PlaceOrderRequest{Action: ActionSell, Symbol: "ESZ6", OrderQty: 1, OrderType: OrderTypeTrailingStop,
		StopPrice: 5996, PegDifference: PegDifference(ActionSell, 4), IsAutomated: true})
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Equal(t, -4.0, m["pegDifference"])
	assert.Equal(t, "TrailingStop", m["orderType"])
	b, err = json.Marshal(PlaceOrderRequest{Action: ActionSell, OrderType: OrderTypeStop, StopPrice: 5996})
	require.NoError(t, err)
	assert.NotContains(t, string(b), "pegDifference")
	var v OrderVersion
	require.NoError(t, json.Unmarshal([]byte(`{"id":1,"orderId":2,"orderQty":1,"orderType":"TrailingStop","stopPrice":6006,"pegDifference":-4}`), &v))
	assert.Equal(t, OrderVersion{ID: 1, OrderID: 2, OrderQty: 1, OrderType: OrderTypeTrailingStop, StopPrice: 6006, PegDifference: -4}, v)
}

func TestParseTime(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"2026-11-18T15:00:00.123Z", "2026-11-18T15:00:00Z", "2026-11-18T10:00:00-05:00"} {
		tm, ok := ParseTime(s)
		require.True(t, ok, s)
		assert.Equal(t, 15, tm.UTC().Hour())
	}
	_, ok := ParseTime("")
	assert.False(t, ok)
	tm, _ := ParseTime("2026-11-18T15:00:00.1Z")
	assert.Equal(t, "2026-11-18T15:00:00.100Z", FormatTime(tm))
}

func TestMessageMarshalRejectsBadData(t *testing.T) {
	t.Parallel()
	_, err := json.Marshal(Message{S: 200, D: json.RawMessage("{")})
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrMalformedFrame) || strings.Contains(err.Error(), "malformed"))
}

func TestFillFeeTotal(t *testing.T) {
	t.Parallel()
	var f FillFee
	require.NoError(t, json.Unmarshal([]byte(`{"id":7,"commission":1.0,"clearingFee":0.1,"exchangeFee":0.2,"nfaFee":0.02,"brokerageFee":0.3,"ipFee":9}`), &f))
	assert.InDelta(t, 1.62, f.Total(), 1e-9)
}

func TestCommandAnswers(t *testing.T) {
	t.Parallel()
	require.False(t, CommandResponse{CommandID: 1}.Failed())
	require.False(t, CommandResponse{CommandID: 1, FailureReason: "Success"}.Failed(), "Success is no failure")
	require.True(t, CommandResponse{FailureReason: "TooLate"}.Failed())
	require.True(t, CommandResponse{ErrorText: "Access is denied"}.Failed())
	require.True(t, CommandReport{CommandStatus: CommandRiskRejected}.Rejected())
	require.True(t, CommandReport{CommandStatus: CommandExecutionRejected}.Rejected())
	require.False(t, CommandReport{CommandStatus: "RiskPassed"}.Rejected())
}
