package alertcmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tradebridge/protocol"
)

var update = flag.Bool("update", false, "rewrite testdata/alerts.golden")

// goldenEntry is one case of testdata/alerts.golden: the alert as sent,
// what Parse read (or its error, with whether the key was read), the
// calls planned, and the text the history keeps.
type goldenEntry struct {
	Name        string     `json:"name"`
	ContentType string     `json:"contentType,omitempty"`
	Body        string     `json:"body"`
	Alert       *alertView `json:"alert,omitempty"`
	Error       *errorView `json:"error,omitempty"`
	Calls       []callView `json:"calls,omitempty"`
	Redacted    string     `json:"redacted"`
}

type errorView struct {
	Field   string `json:"field"`
	Detail  string `json:"detail"`
	KeyRead bool   `json:"keyRead"`
	// Command and Accounts are what the history records of a failed
	// alert, when they read.
	Command  string   `json:"command,omitempty"`
	Accounts []string `json:"accounts,omitempty"`
}

type callView struct {
	Account string          `json:"account"`
	Fn      string          `json:"fn"`
	Args    json.RawMessage `json:"args"`
	Opens   bool            `json:"opens,omitempty"`
	Exits   bool            `json:"exits,omitempty"`
}

// alertView is an Alert in the language's words, for the golden file.
type alertView struct {
	Key                   bool     `json:"key"`
	Command               string   `json:"command,omitempty"`
	Destination           string   `json:"destination,omitempty"`
	Accounts              []string `json:"accounts,omitempty"`
	Instrument            string   `json:"instrument,omitempty"`
	Action                string   `json:"action,omitempty"`
	Qty                   *int     `json:"qty,omitempty"`
	QtyPercent            *float64 `json:"qtyPercent,omitempty"`
	OrderType             string   `json:"orderType,omitempty"`
	TIF                   string   `json:"tif,omitempty"`
	LimitPrice            string   `json:"limitPrice,omitempty"`
	StopPrice             string   `json:"stopPrice,omitempty"`
	OrderID               string   `json:"orderId,omitempty"`
	StrategyID            string   `json:"strategyId,omitempty"`
	StrategyTag           string   `json:"strategyTag,omitempty"`
	FlattenFirst          bool     `json:"flattenFirst,omitempty"`
	RequireMarketPosition string   `json:"requireMarketPosition,omitempty"`
	MaxPositions          *int     `json:"maxPositions,omitempty"`
	TakeProfit            string   `json:"takeProfit,omitempty"`
	StopLoss              string   `json:"stopLoss,omitempty"`
	StopLossLimit         string   `json:"stopLossLimit,omitempty"`
	StopLossStop          string   `json:"stopLossStop,omitempty"`
	ATM                   string   `json:"atm,omitempty"`
	CancelAfter           string   `json:"cancelAfter,omitempty"`
	Delay                 string   `json:"delay,omitempty"`
	ID                    string   `json:"id,omitempty"`
	RateLimit             string   `json:"rateLimit,omitempty"`
	KillSwitch            *bool    `json:"killSwitch,omitempty"`
	StartTime             string   `json:"startTime,omitempty"`
	EndTime               string   `json:"endTime,omitempty"`
	ClosingOnlyAfter      string   `json:"closingOnlyAfter,omitempty"`
	BypassWindows         bool     `json:"bypassWindows,omitempty"`
}

func price(p *Price) string {
	if p == nil {
		return ""
	}
	return p.String()
}

func clock(t *ClockTime) string {
	if t == nil {
		return ""
	}
	return t.String()
}

func dur(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func viewOf(a Alert) *alertView {
	v := &alertView{Key: a.Key == testKey, Command: a.Command, Destination: a.Destination, Accounts: a.Accounts,
		Instrument: a.Instrument, Action: a.Action, Qty: a.Qty, QtyPercent: a.QtyPercent, OrderType: a.OrderType,
		TIF: a.TIF, LimitPrice: price(a.LimitPrice), StopPrice: price(a.StopPrice), OrderID: a.OrderID,
		StrategyID: a.StrategyID, StrategyTag: a.StrategyTag, FlattenFirst: a.FlattenFirst,
		RequireMarketPosition: a.RequireMarketPosition, MaxPositions: a.MaxPositions,
		TakeProfit: price(a.TakeProfit), StopLoss: price(a.StopLoss), StopLossLimit: price(a.StopLossLimit),
		StopLossStop: price(a.StopLossStop), ATM: a.ATM, CancelAfter: dur(a.CancelAfter), Delay: dur(a.Delay),
		ID: a.ID, KillSwitch: a.KillSwitch, StartTime: clock(a.StartTime), EndTime: clock(a.EndTime),
		ClosingOnlyAfter: clock(a.ClosingOnlyAfter), BypassWindows: a.BypassWindows}
	if a.RateLimit != nil {
		v.RateLimit = itoa(a.RateLimit.N) + " per " + a.RateLimit.Per.String()
	}
	return v
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func entryOf(t *testing.T, c alertCase) goldenEntry {
	t.Helper()
	e := goldenEntry{Name: c.name, ContentType: c.contentType, Body: c.body,
		Redacted: Redact([]byte(c.body), c.contentType)}
	a, err := Parse([]byte(c.body), c.contentType)
	if err != nil {
		var pe *Error
		if !errors.As(err, &pe) {
			t.Fatalf("%s: error %T, want *Error", c.name, err)
		}
		e.Error = &errorView{Field: pe.Field, Detail: pe.Detail, KeyRead: a.Key == testKey,
			Command: a.Command, Accounts: a.Accounts}
		return e
	}
	e.Alert = viewOf(a)
	calls, err := a.Calls()
	if err != nil {
		t.Fatalf("%s: Calls of a parsed alert: %v", c.name, err)
	}
	for _, cl := range calls {
		e.Calls = append(e.Calls, callView{Account: cl.Account, Fn: cl.Fn, Args: cl.Args, Opens: cl.Opens, Exits: cl.Exits})
	}
	return e
}

// TestGolden parses every alert of the table and compares what it read,
// planned and redacted with testdata/alerts.golden (-update rewrites it).
func TestGolden(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	var entries []goldenEntry
	for _, c := range alertCases {
		if names[c.name] {
			t.Fatalf("case %s twice", c.name)
		}
		names[c.name] = true
		entries = append(entries, entryOf(t, c))
	}
	got, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "alerts.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the parser reads now; run go test -run TestGolden -update and review the diff", path)
	}
}

// TestGoldenInvariants checks what holds for every alert of the table:
// the key never survives Redact, an error never repeats the key, a
// parsed alert's calls use known functions with arguments of the
// protocol's types.
func TestGoldenInvariants(t *testing.T) {
	t.Parallel()
	for _, c := range alertCases {
		red := Redact([]byte(c.body), c.contentType)
		if strings.Contains(red, testKey) {
			t.Errorf("%s: the redacted text holds the key: %q", c.name, red)
		}
		if a, _ := Parse([]byte(red), c.contentType); a.Key != "" {
			t.Errorf("%s: the redacted text still parses with a key", c.name)
		}
		a, err := Parse([]byte(c.body), c.contentType)
		if err != nil {
			if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), "Sim101") {
				t.Errorf("%s: the error repeats a value: %v", c.name, err)
			}
			if !strings.HasPrefix(c.name, "err_") {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if strings.HasPrefix(c.name, "err_") {
			t.Errorf("%s: parsed, want an error", c.name)
		}
		calls, err := a.Calls()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, cl := range calls {
			if _, ok := protocol.LookupFunction(cl.Fn); !ok {
				t.Errorf("%s: unknown function %s", c.name, cl.Fn)
			}
			checkArgs(t, c.name, cl)
		}
	}
}

// checkArgs decodes a call's arguments into the protocol type of its
// function, refusing fields the type does not have.
func checkArgs(t *testing.T, name string, c Call) {
	t.Helper()
	var v any
	switch c.Fn {
	case protocol.FnPlaceOrder, protocol.FnFlatPlace:
		v = &protocol.PlaceOrderArgs{}
	case protocol.FnCancelReplace:
		v = &protocol.CancelReplaceArgs{}
	case protocol.FnClosePosition:
		v = &protocol.ClosePositionArgs{}
	case protocol.FnReverse:
		v = &protocol.ReverseArgs{}
	case protocol.FnReversePosition:
		v = &protocol.ReversePositionArgs{}
	case protocol.FnFlatten:
		v = &protocol.FlattenArgs{}
	case protocol.FnFlattenEverything, protocol.FnCancelAllOrders:
		v = &protocol.NoArgs{}
	case protocol.FnCancelOrder:
		v = &protocol.OrderArgs{}
	case protocol.FnCancelOrders:
		v = &protocol.CancelOrdersArgs{}
	case protocol.FnChangeOrder:
		v = &protocol.ChangeOrderArgs{}
	case protocol.FnCancelAndBracket:
		v = &protocol.CancelAndBracketArgs{}
	case protocol.FnCloseStrategy:
		v = &protocol.CloseStrategyArgs{}
	default:
		t.Errorf("%s: no argument type for %s", name, c.Fn)
		return
	}
	dec := json.NewDecoder(bytes.NewReader(c.Args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Errorf("%s: %s arguments: %v", name, c.Fn, err)
	}
}

// TestBodyLimit refuses a body over MaxBody without reading a key.
func TestBodyLimit(t *testing.T) {
	t.Parallel()
	body := "key=" + testKey + ";command=FLATTEN;account=Sim101;" + strings.Repeat("\n", MaxBody)
	a, err := Parse([]byte(body), ctText)
	var pe *Error
	if !errors.As(err, &pe) || pe.Detail != "the alert is longer than 64 KiB" || a.Key != "" {
		t.Fatalf("Parse of %d bytes = %+v, %v", len(body), a, err)
	}
	if _, err := Parse([]byte(body[:MaxBody]), ctText); err != nil {
		t.Fatalf("Parse of MaxBody bytes: %v", err)
	}
}

// TestAccountsLimit refuses more than MaxAccounts accounts.
func TestAccountsLimit(t *testing.T) {
	t.Parallel()
	var names []string
	for i := range MaxAccounts + 1 {
		names = append(names, "Sim"+itoa(100+i))
	}
	body := "key=" + testKey + ";command=FLATTEN;account=" + strings.Join(names[:MaxAccounts], ",")
	a, err := Parse([]byte(body), "")
	if err != nil || len(a.Accounts) != MaxAccounts {
		t.Fatalf("%d accounts: %v", MaxAccounts, err)
	}
	calls, err := a.Calls()
	if err != nil || len(calls) != MaxAccounts || calls[3].Account != names[3] {
		t.Fatalf("calls: %v", err)
	}
	_, err = Parse([]byte(body+","+names[MaxAccounts]), "")
	if err == nil || !strings.Contains(err.Error(), "more than 20 accounts") {
		t.Fatalf("%d accounts: %v", MaxAccounts+1, err)
	}
}

// TestCallsOfHandBuiltAlert applies Parse's rules to an Alert built in
// code.
func TestCallsOfHandBuiltAlert(t *testing.T) {
	t.Parallel()
	qty := 1
	tests := []struct {
		name string
		a    Alert
		err  string
		fn   string
	}{
		{"flatplace defaults", Alert{Key: "k", Command: CmdFlatPlace, Accounts: []string{"A"}, Instrument: "ES",
			Action: protocol.ActionBuy, Qty: &qty}, "", protocol.FnFlatPlace},
		{"missing instrument", Alert{Key: "k", Command: CmdPlace, Accounts: []string{"A"}, Action: protocol.ActionBuy,
			Qty: &qty, OrderType: protocol.OrderTypeMarket, TIF: protocol.TimeInForceDay}, "missing required field: instrument", ""},
		{"unknown command", Alert{Key: "k", Command: "BUY", Accounts: []string{"A"}}, "command must be one of", ""},
		{"price with both", Alert{Key: "k", Command: CmdChange, Accounts: []string{"A"}, OrderID: "1",
			LimitPrice: &Price{}}, "limit_price must be a price or a distance", ""},
		{"kill switch", Alert{Key: "k", KillSwitch: new(bool)}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			calls, err := tt.a.Calls()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.fn == "" {
				if len(calls) != 0 {
					t.Fatalf("calls = %v", calls)
				}
				return
			}
			if len(calls) != 1 || calls[0].Fn != tt.fn {
				t.Fatalf("calls = %v", calls)
			}
		})
	}
}

// TestRedact covers bodies the parser refuses: the key never survives.
func TestRedact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, ct, body, want string
	}{
		{"text", ctText, "key=abc123;command=FLATTEN", "key=;command=FLATTEN"},
		{"text spaces", ctText, " KEY = abc123 ;\r\naccount=Sim101", " KEY =;\r\naccount=Sim101"},
		{"text colon", "", "key: abc123\ncommand=FLATTEN", "key:\ncommand=FLATTEN"},
		{"text not a word", "", "apikey=1;key=abc", "apikey=1;key="},
		{"text two keys", "", "key=a1;key=b2", "key=;key="},
		{"json", ctJSON, `{"key": "abc123", "command": "FLATTEN"}`, `{"key": "", "command": "FLATTEN"}`},
		{"json escaped name", ctJSON, `{"k\u0065y":"abc123"}`, `{"k\u0065y":""}`},
		{"json nested", ctJSON, `{"a":{"KEY":"abc123"},"key":["x"]}`, `{"a":{"KEY":""},"key":""}`},
		{"json number", ctJSON, `{"key":12345}`, `{"key":""}`},
		{"json array of alerts", ctJSON, `[{"key":"abc"},{"key":"def"}]`, `[{"key":""},{"key":""}]`},
		{"json broken", ctJSON, `{"key":"abc123","command":`, `{"key":`},
		{"json broken lines", ctJSON, "{\"key\" : \"abc123\",\n\"command\":", "{\"key\" :\n\"command\":"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Redact([]byte(tt.body), tt.ct); got != tt.want {
				t.Fatalf("Redact(%q) = %q, want %q", tt.body, got, tt.want)
			}
		})
	}
}

// BenchmarkParse measures Parse and Calls of a bracketed PLACE on two
// accounts, the door's share of an alert's latency.
func BenchmarkParse(b *testing.B) {
	body := []byte("key=" + testKey + ";\ncommand=PLACE;\naccount=Sim101,Sim102;\ninstrument=ES1!;\naction=buy;\nqty=2;\n" +
		"order_type=LIMIT;\nlimit_price=-2 ticks;\ntif=DAY;\ntake_profit=20 ticks;\nstop_loss=10 ticks;\n")
	b.ReportAllocs()
	for b.Loop() {
		a, err := Parse(body, ctText)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := a.Calls(); err != nil {
			b.Fatal(err)
		}
		_ = Redact(body, ctText)
	}
}
