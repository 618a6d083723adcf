package agent

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.uber.org/zap"

	"tradebridge/agent/diag"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// processStart is when the agent's process started, near enough: when
// this package was initialized.
var processStart = time.Now()

// DiagnosticsOptions configure what the agent tells support staff about
// itself (protocol.Diagnostics).
type DiagnosticsOptions struct {
	// Recorder counts the warnings and errors the agent logs, for
	// Diagnostics.Errors; the caller tees its Core into Options.Logger.
	// Nil reports no errors.
	Recorder *diag.Recorder
	// Config is the agent's configuration as Diagnostics reports it,
	// without its secrets.
	Config protocol.DiagnosticConfig
	// Service reports that the agent runs as a system service.
	Service bool
	// SnapshotFile, when set, is where the agent keeps its latest
	// Diagnostics (diag.SnapshotName in its data folder), for `agent diag`:
	// written when Run starts, after each connection to the relay, every
	// SnapshotEvery, and once when Run stops.
	SnapshotFile string
	// SnapshotEvery is how often the snapshot is written; default 15 s.
	SnapshotEvery time.Duration
}

// diagConnectionsTimeout bounds how long Diagnostics waits for the
// platform's connections: a hung platform must not hang the answer.
const diagConnectionsTimeout = 2 * time.Second

// maxDiagnosticsEvent bounds the encoded EventDiagnostics, below the
// relay's limit of a control-stream frame (64 KiB).
const maxDiagnosticsEvent = 48 << 10

// Diagnostics collects what the agent tells support staff about itself:
// its version, the system, since when it runs, its configuration without
// secrets, the tunnel, the platform and the recent errors. It takes at
// most about two seconds, however the platform behaves.
func (a *Agent) Diagnostics(ctx context.Context) protocol.Diagnostics {
	now := time.Now()
	d := protocol.Diagnostics{
		At:            now.UTC(),
		AgentVersion:  Version,
		OS:            diag.OSDescription(),
		StartedAt:     processStart.UTC(),
		UptimeSeconds: int64(now.Sub(processStart) / time.Second),
		Service:       a.opts.Diagnostics.Service,
		Config:        a.opts.Diagnostics.Config,
		Tunnel:        a.tunnel.Status(),
		Bridge:        a.bridgeDiagnostic(ctx),
		Errors:        []protocol.ErrorCount{},
	}
	if d.Config.Platform == "" {
		d.Config.Platform = a.opts.Platform.Kind()
	}
	if r := a.opts.Diagnostics.Recorder; r != nil {
		d.Errors = r.Errors()
	}
	return d
}

// bridgeDiagnostic describes the platform: whether it is reachable (as a
// bridge.StatusReporter says, or else whether it lists its connections),
// and its connections.
func (a *Agent) bridgeDiagnostic(ctx context.Context) protocol.BridgeDiagnostic {
	p := a.opts.Platform
	b := protocol.BridgeDiagnostic{Kind: p.Kind(), Connections: []protocol.Connection{}}
	ctx, cancel := context.WithTimeout(ctx, diagConnectionsTimeout)
	defer cancel()
	conns, err := p.Connections(ctx)
	if err == nil && conns != nil {
		b.Connections = conns
	}
	if sr, ok := p.(bridge.StatusReporter); ok {
		b.Reachable, b.Detail = sr.Diagnose()
		return b
	}
	b.Reachable = err == nil
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded):
		b.Detail = "the platform did not list its connections in time"
	default:
		b.Detail = "the platform did not list its connections"
	}
	return b
}

// diagnostics answers FnDiagnostics.
func (a *Agent) diagnostics(ctx context.Context, _ protocol.NoArgs) (protocol.Diagnostics, error) {
	return a.Diagnostics(ctx), nil
}

// kickDiagnostics asks runDiagnostics to send the diagnostics (the tunnel
// connected); it never blocks.
func (a *Agent) kickDiagnostics() {
	select {
	case a.diagKick <- struct{}{}:
	default:
	}
}

// runDiagnostics sends EventDiagnostics after each connection to the
// relay, and keeps the snapshot file, until ctx ends. Run writes the last
// snapshot once everything else has stopped.
func (a *Agent) runDiagnostics(ctx context.Context) error {
	var tick <-chan time.Time
	if a.opts.Diagnostics.SnapshotFile != "" {
		t := time.NewTicker(a.opts.Diagnostics.SnapshotEvery)
		defer t.Stop()
		tick = t.C
		a.writeSnapshot(a.Diagnostics(ctx))
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.diagKick:
			d := a.Diagnostics(ctx)
			a.sendDiagnostics(d)
			a.writeSnapshot(d)
		case <-tick:
			a.writeSnapshot(a.Diagnostics(ctx))
		}
	}
}

// sendDiagnostics sends d to the relay, with fewer errors if it would not
// fit in an event. A tunnel that dropped meanwhile sends it after its next
// connection.
func (a *Agent) sendDiagnostics(d protocol.Diagnostics) {
	if !a.tunnel.Connected() {
		return
	}
	for {
		raw, err := json.Marshal(d)
		if err != nil {
			return // not for a struct of strings and numbers
		}
		if len(raw) <= maxDiagnosticsEvent {
			break
		}
		if len(d.Errors) == 0 {
			a.diagLog.Warn("the diagnostics are too large to send to the relay", zap.Int("bytes", len(raw)))
			return
		}
		d.Errors = d.Errors[:len(d.Errors)/2]
	}
	if err := a.tunnel.SendEvent(protocol.EventDiagnostics, d); err != nil {
		a.diagLog.Debug("the diagnostics were not sent; the tunnel is gone", zap.Error(err))
	}
}

// finalSnapshot writes the snapshot once Run's parts have stopped, so it
// shows the tunnel down and the platform as the agent left it.
func (a *Agent) finalSnapshot() {
	if a.opts.Diagnostics.SnapshotFile == "" {
		return
	}
	a.writeSnapshot(a.Diagnostics(context.Background()))
}

// writeSnapshot writes the snapshot file, if one is configured. A failure
// is logged once until a write succeeds again.
func (a *Agent) writeSnapshot(d protocol.Diagnostics) {
	path := a.opts.Diagnostics.SnapshotFile
	if path == "" {
		return
	}
	err := diag.WriteSnapshot(path, d)
	a.diagMu.Lock()
	failing := a.snapshotFailing
	a.snapshotFailing = err != nil
	a.diagMu.Unlock()
	switch {
	case err != nil && !failing:
		a.diagLog.Warn("writing the diagnostics snapshot failed", zap.String("file", path), zap.Error(err))
	case err == nil && failing:
		a.diagLog.Info("the diagnostics snapshot is written again", zap.String("file", path))
	}
}
