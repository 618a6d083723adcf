package protocol

// ProtocolVersion is the version of the tunnel protocol this build speaks.
// The agent announces it in [Hello] and as the WebSocket subprotocol; the
// relay refuses versions it does not support before any RPC flows.
//
// History:
//
//	1 — 2026-11: length-prefixed JSON frames (Hello, Welcome, Goodbye,
//	    Request, Response, Cancel, Event) over yamux over WebSocket.
//	2 — 2026-11: the management configuration: FnApplyConfig and
//	    FnCheckMonitorRestart, events EventMonitorState and
//	    EventCopierState. A version 1 agent still trades; the relay
//	    refuses management changes that need it (addon_version_unsupported).
//	3 — 2026-11: the engines: FnEngineStatus; Monitor.restartedFrom (a
//	    stopped monitor resumes only on the restart of that stop); the
//	    code outcome_unknown (a write the agent stopped during); the
//	    detail of trading_blocked names the refusing rule. A version 2
//	    agent answers FnEngineStatus unknown_function.
//	4 — 2026-11: EventConnections: the agent reports the platform's
//	    connections and their accounts whenever they change (the Hello
//	    carries them only at connect). A version 3 agent's connections
//	    are those of its Hello.
//	5 — 2026-11: diagnostics for support staff: FnDiagnostics and
//	    EventDiagnostics (the agent sends its Diagnostics after every
//	    Welcome, and answers FnDiagnostics with a fresh one);
//	    Welcome.ServerTime, the relay's clock, from which the agent
//	    estimates its clock skew. A version 4 agent reports no
//	    diagnostics: the relay shows its Hello only.
//	6 — 2026-11: EventActivity: the agent reports what its engines did
//	    (an ActivityEntry whose ID is the report's id: copies, halts,
//	    monitor trips, the kill switch, news lockout windows, strategy-lock
//	    refusals), and sends every report it keeps again after each
//	    Welcome; the relay records each id once. A version 5 agent
//	    reports none: the activity log holds what the relay saw only.
//	7 — 2026-11: orders with their exits: PlaceOrderArgs.Exits (a take
//	    profit and a stop loss placed once the entry fills, sized to
//	    what filled), LimitOffset and StopOffset (prices relative to
//	    the last price), CancelAfterSeconds; FnCancelReplace;
//	    Request.BypassWindows. The relay sends none of them to a
//	    version 6 agent, which would ignore them
//	    (ExitsProtocolVersion).
//	8 — 2026-11: Monitor.minimumProfitDrawdown, a profit floor that
//	    arms at a session high. A version 7 agent would ignore it and
//	    never trip by it, so the relay refuses to store an enabled one
//	    while such an agent is connected (ProfitFloorProtocolVersion).
const ProtocolVersion = 8

// ActivityProtocolVersion is the first version whose relays record the
// engines' reports (EventActivity); an agent sends them only to such a
// relay (Welcome.ProtocolVersion).
const ActivityProtocolVersion = 6

// DiagnosticsProtocolVersion is the first version whose agents report
// Diagnostics (EventDiagnostics, FnDiagnostics).
const DiagnosticsProtocolVersion = 5

// ConfigProtocolVersion is the first version whose agents take the
// management configuration (FnApplyConfig).
const ConfigProtocolVersion = 2

// MinProtocolVersion is the oldest version a relay of this build accepts.
const MinProtocolVersion = 1

// SubprotocolPrefix prefixes the WebSocket subprotocol that names a protocol
// version: version 1 is offered as "tradebridge.tunnel.v1".
const SubprotocolPrefix = "tradebridge.tunnel.v"

// Subprotocol returns the WebSocket subprotocol that names version v.
func Subprotocol(v int) string { return SubprotocolPrefix + itoa(v) }

// ParseSubprotocol returns the version named by a WebSocket subprotocol, or
// false when s is not one of ours.
func ParseSubprotocol(s string) (int, bool) {
	if len(s) <= len(SubprotocolPrefix) || s[:len(SubprotocolPrefix)] != SubprotocolPrefix {
		return 0, false
	}
	digits := s[len(SubprotocolPrefix):]
	if digits[0] == '0' {
		return 0, false // one spelling per version: no leading zeros
	}
	v := 0
	for _, c := range digits {
		if c < '0' || c > '9' || v > 1<<20 {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, v > 0
}

// ConnectPath is the relay's HTTP path where agents open the tunnel.
const ConnectPath = "/v1/agent/connect"

func itoa(v int) string {
	if v == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}
