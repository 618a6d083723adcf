package hub

import (
	"encoding/json"
	"time"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/events"
)

// report publishes a history entry.
func (h *Hub) report(ev agentcall.SessionEvent) { h.publish(events.Session(ev)) }

// publish hands e to Options.Events, if set.
func (h *Hub) publish(e events.Event) {
	if p := h.opts.Events; p != nil {
		p.Publish(e)
	}
}

// endReason is why the tunnel ended, from how it was closed: the reason
// its closer named, else the close code the relay sent, else what the
// agent did.
func (c *agentConn) endReason() string {
	if c.why != "" {
		return c.why
	}
	if r := protocol.CloseReason(c.closeCode); r != "" {
		return r
	}
	if c.closeText == errOutOfSync {
		return agentcall.ReasonAgentUnresponsive
	}
	if c.conn.CloseStatus() >= 0 {
		// The agent sent a close (or ended the connection cleanly).
		return agentcall.ReasonAgentClosed
	}
	return agentcall.ReasonConnectionLost
}

// setDiagnostics keeps d, received at at, as the tunnel's latest
// diagnostics, with at most protocol.MaxDiagnosticErrors errors, and
// returns its encoding.
func (c *agentConn) setDiagnostics(d *protocol.Diagnostics, at time.Time) (json.RawMessage, error) {
	if len(d.Errors) > protocol.MaxDiagnosticErrors {
		d.Errors = d.Errors[:protocol.MaxDiagnosticErrors]
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	c.helloMu.Lock()
	c.diag, c.diagAt = d, at
	c.helloMu.Unlock()
	return b, nil
}
