package alertcmd

import (
	"strings"
	"testing"
	"time"

	"tradebridge/protocol"
)

func TestParsePrice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		level  float64
		unit   string
		value  float64
		signed bool
		ok     bool
	}{
		{"4550.25", 4550.25, "", 0, false, true},
		{" 71.48 ", 71.48, "", 0, false, true},
		{".5", 0.5, "", 0, false, true},
		{"10 ticks", 0, protocol.OffsetTicks, 10, false, true},
		{"10ticks", 0, protocol.OffsetTicks, 10, false, true},
		{"1 tick", 0, protocol.OffsetTicks, 1, false, true},
		{"7.5 TICKS", 0, protocol.OffsetTicks, 7.5, false, true},
		{"-4 ticks", 0, protocol.OffsetTicks, -4, true, true},
		{"+ 4 ticks", 0, protocol.OffsetTicks, 4, true, true},
		{"4 points", 0, protocol.OffsetPoints, 4, false, true},
		{"4 pts", 0, protocol.OffsetPoints, 4, false, true},
		{"4 point", 0, protocol.OffsetPoints, 4, false, true},
		{"-2.5pt", 0, protocol.OffsetPoints, -2.5, true, true},
		{"0.5%", 0, protocol.OffsetPercent, 0.5, false, true},
		{"0.5 %", 0, protocol.OffsetPercent, 0.5, false, true},
		{"-2.5943%", 0, protocol.OffsetPercent, -2.5943, true, true},
		{"1 percent", 0, protocol.OffsetPercent, 1, false, true},
		{"$100", 0, protocol.OffsetDollars, 100, false, true},
		{"-$100", 0, protocol.OffsetDollars, -100, true, true},
		{"$-100", 0, protocol.OffsetDollars, -100, true, true},
		{"100 dollars", 0, protocol.OffsetDollars, 100, false, true},
		{"100$", 0, protocol.OffsetDollars, 100, false, true},
		{"+250 USD", 0, protocol.OffsetDollars, 250, true, true},
		{"0 ticks", 0, protocol.OffsetTicks, 0, false, true},
		{"", 0, "", 0, false, false},
		{"-4", 0, "", 0, false, false},
		{"+4550", 0, "", 0, false, false},
		{"0", 0, "", 0, false, false},
		{"4550,25", 0, "", 0, false, false},
		{"1e3", 0, "", 0, false, false},
		{"10 tics", 0, "", 0, false, false},
		{"$100 dollars", 0, "", 0, false, false},
		{"--4 ticks", 0, "", 0, false, false},
		{"-$-4", 0, "", 0, false, false},
		{"ticks", 0, "", 0, false, false},
		{"101%", 0, "", 0, false, false},
		{"2000000000", 0, "", 0, false, false},
		{"1.2.3", 0, "", 0, false, false},
		{"NaN", 0, "", 0, false, false},
	}
	for _, tt := range tests {
		p, ok := ParsePrice(tt.in)
		if ok != tt.ok {
			t.Errorf("ParsePrice(%q) ok = %v", tt.in, ok)
			continue
		}
		if !ok {
			continue
		}
		switch {
		case tt.unit == "" && (p.Level == nil || *p.Level != tt.level || p.Offset != nil):
			t.Errorf("ParsePrice(%q) = %+v, want level %v", tt.in, p, tt.level)
		case tt.unit != "" && (p.Offset == nil || *p.Offset != Offset{tt.unit, tt.value, tt.signed} || p.Level != nil):
			t.Errorf("ParsePrice(%q) = %+v, want %s %v signed %v", tt.in, p.Offset, tt.unit, tt.value, tt.signed)
		}
		// String writes a price the parser reads back the same.
		back, ok := ParsePrice(p.String())
		if !ok || back.String() != p.String() {
			t.Errorf("ParsePrice(%q).String() = %q does not read back", tt.in, p.String())
		}
	}
}

func TestParseClock(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"09:30", "09:30", true},
		{"9:30", "09:30", true},
		{"00:00", "00:00", true},
		{"23:59", "23:59", true},
		{"16:00", "16:00", true},
		{"1:30 PM", "13:30", true},
		{"1:30PM", "13:30", true},
		{"1:30 pm", "13:30", true},
		{"12:05 AM", "00:05", true},
		{"12:00 PM", "12:00", true},
		{"11:59pm", "23:59", true},
		{"24:00", "", false},
		{"9:5", "", false},
		{"13:30 PM", "", false},
		{"0:30 AM", "", false},
		{"0930", "", false},
		{"09:60", "", false},
		{"9.30", "", false},
		{"09:30:00", "", false},
		{"", "", false},
		{"-1:30", "", false},
	}
	for _, tt := range tests {
		got, ok := ParseClock(tt.in)
		if ok != tt.ok || ok && got.String() != tt.want {
			t.Errorf("ParseClock(%q) = %v, %v; want %s, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	ny := time.FixedZone("EST", -5*3600)
	if c := Clock(time.Date(2026, 11, 27, 15, 45, 59, 0, ny)); c.String() != "15:45" {
		t.Errorf("Clock = %v", c)
	}
}

func TestInWindow(t *testing.T) {
	t.Parallel()
	ct := func(s string) *ClockTime { c, _ := ParseClock(s); return &c }
	day := Alert{StartTime: ct("09:30"), EndTime: ct("16:00"), ClosingOnlyAfter: ct("15:45")}
	night := Alert{StartTime: ct("18:00"), EndTime: ct("16:00"), ClosingOnlyAfter: ct("15:30")}
	lateNight := Alert{StartTime: ct("18:00"), EndTime: ct("16:00"), ClosingOnlyAfter: ct("20:00")}
	tests := []struct {
		name        string
		a           Alert
		at          string
		open, close bool
	}{
		{"no window", Alert{}, "03:00", true, false},
		{"before start", day, "09:29", false, false},
		{"at start", day, "09:30", true, false},
		{"inside", day, "12:00", true, false},
		{"closing only", day, "15:45", true, true},
		{"at end", day, "16:00", false, false},
		{"overnight evening", night, "20:00", true, false},
		{"overnight morning", night, "10:00", true, false},
		{"overnight closing only", night, "15:30", true, true},
		{"overnight closed", night, "17:00", false, false},
		{"closing from evening", lateNight, "19:59", true, false},
		{"closing evening", lateNight, "21:00", true, true},
		{"closing after midnight", lateNight, "02:00", true, true},
	}
	for _, tt := range tests {
		open, closing := tt.a.InWindow(*ct(tt.at))
		if open != tt.open || closing != tt.close {
			t.Errorf("%s: InWindow(%s) = %v, %v; want %v, %v", tt.name, tt.at, open, closing, tt.open, tt.close)
		}
	}
}

func TestParseInstrument(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"ES 12-26", "ES 12-26"},
		{" es 12-26 ", "ES 12-26"},
		{"ESZ26", "ESZ26"},
		{"esz6", "ESZ6"},
		{"ES", "ES"},
		{"M2K", "M2K"},
		{"ES1!", "ES"},
		{"mnq1!", "MNQ"},
		{"NQH2027", "NQH27"},
		{"6EM2026", "6EM26"},
		{"ES2!", ""},
		{"1!", ""},
		{"ES  12-26", ""},
		{"ES 2026", ""},
		{"CME_MINI:ES1!", ""},
		{"ESZ1999", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, ok := ParseInstrument(tt.in)
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("ParseInstrument(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}

func TestParseRateLimitAndDurations(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want RateLimit
		ok   bool
	}{
		{"1", RateLimit{1, time.Minute}, true},
		{"3/300", RateLimit{3, 300 * time.Second}, true},
		{"3 / 60", RateLimit{3, time.Minute}, true},
		{"1/86400", RateLimit{1, 24 * time.Hour}, true},
		{"0", RateLimit{}, false},
		{"1/0", RateLimit{}, false},
		{"1/86401", RateLimit{}, false},
		{"1/", RateLimit{}, false},
		{"a/60", RateLimit{}, false},
		{"1.5/60", RateLimit{}, false},
	} {
		got, ok := ParseRateLimit(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseRateLimit(%q) = %v, %v", tt.in, got, ok)
		}
	}
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{{"2.5", 2500 * time.Millisecond}, {"60", time.Minute}, {"0.001", time.Millisecond}, {"0", 0}, {"60.5", 0}, {"-1", 0}, {"0.0001", 0}} {
		if got, _ := parseSeconds(tt.in); got != tt.want {
			t.Errorf("delay %q = %v, want %v", tt.in, got, tt.want)
		}
	}
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{{"1", time.Minute}, {"60", time.Hour}, {"2.5", 150 * time.Second}, {"0.5", 0}, {"61", 0}} {
		if got, _ := parseMinutes(tt.in); got != tt.want {
			t.Errorf("cancel_after %q = %v, want %v", tt.in, got, tt.want)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"flat", "flat"}, {"Long/Short", "long,short"}, {"short,flat", "flat,short"}, {"flat/flat", "flat"}, {"up", ""}, {"/", ""},
	} {
		if got, _ := parsePositions(tt.in); got != tt.want {
			t.Errorf("require_market_position %q = %q, want %q", tt.in, got, tt.want)
		}
	}
	if !strings.Contains(missingError([]string{"qty"}).Detail, "missing required field: qty") {
		t.Error("missingError")
	}
}

// Takes answers from the table the validation uses: a command's needed
// and optional fields and the gates, and nothing else.
func TestTakes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		command, field string
		takes          bool
	}{
		{CmdPlace, "take_profit", true},
		{CmdPlace, "qty", true},
		{CmdPlace, "delay", true},
		{CmdFlatPlace, "flatten_first", true},
		{CmdClosePosition, "qty", true},
		{CmdClosePosition, "stop_loss", false},
		{CmdClosePosition, "action", false},
		{CmdFlatten, "instrument", true},
		{CmdFlattenEverything, "account", false},
		{CmdCancelAllOrders, "id", true},
		{"NOSUCH", "key", false},
	} {
		if got := Takes(c.command, c.field); got != c.takes {
			t.Errorf("Takes(%s, %s) = %v, want %v", c.command, c.field, got, c.takes)
		}
	}
}
