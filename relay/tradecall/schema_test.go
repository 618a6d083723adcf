package tradecall_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/tradecall"
)

func TestParamSchema(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		p    tradecall.Param
		text bool
		want map[string]any
	}{
		{"string with a length", tradecall.Param{Name: "account", Type: tradecall.TString, Format: tradecall.FormatName, Max: 64, Doc: "account name"}, true,
			map[string]any{"type": "string", "maxLength": 64.0, "description": "account name"}},
		{"integer as text", tradecall.Param{Name: "lookbackTime", Type: tradecall.TInteger, Default: 320, Min: 1, Max: 900, Doc: "seconds"}, true,
			map[string]any{"type": "integer", "default": 320, "minimum": 1.0, "maximum": 900.0, "description": "seconds (sent as text)"}},
		{"integer as JSON", tradecall.Param{Name: "quantity", Type: tradecall.TInteger, Min: 1, Max: 10000, Doc: "contracts"}, false,
			map[string]any{"type": "integer", "minimum": 1.0, "maximum": 10000.0, "description": "contracts"}},
		{"enum", tradecall.Param{Name: "action", Type: tradecall.TString, Enum: []string{"Buy", "Sell"}, Doc: "Buy or Sell"}, false,
			map[string]any{"type": "string", "enum": []string{"Buy", "Sell"}, "description": "Buy or Sell (matched without regard to case)"}},
		{"no doc, a note", tradecall.Param{Name: "flag", Type: tradecall.TBoolean}, true,
			map[string]any{"type": "boolean", "description": "sent as text"}},
		{"no doc, no note", tradecall.Param{Name: "flag", Type: tradecall.TBoolean}, false,
			map[string]any{"type": "boolean"}},
		{"instrument", tradecall.Param{Name: "instrument", Type: tradecall.TString, Format: tradecall.FormatInstrument, Doc: "instrument"}, false,
			map[string]any{"type": "string", "pattern": protocol.InstrumentPattern, "description": "instrument"}},
		{"time", tradecall.Param{Name: "from", Type: tradecall.TString, Format: tradecall.FormatTime, Doc: "start"}, false,
			map[string]any{"type": "string", "format": "date-time", "description": "start"}},
		{"position list", tradecall.Param{Name: "p", Type: tradecall.TString, Format: tradecall.FormatPositionList, Doc: "d"}, false,
			map[string]any{"type": "string", "pattern": `^(flat|long|short)(,(flat|long|short))*$`, "description": "d"}},
		{"integer text", tradecall.Param{Name: "period", Type: tradecall.TString, Format: tradecall.FormatIntegerText, Doc: "d"}, false,
			map[string]any{"type": "string", "pattern": `^[0-9]+$`, "description": "d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, tradecall.ParamSchema(tc.p, tc.text))
		})
	}
}

func TestObjectSchema(t *testing.T) {
	t.Parallel()
	str := func(name string, required bool, aliases ...string) tradecall.Param {
		return tradecall.Param{Name: name, In: tradecall.InBody, Type: tradecall.TString, Required: required, Aliases: aliases}
	}
	prop := map[string]any{"type": "string"}
	alias := func(of string) map[string]any {
		return map[string]any{"type": "string", "description": "alias of " + of}
	}
	req := func(name string) map[string]any { return map[string]any{"required": []string{name}} }
	for _, tc := range []struct {
		name   string
		params []tradecall.Param
		oneOf  [][]string
		want   map[string]any
	}{
		{"empty", nil, nil,
			map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{}}},
		{"required", []tradecall.Param{str("a", true), str("b", false)}, nil,
			map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{"a": prop, "b": prop}, "required": []string{"a"}}},
		{"a required alias is a group", []tradecall.Param{str("a", true, "a_x")}, nil,
			map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{"a": prop, "a_x": alias("a")},
				"anyOf": []any{req("a"), req("a_x")}}},
		{"an optional alias is a property", []tradecall.Param{str("a", false, "a_x")}, nil,
			map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{"a": prop, "a_x": alias("a")}}},
		{"a oneOf group of the params", []tradecall.Param{str("a", false), str("b", false)}, [][]string{{"a", "b"}},
			map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{"a": prop, "b": prop},
				"anyOf": []any{req("a"), req("b")}}},
		{"a oneOf group of other params is left out", []tradecall.Param{str("a", false)}, [][]string{{"x", "y"}},
			map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{"a": prop}}},
		{"two groups", []tradecall.Param{str("a", true, "a_x"), str("b", false), str("c", false)}, [][]string{{"b", "c"}},
			map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{"a": prop, "a_x": alias("a"), "b": prop, "c": prop},
				"allOf": []any{
					map[string]any{"anyOf": []any{req("a"), req("a_x")}},
					map[string]any{"anyOf": []any{req("b"), req("c")}},
				}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, tradecall.ObjectSchema(tc.params, tc.oneOf))
		})
	}
}
