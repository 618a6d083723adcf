package manage

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// connSnap is a user whose agent reports connections A and B, with
// settings stored for A and for Z, a connection the agent no longer
// reports.
func connSnap() *Snapshot {
	return &Snapshot{
		Connections: []protocol.Connection{
			{Name: "A", Accounts: []string{"a1", "a2"}},
			{Name: "B", Accounts: []string{"b1"}},
		},
		ConnectionSettings: protocol.ConnectionSettings{
			Meta: protocol.Meta{ID: "cs"},
			Connections: []protocol.ConnectionSetting{
				{Name: "Z", Accounts: []string{"z1"}, AutoReconnect: false, DataWatchdogSeconds: 60},
				{Name: "A", Accounts: []string{"a1"}, AutoReconnect: false, DataWatchdogSeconds: 30},
			},
		},
	}
}

// connClone copies v deeply.
func connClone(t *testing.T, v protocol.ConnectionSettings) protocol.ConnectionSettings {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out protocol.ConnectionSettings
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

func TestConnectionsKindDeclaration(t *testing.T) {
	t.Parallel()
	require.Equal(t, "connection-settings", connectionsKind.Name)
	require.Equal(t, "desktop/connection-settings", connectionsKind.Path)
	require.True(t, connectionsKind.Singleton)
	require.True(t, connectionsKind.NeedsAgent)
	require.Empty(t, connectionsKind.ReadOnly)
	require.NotNil(t, connectionsKind.Default().Connections)
}

func TestConnectionsDerive(t *testing.T) {
	t.Parallel()
	s := connSnap()
	stored := s.ConnectionSettings
	v := stored
	deriveConnections(&v, s)
	require.Equal(t, []protocol.ConnectionSetting{
		{Name: "A", Accounts: []string{"a1", "a2"}, AutoReconnect: false, DataWatchdogSeconds: 30},
		{Name: "B", Accounts: []string{"b1"}, AutoReconnect: true, DataWatchdogSeconds: 0},
	}, v.Connections)
	// The stored list is not changed through shared memory.
	require.Equal(t, connSnap().ConnectionSettings, stored)

	// No agent report: nothing is shown, and the list is empty, not null.
	e := connectionsKind.Default()
	deriveConnections(&e, &Snapshot{})
	require.NotNil(t, e.Connections)
	require.Empty(t, e.Connections)
}

func TestConnectionsHooks(t *testing.T) {
	t.Parallel()
	bad := func(f ...httpapi.FieldError) miscWant {
		return miscWant{http.StatusUnprocessableEntity, errcode.ValidationFailed, f}
	}
	fe := func(p, code string, limit any) httpapi.FieldError {
		return httpapi.FieldError{Path: p, Code: code, Limit: limit}
	}
	a := func(auto bool, wd int) protocol.ConnectionSetting {
		return protocol.ConnectionSetting{Name: "A", Accounts: []string{"a1", "a2"}, AutoReconnect: auto, DataWatchdogSeconds: wd}
	}
	b := func(auto bool, wd int) protocol.ConnectionSetting {
		return protocol.ConnectionSetting{Name: "B", Accounts: []string{"b1"}, AutoReconnect: auto, DataWatchdogSeconds: wd}
	}
	z := protocol.ConnectionSetting{Name: "Z", Accounts: []string{"z1"}, AutoReconnect: false, DataWatchdogSeconds: 60}
	unchanged := []protocol.ConnectionSetting{a(false, 30), b(true, 0), z}
	tests := []struct {
		name string
		body string
		want miscWant
		// stored is the list Validate leaves to store.
		stored []protocol.ConnectionSetting
	}{
		{name: "no connections sent", body: `{}`, stored: unchanged},
		{name: "null connections", body: `{"connections":null}`, stored: unchanged},
		{name: "one field of one connection", body: `{"connections":[{"name":"B","dataWatchdogSeconds":30}]}`,
			stored: []protocol.ConnectionSetting{a(false, 30), b(true, 30), z}},
		{name: "second entry only changes its own fields", body: `{"connections":[{"name":"B","autoReconnect":false},{"name":"A","autoReconnect":true}]}`,
			stored: []protocol.ConnectionSetting{a(true, 30), b(false, 0), z}},
		{name: "null field is not sent", body: `{"connections":[{"name":"A","autoReconnect":null,"dataWatchdogSeconds":0}]}`,
			stored: []protocol.ConnectionSetting{a(false, 0), b(true, 0), z}},
		{name: "a read body sent back", body: `{"id":"cs","connections":[{"name":"A","accounts":["a1","a2"],"autoReconnect":false,"dataWatchdogSeconds":30},{"name":"B","accounts":["b1"],"autoReconnect":true,"dataWatchdogSeconds":0}]}`,
			stored: unchanged},
		{name: "accounts sent back in another order", body: `{"connections":[{"name":"A","accounts":["a2","a1"],"dataWatchdogSeconds":3600}]}`,
			stored: []protocol.ConnectionSetting{a(false, 3600), b(true, 0), z}},
		{name: "watchdog at its lower bound", body: `{"connections":[{"name":"A","dataWatchdogSeconds":5}]}`,
			stored: []protocol.ConnectionSetting{a(false, 5), b(true, 0), z}},
		{name: "watchdog below 5", body: `{"connections":[{"name":"A","dataWatchdogSeconds":4}]}`,
			want: bad(fe("connections.0.dataWatchdogSeconds", errcode.FieldCodeGreaterThanEqual, MinDataWatchdogSeconds))},
		{name: "watchdog negative", body: `{"connections":[{"name":"A","dataWatchdogSeconds":-1}]}`,
			want: bad(fe("connections.0.dataWatchdogSeconds", errcode.FieldCodeGreaterThanEqual, MinDataWatchdogSeconds))},
		{name: "watchdog over an hour", body: `{"connections":[{"name":"B"},{"name":"A","dataWatchdogSeconds":3601}]}`,
			want: bad(fe("connections.1.dataWatchdogSeconds", errcode.FieldCodeLessThanEqual, MaxDataWatchdogSeconds))},
		{name: "unknown connection", body: `{"connections":[{"name":"A"},{"name":"Zed","autoReconnect":true}]}`,
			want: bad(fe("connections.1.name", errcode.FieldCodeUnknownConnection, nil))},
		{name: "hidden connection is unknown", body: `{"connections":[{"name":"Z","autoReconnect":true}]}`,
			want: bad(fe("connections.0.name", errcode.FieldCodeUnknownConnection, nil))},
		{name: "entry without a name", body: `{"connections":[{"autoReconnect":true}]}`,
			want: bad(fe("connections.0.name", errcode.FieldCodeRequired, nil))},
		{name: "connection twice", body: `{"connections":[{"name":"A"},{"name":"A","autoReconnect":true}]}`,
			want: bad(fe("connections.1.name", errcode.FieldCodeDuplicateItem, nil))},
		{name: "every entry at fault", body: `{"connections":[{"name":"Nope"},{"name":"B","dataWatchdogSeconds":2}]}`,
			want: bad(fe("connections.0.name", errcode.FieldCodeUnknownConnection, nil),
				fe("connections.1.dataWatchdogSeconds", errcode.FieldCodeGreaterThanEqual, MinDataWatchdogSeconds))},
		{name: "account not on the connection", body: `{"connections":[{"name":"B","accounts":["b1"]},{"name":"A","accounts":["a1","a2","x9","b1"]}]}`,
			want: miscWant{http.StatusNotFound, errcode.AccountNotFound, miscFields(
				httpapi.FieldError{Path: "connections.1.accounts.2", Code: errcode.AccountNotFound},
				httpapi.FieldError{Path: "connections.1.accounts.3", Code: errcode.AccountNotFound})}},
		{name: "accounts a subset", body: `{"connections":[{"name":"A","accounts":["a1"]}]}`,
			want: miscWant{http.StatusUnprocessableEntity, errcode.FieldReadOnly, miscFields(
				httpapi.FieldError{Path: "connections.0.accounts", Code: errcode.FieldReadOnly})}},
		{name: "accounts emptied", body: `{"connections":[{"name":"B","accounts":[]}]}`,
			want: miscWant{http.StatusUnprocessableEntity, errcode.FieldReadOnly, miscFields(
				httpapi.FieldError{Path: "connections.0.accounts", Code: errcode.FieldReadOnly})}},
		{name: "accounts of an unknown connection", body: `{"connections":[{"name":"Nope","accounts":["a1"]}]}`,
			want: bad(fe("connections.0.name", errcode.FieldCodeUnknownConnection, nil))},
		{name: "connections not a list", body: `{"connections":{"name":"A"}}`,
			want: bad(fe("connections", errcode.FieldCodeWrongType, nil))},
		{name: "entry of the wrong type", body: `{"connections":[{"name":"A"},5]}`,
			want: bad(fe("connections.1", errcode.FieldCodeWrongType, nil))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := connSnap()
			// As the core does: the stored resource, derived, is Old; the
			// body merged onto a copy of it is New.
			old := connClone(t, s.ConnectionSettings)
			deriveConnections(&old, s)
			var sent map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(tt.body), &sent))
			n := connClone(t, old)
			_ = json.Unmarshal([]byte(tt.body), &n) // a type error is the core's to report
			c := &Change[protocol.ConnectionSettings]{Op: OpPatch, Old: &old, New: &n, Sent: sent, Snap: s, Family: "desktop"}
			miscCheck(t, tt.want, miscHooks(connectionsKind, c), "x9", "Nope", "Zed")
			if tt.want.code != "" {
				return
			}
			require.Equal(t, tt.stored, n.Connections)
			// The snapshot, the stored resource, is untouched.
			require.Equal(t, connSnap(), s)
			// What a read shows of the result: the reported connections.
			shown := connClone(t, n)
			deriveConnections(&shown, s)
			require.Equal(t, tt.stored[:2], shown.Connections)
		})
	}
}

// TestConnectionsValidateWithoutBody covers a change whose body the core
// did not pass: every entry of New counts as sent.
func TestConnectionsValidateWithoutBody(t *testing.T) {
	t.Parallel()
	s := connSnap()
	n := protocol.ConnectionSettings{Connections: []protocol.ConnectionSetting{{Name: "B", AutoReconnect: false, DataWatchdogSeconds: 10}}}
	require.Nil(t, validateConnections(&Change[protocol.ConnectionSettings]{Op: OpPatch, New: &n, Snap: s}))
	require.Equal(t, []protocol.ConnectionSetting{
		{Name: "A", Accounts: []string{"a1", "a2"}, AutoReconnect: false, DataWatchdogSeconds: 30},
		{Name: "B", Accounts: []string{"b1"}, AutoReconnect: false, DataWatchdogSeconds: 10},
		{Name: "Z", Accounts: []string{"z1"}, AutoReconnect: false, DataWatchdogSeconds: 60},
	}, n.Connections)
}
