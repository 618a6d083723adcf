package manage

import (
	"bytes"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// controlsKind is the controls kind of the Management API: the user's
// account-wide switches, one resource per user, all off by default. The
// kill switch changes only through PUT controls/kill-switch, which the
// core implements; a PATCH may send killSwitch back with its saved value.
var controlsKind = &Kind[protocol.Controls]{
	Name:       "controls",
	Path:       "controls",
	Singleton:  true,
	NeedsAgent: true,
	Default:    func() protocol.Controls { return protocol.Controls{} },
	Meta:       func(v *protocol.Controls) *protocol.Meta { return &v.Meta },
	Guard:      guardControls,
	Validate:   validateControls,
}

// guardControls refuses a PATCH whose body sends killSwitch with a value
// other than the saved one (422 use_kill_switch_endpoint). A value that is
// no boolean is left to the body's decoding, which refuses its type.
func guardControls(c *Change[protocol.Controls]) *httpapi.Error {
	if c.Op != OpPatch {
		return nil
	}
	raw, ok := c.Sent["killSwitch"]
	if !ok {
		return nil
	}
	saved := false
	if c.Old != nil {
		saved = c.Old.KillSwitch
	}
	var sent bool
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		sent = true
	case "false":
		sent = false
	default:
		return nil
	}
	if sent != saved {
		return errKillSwitchEndpoint()
	}
	return nil
}

// validateControls makes sure, whatever the body held, that a PATCH leaves
// the kill switch as it was.
func validateControls(c *Change[protocol.Controls]) *httpapi.Error {
	if c.Op == OpPatch && c.Old != nil && c.New.KillSwitch != c.Old.KillSwitch {
		return errKillSwitchEndpoint()
	}
	return nil
}

// errKillSwitchEndpoint is the 422 use_kill_switch_endpoint refusal.
func errKillSwitchEndpoint() *httpapi.Error {
	return refuse(errcode.UseKillSwitchEndpoint, "the kill switch changes only with PUT controls/kill-switch")
}
