package manage

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// validAtm returns a valid template configuration: 3 contracts in two
// brackets, breakeven and trailing stop on.
func validAtm() protocol.AtmConfig {
	return protocol.AtmConfig{
		Quantity:    3,
		TimeInForce: "day",
		Brackets: []protocol.AtmBracket{
			{Quantity: 1, StopLossTicks: 8, ProfitTargetTicks: 16},
			{Quantity: 2, StopLossTicks: 8, ProfitTargetTicks: 32},
		},
		Breakeven:    protocol.AtmBreakeven{Enabled: true, TriggerTicks: 8, PlusTicks: 1},
		TrailingStop: protocol.AtmTrailingStop{Enabled: true, TriggerTicks: 12, DistanceTicks: 6, StepTicks: 2},
	}
}

func TestTemplateKindDeclaration(t *testing.T) {
	t.Parallel()
	require.Equal(t, "atm-template", templateKind.Name)
	require.Equal(t, "desktop/atm-templates", templateKind.Path)
	require.ElementsMatch(t, []string{"name", "config"}, templateKind.Required)
	require.Empty(t, templateKind.Immutable)
	require.True(t, templateKind.NeedsAgent)
	require.Equal(t, 100, templateKind.MaxCount)
	require.Equal(t, errcode.LimitReached, templateKind.LimitCode)
	d := templateKind.Default()
	require.Equal(t, AtmDay, d.Config.TimeInForce)
}

func TestTemplateHooks(t *testing.T) {
	t.Parallel()
	atm := func(f func(*protocol.AtmConfig)) protocol.AtmConfig {
		c := validAtm()
		f(&c)
		return c
	}
	bad := func(f ...httpapi.FieldError) miscWant {
		return miscWant{http.StatusUnprocessableEntity, errcode.InvalidAtmConfig, f}
	}
	fe := func(p, code string, limit any) httpapi.FieldError {
		return httpapi.FieldError{Path: p, Code: code, Limit: limit}
	}
	const (
		gte = errcode.FieldCodeGreaterThanEqual
		lte = errcode.FieldCodeLessThanEqual
		rwe = errcode.FieldCodeRequiredWhenEnabled
	)
	snap := &Snapshot{Templates: []protocol.ManagedAtmTemplate{{Meta: protocol.Meta{ID: "t1"}, Name: "Scalp", Config: validAtm()}}}
	tests := []struct {
		name    string
		id      string
		tmpl    string
		cfg     protocol.AtmConfig
		want    miscWant
		wantTIF string
	}{
		{name: "valid", tmpl: "Swing", cfg: validAtm(), wantTIF: AtmDay},
		{name: "gtc in capitals", tmpl: "Swing", cfg: atm(func(c *protocol.AtmConfig) { c.TimeInForce = "GTC" }), wantTIF: AtmGtc},
		{name: "one bracket, features off", tmpl: "Swing", cfg: protocol.AtmConfig{Quantity: 1, TimeInForce: "Day",
			Brackets: []protocol.AtmBracket{{Quantity: 1, StopLossTicks: 1, ProfitTargetTicks: 10000}}}, wantTIF: AtmDay},
		{name: "bad name", tmpl: " Swing", cfg: validAtm(), want: miscWant{http.StatusUnprocessableEntity, errcode.ValidationFailed,
			miscFields(httpapi.FieldError{Path: "name", Code: errcode.FieldCodeStringPatternMismatch, Pattern: NamePattern})}},
		{name: "quantity zero", tmpl: "Swing", cfg: atm(func(c *protocol.AtmConfig) {
			c.Quantity = 0
			c.Brackets = c.Brackets[:0:0]
			c.Brackets = append(c.Brackets, protocol.AtmBracket{Quantity: 1, StopLossTicks: 4, ProfitTargetTicks: 4})
		}), want: bad(fe("config.quantity", gte, 1), fe("config.brackets", errcode.FieldCodeOutOfRange, nil))},
		{name: "quantity over 1000", tmpl: "Swing", cfg: atm(func(c *protocol.AtmConfig) {
			c.Quantity = 1001
			c.Brackets = []protocol.AtmBracket{{Quantity: 1000, StopLossTicks: 4, ProfitTargetTicks: 4}, {Quantity: 1, StopLossTicks: 4, ProfitTargetTicks: 4}}
		}), want: bad(fe("config.quantity", lte, MaxAtmQuantity))},
		{name: "unknown time in force", tmpl: "Swing", cfg: atm(func(c *protocol.AtmConfig) { c.TimeInForce = "ioc" }),
			want: bad(httpapi.FieldError{Path: "config.timeInForce", Code: errcode.FieldCodeNotAllowed, Allowed: []string{AtmDay, AtmGtc}})},
		{name: "no brackets", tmpl: "Swing", cfg: atm(func(c *protocol.AtmConfig) { c.Brackets = nil }),
			want: bad(fe("config.brackets", errcode.FieldCodeRequired, nil))},
		{name: "five brackets", tmpl: "Swing", cfg: atm(func(c *protocol.AtmConfig) {
			c.Quantity = 5
			c.Brackets = nil
			for range 5 {
				c.Brackets = append(c.Brackets, protocol.AtmBracket{Quantity: 1, StopLossTicks: 4, ProfitTargetTicks: 4})
			}
		}), want: bad(fe("config.brackets", lte, MaxAtmBrackets))},
		{name: "four brackets", tmpl: "Swing", cfg: atm(func(c *protocol.AtmConfig) {
			c.Quantity = 4
			c.Brackets = nil
			for range 4 {
				c.Brackets = append(c.Brackets, protocol.AtmBracket{Quantity: 1, StopLossTicks: 4, ProfitTargetTicks: 4})
			}
		}), wantTIF: AtmDay},
		{name: "bracket quantity zero", tmpl: "Swing", cfg: atm(func(c *protocol.AtmConfig) { c.Brackets[0].Quantity = 0; c.Quantity = 2 }),
			want: bad(fe("config.brackets.0.quantity", gte, 1))},
		{name: "brackets do not add up", tmpl: "Swing", cfg: atm(func(c *protocol.AtmConfig) { c.Quantity = 4 }),
			want: bad(fe("config.brackets", errcode.FieldCodeOutOfRange, nil))},
		{name: "stop and target out of range", tmpl: "Swing", cfg: atm(func(c *protocol.AtmConfig) {
			c.Brackets[0].StopLossTicks = 0
			c.Brackets[1].ProfitTargetTicks = 10001
		}), want: bad(fe("config.brackets.0.stopLossTicks", gte, 1), fe("config.brackets.1.profitTargetTicks", lte, MaxAtmTicks))},
		{name: "breakeven on without trigger", tmpl: "Swing", cfg: atm(func(c *protocol.AtmConfig) { c.Breakeven.TriggerTicks = 0 }),
			want: bad(fe("config.breakeven.triggerTicks", rwe, nil))},
		{name: "breakeven negative plus", tmpl: "Swing", cfg: atm(func(c *protocol.AtmConfig) { c.Breakeven.PlusTicks = -1 }),
			want: bad(fe("config.breakeven.plusTicks", gte, 0))},
		{name: "breakeven off without trigger", tmpl: "Swing", cfg: atm(func(c *protocol.AtmConfig) {
			c.Breakeven = protocol.AtmBreakeven{}
		}), wantTIF: AtmDay},
		{name: "trailing stop on without values", tmpl: "Swing", cfg: atm(func(c *protocol.AtmConfig) {
			c.TrailingStop = protocol.AtmTrailingStop{Enabled: true}
		}), want: bad(fe("config.trailingStop.triggerTicks", rwe, nil), fe("config.trailingStop.distanceTicks", rwe, nil),
			fe("config.trailingStop.stepTicks", rwe, nil))},
		{name: "trailing stop off with a negative value", tmpl: "Swing", cfg: atm(func(c *protocol.AtmConfig) {
			c.TrailingStop = protocol.AtmTrailingStop{StepTicks: -2}
		}), want: bad(fe("config.trailingStop.stepTicks", gte, 0))},
		{name: "name of another template in another case", tmpl: "SCALP", cfg: validAtm(),
			want: miscWant{http.StatusConflict, errcode.TemplateNameConflict, nil}},
		{name: "own name on patch", id: "t1", tmpl: "scalp", cfg: validAtm(), wantTIF: AtmDay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := protocol.ManagedAtmTemplate{Meta: protocol.Meta{ID: tt.id}, Name: tt.tmpl, Config: tt.cfg}
			c := &Change[protocol.ManagedAtmTemplate]{Op: OpCreate, New: &v, Snap: snap}
			if tt.id != "" {
				c.Op, c.Old = OpPatch, &snap.Templates[0]
			}
			miscCheck(t, tt.want, miscHooks(templateKind, c), tt.tmpl)
			if tt.want.code == "" {
				require.Equal(t, tt.wantTIF, v.Config.TimeInForce)
			}
		})
	}
}
