package manage

import (
	"bytes"
	"encoding/json"
	"slices"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// Bounds of a connection's data watchdog: 0 turns it off, else it is
// MinDataWatchdogSeconds to MaxDataWatchdogSeconds.
const (
	MinDataWatchdogSeconds = 5
	MaxDataWatchdogSeconds = 3600
)

// connectionsKind is the connection-settings kind of the Management API:
// one resource per user holding the settings of each platform connection.
//
// The connections shown are the ones the agent reports (Snapshot.
// Connections), in its order, each with its accounts and its stored
// settings (autoReconnect true and the watchdog off when none are
// stored). Settings of a connection the agent no longer reports stay in
// the store, hidden, and apply again when it comes back.
//
// A PATCH matches the connections it sends by name: it changes the fields
// each entry sends and leaves every other connection, and every field not
// sent, as stored. A connection's accounts come from the agent: a body may
// send them back unchanged (as a set), nothing else.
var connectionsKind = &Kind[protocol.ConnectionSettings]{
	Name:       "connection-settings",
	Path:       "desktop/connection-settings",
	Singleton:  true,
	NeedsAgent: true,
	Default: func() protocol.ConnectionSettings {
		return protocol.ConnectionSettings{Connections: []protocol.ConnectionSetting{}}
	},
	Meta:     func(v *protocol.ConnectionSettings) *protocol.Meta { return &v.Meta },
	Derive:   deriveConnections,
	Guard:    guardConnections,
	Validate: validateConnections,
}

// defaultConnectionSetting returns the settings of a connection that has
// none stored.
func defaultConnectionSetting(name string) protocol.ConnectionSetting {
	return protocol.ConnectionSetting{Name: name, Accounts: []string{}, AutoReconnect: true}
}

// deriveConnections replaces v's list with the connections the agent
// reports, each with its accounts and its stored settings. It builds a new
// list, so the stored one is not changed through shared memory.
func deriveConnections(v *protocol.ConnectionSettings, s *Snapshot) {
	shown := make([]protocol.ConnectionSetting, 0, len(s.Connections))
	for _, pc := range s.Connections {
		cs := defaultConnectionSetting(pc.Name)
		if i := connectionIndex(v.Connections, pc.Name); i >= 0 {
			cs.AutoReconnect = v.Connections[i].AutoReconnect
			cs.DataWatchdogSeconds = v.Connections[i].DataWatchdogSeconds
		}
		cs.Accounts = append(cs.Accounts, pc.Accounts...)
		shown = append(shown, cs)
	}
	v.Connections = shown
}

// connectionIndex returns the position of the setting named name in list,
// or -1.
func connectionIndex(list []protocol.ConnectionSetting, name string) int {
	return slices.IndexFunc(list, func(c protocol.ConnectionSetting) bool { return c.Name == name })
}

// platformConnection returns the connection the agent reports under name,
// or nil.
func platformConnection(s *Snapshot, name string) *protocol.Connection {
	for i := range s.Connections {
		if s.Connections[i].Name == name {
			return &s.Connections[i]
		}
	}
	return nil
}

// sentConnection is one entry of a body's connections as sent: a nil
// field was not sent (or sent as null).
type sentConnection struct {
	Name                *string   `json:"name"`
	Accounts            *[]string `json:"accounts"`
	AutoReconnect       *bool     `json:"autoReconnect"`
	DataWatchdogSeconds *int      `json:"dataWatchdogSeconds"`
}

// sentConnections decodes the body's connections. sent is false when the
// body holds none (absent or null); bad lists the paths whose JSON type is
// wrong.
func sentConnections(c *Change[protocol.ConnectionSettings]) (list []sentConnection, sent bool, bad fieldErrs) {
	raw, ok := c.Sent["connections"]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, false, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		bad.add("connections", errcode.FieldCodeWrongType)
		return nil, true, bad
	}
	list = make([]sentConnection, len(items))
	for i, it := range items {
		if err := json.Unmarshal(it, &list[i]); err != nil {
			bad.add(path("connections", i), errcode.FieldCodeWrongType)
		}
	}
	return list, true, bad
}

// guardConnections refuses accounts a body sends for a connection: an
// account not on the connection is 404 account_not_found (fields
// connections.N.accounts.M); another set than the connection's is 422
// field_read_only (fields connections.N.accounts). The connection's own
// set, in any order, is ignored. Entries naming no reported connection
// are left to Validate.
func guardConnections(c *Change[protocol.ConnectionSettings]) *httpapi.Error {
	list, _, _ := sentConnections(c)
	var missing, readOnly []httpapi.FieldError
	for i, e := range list {
		if e.Accounts == nil || e.Name == nil {
			continue
		}
		pc := platformConnection(c.Snap, *e.Name)
		if pc == nil {
			continue
		}
		same := true
		for m, a := range *e.Accounts {
			if !slices.Contains(pc.Accounts, a) {
				missing = append(missing, httpapi.FieldError{Path: path("connections", i, "accounts", m), Code: errcode.AccountNotFound})
			}
		}
		for _, a := range pc.Accounts {
			if !slices.Contains(*e.Accounts, a) {
				same = false
			}
		}
		if !same {
			readOnly = append(readOnly, httpapi.FieldError{Path: path("connections", i, "accounts"), Code: errcode.FieldReadOnly})
		}
	}
	if len(missing) > 0 {
		return refuse(errcode.AccountNotFound, "some accounts are not on the connection; fields lists each"+c.Snap.yourAccounts(), missing...)
	}
	if len(readOnly) > 0 {
		return refuse(errcode.FieldReadOnly, "a connection's accounts come from the platform and cannot be changed", readOnly...)
	}
	return nil
}

// validateConnections checks the entries a body sends and builds the list
// to store: the stored settings (c.Old's, and those of connections the
// agent no longer reports, from the snapshot), with each sent entry's
// fields applied to the connection of its name. Connections the agent
// reports come first, in its order, with its accounts.
func validateConnections(c *Change[protocol.ConnectionSettings]) *httpapi.Error {
	list, sent, f := sentConnections(c)
	if len(f) > 0 {
		return f.err()
	}
	if c.Sent == nil && c.New != nil {
		// No body to read which fields were sent: every field of every
		// entry counts as sent.
		for i := range c.New.Connections {
			e := &c.New.Connections[i]
			list = append(list, sentConnection{Name: &e.Name, AutoReconnect: &e.AutoReconnect, DataWatchdogSeconds: &e.DataWatchdogSeconds})
		}
		sent = true
	}

	// The stored settings, hidden connections included.
	var stored []protocol.ConnectionSetting
	if c.Old != nil {
		stored = append(stored, c.Old.Connections...)
	}
	for _, cs := range c.Snap.ConnectionSettings.Connections {
		if connectionIndex(stored, cs.Name) < 0 {
			stored = append(stored, cs)
		}
	}

	if sent {
		seen := make(map[string]bool, len(list))
		for i, e := range list {
			np := path("connections", i, "name")
			switch {
			case e.Name == nil || *e.Name == "":
				f.add(np, errcode.FieldCodeRequired)
				continue
			case platformConnection(c.Snap, *e.Name) == nil:
				f.add(np, errcode.FieldCodeUnknownConnection)
				continue
			case seen[*e.Name]:
				f.add(np, errcode.FieldCodeDuplicateItem)
				continue
			}
			seen[*e.Name] = true
			if w := e.DataWatchdogSeconds; w != nil && *w != 0 {
				intBetween(&f, path("connections", i, "dataWatchdogSeconds"), *w, MinDataWatchdogSeconds, MaxDataWatchdogSeconds)
			}
			if len(f) > 0 {
				continue
			}
			j := connectionIndex(stored, *e.Name)
			if j < 0 {
				stored = append(stored, defaultConnectionSetting(*e.Name))
				j = len(stored) - 1
			}
			if e.AutoReconnect != nil {
				stored[j].AutoReconnect = *e.AutoReconnect
			}
			if e.DataWatchdogSeconds != nil {
				stored[j].DataWatchdogSeconds = *e.DataWatchdogSeconds
			}
		}
		if err := f.err(); err != nil {
			return err
		}
	}

	// Reported connections first, in the agent's order, then the hidden.
	out := make([]protocol.ConnectionSetting, 0, len(stored)+len(c.Snap.Connections))
	for _, pc := range c.Snap.Connections {
		cs := defaultConnectionSetting(pc.Name)
		if j := connectionIndex(stored, pc.Name); j >= 0 {
			cs.AutoReconnect = stored[j].AutoReconnect
			cs.DataWatchdogSeconds = stored[j].DataWatchdogSeconds
		}
		cs.Accounts = append(cs.Accounts, pc.Accounts...)
		out = append(out, cs)
	}
	for _, cs := range stored {
		if platformConnection(c.Snap, cs.Name) == nil {
			if cs.Accounts == nil {
				cs.Accounts = []string{}
			}
			out = append(out, cs)
		}
	}
	c.New.Connections = out
	return nil
}
