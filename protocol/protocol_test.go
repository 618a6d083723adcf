package protocol

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The type ids, close codes and error codes are the wire contract; a change
// here breaks every deployed agent.
func TestWireConstantsPinned(t *testing.T) {
	require.Equal(t, 8, ProtocolVersion)
	require.Equal(t, 8, ProfitFloorProtocolVersion)
	require.Equal(t, 7, ExitsProtocolVersion)
	require.Equal(t, 6, ActivityProtocolVersion)
	require.Equal(t, 5, DiagnosticsProtocolVersion)
	require.Equal(t, 1, MinProtocolVersion)
	require.Equal(t, 2, ConfigProtocolVersion)
	require.Equal(t, "tradebridge.tunnel.v1", Subprotocol(1))
	for typ, id := range map[Type]uint8{
		TypeHello: 1, TypeWelcome: 2, TypeRequest: 3, TypeResponse: 4, TypeCancel: 5, TypeEvent: 6,
	} {
		require.Equal(t, id, uint8(typ), typ.String())
	}
	require.Equal(t, 4001, CloseReplaced)
	require.Equal(t, 4002, CloseVersionUnsupported)
	require.Equal(t, 4003, CloseBadHandshake)
	require.Equal(t, 4004, CloseFrameTooLarge)
	require.Equal(t, 4005, CloseProtocolError)
	require.Equal(t, 4006, CloseShuttingDown)
	require.Equal(t, 4007, CloseRevoked)
	require.Equal(t, []string{
		"invalid_argument", "missing_required_fields", "invalid_instrument",
		"account_not_found", "order_not_found", "strategy_not_found",
		"atm_template_not_found", "no_position", "order_rejected",
		"position_owned", "market_position_mismatch", "max_positions_reached",
		"strategy_terminal", "trading_blocked", "unknown_function",
		"request_in_progress", "deadline_exceeded", "cancelled",
		"platform_unavailable", "internal_error",
		"position_not_flat", "resync_limit_exceeded", "outcome_unknown",
		"not_supported",
	}, Codes)
	require.Len(t, Functions, 36)
	require.Equal(t, "CancelReplace", FnCancelReplace)
	for _, f := range append(Functions, InternalFunctions...) {
		got, ok := LookupFunction(f.Name)
		require.True(t, ok)
		require.Equal(t, f, got)
	}
	require.Equal(t, "SetSubscriptions", FnSetSubscriptions)
	require.Equal(t, "GetPnl", FnGetPnl)
	require.Equal(t, "ApplyConfig", FnApplyConfig)
	require.Equal(t, "CheckMonitorRestart", FnCheckMonitorRestart)
	require.Equal(t, "Diagnostics", FnDiagnostics)
	require.Equal(t, "diagnostics", EventDiagnostics)
	for _, f := range InternalFunctions {
		require.True(t, f.Internal)
		require.False(t, f.Write)
	}
	for _, f := range Functions {
		require.False(t, f.Internal)
	}
	for kind, want := range map[string]string{
		EventOrder: "order", EventExecution: "execution", EventPosition: "position",
		EventAccount: "account", EventQuote: "quote", EventStrategy: "strategy",
		EventMonitorState: "monitorState", EventCopierState: "copierState", EventConnections: "connections",
	} {
		require.Equal(t, want, kind)
	}
}

func TestSubprotocol(t *testing.T) {
	for _, tc := range []struct {
		in string
		v  int
		ok bool
	}{
		{"tradebridge.tunnel.v1", 1, true},
		{"tradebridge.tunnel.v12", 12, true},
		{"tradebridge.tunnel.v", 0, false},
		{"tradebridge.tunnel.v0", 0, false},
		{"tradebridge.tunnel.v1x", 0, false},
		{"tradebridge.tunnel.v01", 0, false}, // one spelling per version
		{"other.v1", 0, false},
		{"tradebridge.tunnel.v99999999999999999999", 0, false},
	} {
		v, ok := ParseSubprotocol(tc.in)
		require.Equal(t, tc.ok, ok, tc.in)
		require.Equal(t, tc.v, v, tc.in)
	}
}

func TestCloseReasons(t *testing.T) {
	for code := CloseReplaced; code <= CloseRevoked; code++ {
		require.NotEmpty(t, CloseReason(code))
	}
	require.Empty(t, CloseReason(1000))
}

func TestErrorIs(t *testing.T) {
	err := error(NewError(CodeNoPosition, "no position in ES 12-26"))
	require.True(t, errors.Is(err, &Error{Code: CodeNoPosition}))
	require.False(t, errors.Is(err, &Error{Code: CodeOrderRejected}))
	require.Equal(t, "no_position: no position in ES 12-26", err.Error())
}

func ptr[T any](v T) *T { return &v }

// goldenFrames are one frame of every type, as a peer must encode them.
var goldenFrames = []struct {
	name string
	typ  Type
	v    any
}{
	{"hello", TypeHello, Hello{ProtocolVersion: 1, AgentVersion: "0.1.0", Platform: "sim",
		Connections: []Connection{{Name: "Simulator", Status: "Connected", Accounts: []string{"Sim101", "Sim102"}}}}},
	{"welcome", TypeWelcome, Welcome{ProtocolVersion: 1, SessionID: "tun_0123456789abcdef01234567"}},
	{"request", TypeRequest, Request{ID: 7, Fn: FnPlaceOrder, TimeoutMs: 30000, RequestID: "order:my-1", Trace: "req-0123456789abcdef",
		Args: []byte(`{"account":"Sim101","action":"Buy","instrument":"ES 12-26","orderType":"Limit","quantity":2,"limitPrice":6800.25,"timeInForce":"Day"}`)}},
	{"response_result", TypeResponse, Response{ID: 7, Result: []byte(`{"orderId":"sim-1"}`)}},
	{"response_error", TypeResponse, Response{ID: 8, Error: NewError(CodeNoPosition, "no open position in the instrument")}},
	{"cancel", TypeCancel, Cancel{ID: 7}},
	{"event", TypeEvent, Event{Seq: 1, Kind: EventPosition, Data: []byte(`{"account":"Sim101","instrument":"ES 12-26","marketPosition":"Long","quantity":2}`)}},
}

func TestGoldenFrames(t *testing.T) {
	for _, g := range goldenFrames {
		t.Run(g.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, NewWriter(&buf).WriteFrame(g.typ, g.v))
			path := filepath.Join("testdata", "frames", g.name+".hex")
			got := hex.Dump(buf.Bytes())
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./protocol -update to create golden files")
			require.Equal(t, string(want), got)

			typ, payload, err := NewReader(&buf, 0).ReadFrame()
			require.NoError(t, err)
			require.Equal(t, g.typ, typ)
			require.True(t, strings.HasPrefix(string(payload), "{"))
		})
	}
}

func TestReaderRefusesOversizedAndUnknown(t *testing.T) {
	hdr := []byte{0x00, 0x40, 0x00, 0x01, byte(TypeRequest)} // 4 MiB + 1
	_, _, err := NewReader(bytes.NewReader(hdr), 0).ReadFrame()
	require.ErrorIs(t, err, ErrFrameTooLarge)

	small := []byte{0, 0, 0, 10, byte(TypeEvent)}
	_, _, err = NewReader(bytes.NewReader(small), 8).ReadFrame()
	require.ErrorIs(t, err, ErrFrameTooLarge)

	unknown := []byte{0, 0, 0, 2, 99, '{', '}'}
	_, _, err = NewReader(bytes.NewReader(unknown), 0).ReadFrame()
	require.ErrorIs(t, err, ErrMalformedFrame)

	truncated := []byte{0, 0, 0, 10, byte(TypeEvent), '{'}
	_, _, err = NewReader(bytes.NewReader(truncated), 0).ReadFrame()
	require.Error(t, err)

	_, err = AppendFrame(nil, TypeEvent, make([]byte, MaxFrameSize+1))
	require.ErrorIs(t, err, ErrFrameTooLarge)
}

func TestDecodeMalformed(t *testing.T) {
	var r Request
	require.ErrorIs(t, Decode([]byte(`{"id":"x"}`), &r), ErrMalformedFrame)
	require.NoError(t, Decode([]byte(`{"id":3,"fn":"ListAccounts","future":true}`), &r))
	require.Equal(t, uint64(3), r.ID)
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		f    func(string) (string, bool)
		in   string
		want string
	}{
		{NormalizeAction, "BUY", ActionBuy},
		{NormalizeAction, "sell", ActionSell},
		{NormalizeOrderType, "STOPMARKET", OrderTypeStopMarket},
		{NormalizeOrderType, "limit", OrderTypeLimit},
		{NormalizeOrderType, "trailingstop", OrderTypeTrailingStop},
		{NormalizeOrderType, "TRAILINGSTOPLIMIT", OrderTypeTrailingStopLimit},
		{NormalizeOrderType, "Trailing", ""},
		{NormalizeTimeInForce, "GTC", TimeInForceGtc},
		{NormalizeTimeInForce, "day", TimeInForceDay},
		{NormalizeAction, "hold", ""},
		{NormalizeOrderType, "Stop", ""},
	} {
		got, ok := tc.f(tc.in)
		require.Equal(t, tc.want, got, tc.in)
		require.Equal(t, tc.want != "", ok, tc.in)
	}
	require.True(t, TerminalOrderState(OrderStateFilled))
	require.False(t, TerminalOrderState(OrderStateWorking))
	_ = ptr(1)
}

// The order types are wire values bot authors send and read; the trailing
// ones are the broker family's (never sent to an agent, so the tunnel
// protocol's version did not move for them).
func TestOrderTypesPinned(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"Market", "Limit", "StopMarket", "StopLimit", "TrailingStop", "TrailingStopLimit"},
		[]string{OrderTypeMarket, OrderTypeLimit, OrderTypeStopMarket, OrderTypeStopLimit, OrderTypeTrailingStop, OrderTypeTrailingStopLimit})
	for _, tc := range []struct {
		typ      string
		trailing bool
	}{
		{OrderTypeMarket, false}, {OrderTypeLimit, false}, {OrderTypeStopMarket, false}, {OrderTypeStopLimit, false},
		{OrderTypeTrailingStop, true}, {OrderTypeTrailingStopLimit, true}, {"trailingstop", false}, {"", false},
	} {
		require.Equal(t, tc.trailing, TrailingOrderType(tc.typ), tc.typ)
	}
	for typ, want := range map[string]OrderPrices{
		OrderTypeMarket:            {},
		OrderTypeLimit:             {Limit: true},
		OrderTypeStopMarket:        {Stop: true},
		OrderTypeStopLimit:         {Limit: true, Stop: true},
		OrderTypeTrailingStop:      {TrailDistance: true},
		OrderTypeTrailingStopLimit: {Limit: true, Stop: true, TrailDistance: true},
		"limit":                    {},
		"":                         {},
	} {
		require.Equal(t, want, OrderPricesOf(typ), typ)
	}
	// trailDistance is written only when set: the records of platforms
	// without trailing orders read as before.
	raw, err := json.Marshal(Order{OrderID: "o1"})
	require.NoError(t, err)
	require.NotContains(t, string(raw), "trailDistance")
	raw, err = json.Marshal(Order{OrderID: "o1", OrderType: OrderTypeTrailingStop, TrailDistance: 2.5})
	require.NoError(t, err)
	require.Contains(t, string(raw), `"trailDistance":2.5`)
	raw, err = json.Marshal(PlaceOrderArgs{})
	require.NoError(t, err)
	require.NotContains(t, string(raw), "trailDistance")
}
