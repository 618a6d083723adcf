package dispatch

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/agent/bridge"
	"tradebridge/agent/mgmtconfig"
	"tradebridge/agent/ops"
	"tradebridge/protocol"
)

// valuesPlatform reports account A1 with the given values.
type valuesPlatform struct {
	countingPlatform
	item protocol.AccountItem
}

func (p *valuesPlatform) Account(_ context.Context, name string) (protocol.Account, error) {
	if name != "A1" {
		return protocol.Account{}, bridge.ErrAccountNotFound
	}
	return protocol.Account{Name: "A1", Item: p.item}, nil
}

func call(d *Dispatcher, fn, args string) (json.RawMessage, *protocol.Error) {
	return d.Handle(context.Background(), &protocol.Request{Fn: fn, Args: json.RawMessage(args)})
}

func TestApplyConfig(t *testing.T) {
	t.Parallel()
	o, err := ops.New(ops.Options{Platform: &countingPlatform{}})
	require.NoError(t, err)
	holder := new(mgmtconfig.Holder)
	d, err := New(Options{Ops: o, Config: holder})
	require.NoError(t, err)
	require.Same(t, holder, d.Config(), "the holder given is the one applied to")

	for _, step := range []struct {
		name, args string
		want       string
		code       string
	}{
		{"the first push", `{"version":3,"copiers":[{"id":"c1","active":true,"leader":"A1"}],"controls":{"killSwitch":true}}`, `{"version":3}`, ""},
		{"a repeat", `{"version":3,"copiers":[]}`, `{"version":3}`, ""},
		{"a late push answers the newer version", `{"version":2,"copiers":[]}`, `{"version":3}`, ""},
		{"unknown fields are ignored", `{"version":4,"copiers":[{"id":"c2"}],"fromTheFuture":1}`, `{"version":4}`, ""},
		{"no version", `{"copiers":[]}`, "", protocol.CodeInvalidArgument},
		{"a version of the wrong type", `{"version":"5"}`, "", protocol.CodeInvalidArgument},
		{"not an object", `[5]`, "", protocol.CodeInvalidArgument},
	} {
		res, perr := call(d, protocol.FnApplyConfig, step.args)
		if step.code != "" {
			require.NotNil(t, perr, step.name)
			require.Equal(t, step.code, perr.Code, step.name)
			continue
		}
		require.Nil(t, perr, step.name)
		require.JSONEq(t, step.want, string(res), step.name)
	}
	cur := holder.Current()
	require.Equal(t, int64(4), cur.Version)
	require.Len(t, cur.Copiers, 1)
	require.Equal(t, "c2", cur.Copiers[0].ID)
	require.False(t, cur.Controls.KillSwitch, "the whole configuration was replaced")

	d2, err := New(Options{Ops: o})
	require.NoError(t, err)
	require.NotNil(t, d2.Config(), "a dispatcher without a holder has its own")
	require.Zero(t, d2.Config().Version())
}

func TestCheckMonitorRestartDispatch(t *testing.T) {
	t.Parallel()
	p := &valuesPlatform{item: protocol.AccountItem{GrossRealizedProfitLoss: -150, Commission: 10, UnrealizedProfitLoss: 40}}
	d := newDispatcher(t, p, nil)
	for _, tc := range []struct {
		name, args string
		want       string
		code       string
	}{
		{"a loss limit already reached", `{"monitor":{"account":"A1","lossLimit":{"enabled":true,"amount":150}}}`,
			`{"wouldRetrip":true,"reason":"lossLimit"}`, ""},
		{"a new loss limit beyond the loss", `{"monitor":{"account":"A1","lossLimit":{"enabled":true,"amount":200}}}`,
			`{"wouldRetrip":false}`, ""},
		{"unrealized brings it back within the limit", `{"monitor":{"account":"A1","includeUnrealized":true,"lossLimit":{"enabled":true,"amount":150}}}`,
			`{"wouldRetrip":false}`, ""},
		{"a profit target already reached", `{"monitor":{"account":"A1","includeUnrealized":true,"profitTarget":{"enabled":true,"amount":-110}}}`,
			`{"wouldRetrip":true,"reason":"profitTarget"}`, ""},
		{"an unknown account", `{"monitor":{"account":"A9","lossLimit":{"enabled":true,"amount":1}}}`, "", protocol.CodeAccountNotFound},
		{"no account", `{"monitor":{}}`, "", protocol.CodeMissingFields},
		{"no arguments", ``, "", protocol.CodeMissingFields},
		{"a limit of the wrong type", `{"monitor":{"account":"A1","lossLimit":{"enabled":"yes"}}}`, "", protocol.CodeInvalidArgument},
	} {
		res, perr := call(d, protocol.FnCheckMonitorRestart, tc.args)
		if tc.code != "" {
			require.NotNil(t, perr, tc.name)
			require.Equal(t, tc.code, perr.Code, tc.name)
			continue
		}
		require.Nil(t, perr, tc.name)
		require.JSONEq(t, tc.want, string(res), tc.name)
	}
	require.Zero(t, p.submits.Load(), "the check places nothing")
}
