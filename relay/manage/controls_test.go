package manage

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
)

func TestControlsKindDeclaration(t *testing.T) {
	t.Parallel()
	require.Equal(t, "controls", controlsKind.Name)
	require.Equal(t, "controls", controlsKind.Path)
	require.True(t, controlsKind.Singleton)
	require.True(t, controlsKind.NeedsAgent)
	require.Equal(t, protocol.Controls{}, controlsKind.Default())
}

func TestControlsHooks(t *testing.T) {
	t.Parallel()
	useEndpoint := miscWant{http.StatusUnprocessableEntity, errcode.UseKillSwitchEndpoint, nil}
	tests := []struct {
		name  string
		saved bool
		body  string
		want  miscWant
	}{
		{name: "kill switch sent back off", saved: false, body: `{"killSwitch":false,"flattenOnKill":true}`},
		{name: "kill switch sent back on", saved: true, body: `{"killSwitch": true ,"blockAllSignals":true}`},
		{name: "kill switch not sent", saved: true, body: `{"flattenOnKill":true}`},
		{name: "kill switch turned on", saved: false, body: `{"killSwitch":true}`, want: useEndpoint},
		{name: "kill switch turned off", saved: true, body: `{"killSwitch":false,"flattenOnKill":false}`, want: useEndpoint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var sent map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(tt.body), &sent))
			old := protocol.Controls{KillSwitch: tt.saved}
			n := old
			require.NoError(t, json.Unmarshal([]byte(tt.body), &n)) // the core's merge
			c := &Change[protocol.Controls]{Op: OpPatch, Old: &old, New: &n, Sent: sent, Snap: &Snapshot{}}
			miscCheck(t, tt.want, miscHooks(controlsKind, c))
			if tt.want.code == "" {
				require.Equal(t, tt.saved, n.KillSwitch)
			}
		})
	}
}

// TestControlsGuardAlone checks Guard as the core calls it, before the
// merge (c.New nil), and Validate's second line of defence.
func TestControlsGuardAlone(t *testing.T) {
	t.Parallel()
	c := &Change[protocol.Controls]{Op: OpPatch, Old: &protocol.Controls{}, Snap: &Snapshot{},
		Sent: map[string]json.RawMessage{"killSwitch": json.RawMessage("true")}}
	err := guardControls(c)
	require.NotNil(t, err)
	require.Equal(t, errcode.UseKillSwitchEndpoint, err.Code)
	require.Equal(t, http.StatusUnprocessableEntity, err.Status)

	// A value that is no boolean is left to the body's decoding.
	c.Sent["killSwitch"] = json.RawMessage(`"yes"`)
	require.Nil(t, guardControls(c))

	// Whatever the body held, a PATCH that would flip the switch is refused.
	c.New = &protocol.Controls{KillSwitch: true}
	err = validateControls(c)
	require.NotNil(t, err)
	require.Equal(t, errcode.UseKillSwitchEndpoint, err.Code)
}
