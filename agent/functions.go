package agent

import (
	"context"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/dispatch"
)

// register gives the stack's dispatcher, which serves the operations
// already, the agent's own functions: the configuration push, the restart
// check, the engines' status and the diagnostics.
func (a *Agent) register() error {
	for name, h := range map[string]dispatch.Handler{
		protocol.FnApplyConfig:         dispatch.Func(a.applyConfig),
		protocol.FnCheckMonitorRestart: dispatch.Func(a.stack.Monitors.CheckRestart),
		protocol.FnEngineStatus:        dispatch.Func(a.engineStatus),
		protocol.FnDiagnostics:         dispatch.Func(a.diagnostics),
	} {
		if err := a.stack.Dispatcher.Register(name, h); err != nil {
			return err
		}
	}
	return nil
}

// applyConfig applies the relay's management configuration (the relay's
// internal FnApplyConfig) and answers the version the agent runs: the
// pushed one, or the newer one it already had. The configuration is saved
// before it is applied and acknowledged, so an agent that restarts runs it
// even before it reaches the relay again. It is not a write of the
// exactly-once kind: a repeated push changes nothing by its version.
//
// A configuration that turns the kill switch on with flattenOnKill is
// flattened before the answer: the controls engine's Tick runs once here
// (the engine's own Run does not flatten twice, and retries a flatten
// that failed), so that the relay, which pushes the stored configuration
// before any other call on connect, serves nothing before the flatten.
func (a *Agent) applyConfig(ctx context.Context, cfg protocol.Config) (protocol.ConfigApplied, error) {
	if cfg.Version <= 0 {
		return protocol.ConfigApplied{}, protocol.NewError(protocol.CodeInvalidArgument, "the configuration's version must be at least 1")
	}
	before := a.config.Version()
	if cfg.Version > before {
		if err := a.state.SaveConfig(&cfg); err != nil {
			a.log.Error("saving the pushed configuration failed; it is not applied", zap.Int64("version", cfg.Version), zap.Error(err))
			return protocol.ConfigApplied{}, protocol.NewError(protocol.CodeInternal, "the agent could not save the configuration; it runs the previous one")
		}
	}
	v := a.config.Apply(&cfg)
	if v == cfg.Version && v != before {
		a.log.Info("management configuration applied", zap.Int64("version", v),
			zap.Int("copiers", len(cfg.Copiers)), zap.Int("monitors", len(cfg.Monitors)),
			zap.Bool("killSwitch", cfg.Controls.KillSwitch))
		if cfg.Controls.KillSwitch && cfg.Controls.FlattenOnKill {
			a.stack.Controls.Tick(ctx)
		}
	}
	return protocol.ConfigApplied{Version: v}, nil
}

// engineStatus answers FnEngineStatus.
func (a *Agent) engineStatus(context.Context, protocol.NoArgs) (protocol.EngineStatus, error) {
	return protocol.EngineStatus{
		ConfigVersion: a.config.Version(),
		Copiers:       orEmpty(a.stack.Copiers.Status()),
		Monitors:      orEmpty(a.stack.Monitors.Status()),
		Controls:      a.stack.Controls.Status(),
	}, nil
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
