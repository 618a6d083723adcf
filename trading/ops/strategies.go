package ops

import (
	"context"
	"strings"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// ListStrategies returns the account's strategies, without the ended ones
// unless includeTerminal.
func (o *Ops) ListStrategies(ctx context.Context, a protocol.ListStrategiesArgs) ([]protocol.Strategy, error) {
	if err := account(a.Account); err != nil {
		return nil, err
	}
	return o.strategies(ctx, a.Account, a.IncludeTerminal)
}

// ListAllStrategies is ListStrategies over every account.
func (o *Ops) ListAllStrategies(ctx context.Context, a protocol.AllStrategiesArgs) ([]protocol.Strategy, error) {
	accounts, err := o.accounts(ctx, "")
	if err != nil {
		return nil, err
	}
	out := []protocol.Strategy{}
	for _, acct := range accounts {
		ss, err := o.strategies(ctx, acct, a.IncludeTerminal)
		if err != nil {
			return nil, err
		}
		out = append(out, ss...)
	}
	return out, nil
}

func (o *Ops) strategies(ctx context.Context, account string, includeTerminal bool) ([]protocol.Strategy, error) {
	all, err := o.p.Strategies(ctx, account)
	if err != nil {
		return nil, wireError(err)
	}
	out := []protocol.Strategy{}
	for _, s := range all {
		if includeTerminal || !(s.Terminal || protocol.TerminalStrategyState(s.State)) {
			out = append(out, s)
		}
	}
	return out, nil
}

// strategyID checks the account and picks the strategy id from id or
// strategyId.
func strategyID(acct, id, strategyID string) (string, error) {
	var miss fields
	miss.need("account", strings.TrimSpace(acct) != "")
	miss.need("id", strings.TrimSpace(id) != "" || strings.TrimSpace(strategyID) != "")
	if err := miss.err(); err != nil {
		return "", err
	}
	if err := account(acct); err != nil {
		return "", err
	}
	if id != "" && strategyID != "" && id != strategyID {
		return "", invalid("id and strategyId differ; send one of them")
	}
	if id == "" {
		id = strategyID
	}
	return id, text("id", id, maxNameLen)
}

// GetStrategy returns one strategy of the account.
func (o *Ops) GetStrategy(ctx context.Context, a protocol.StrategyArgs) (protocol.Strategy, error) {
	id, err := strategyID(a.Account, a.ID, a.StrategyID)
	if err != nil {
		return protocol.Strategy{}, err
	}
	return o.findStrategy(ctx, a.Account, id)
}

func (o *Ops) findStrategy(ctx context.Context, account, id string) (protocol.Strategy, error) {
	all, err := o.p.Strategies(ctx, account)
	if err != nil {
		return protocol.Strategy{}, wireError(err)
	}
	for _, s := range all {
		if s.ID == id {
			return s, nil
		}
	}
	return protocol.Strategy{}, protocol.NewError(protocol.CodeStrategyNotFound, "no such strategy on the account")
}

// StartStrategy starts a strategy of a platform class on the account.
// mode is Realtime (default: start trading) or Disabled; periodType
// defaults to minute and period to 1.
func (o *Ops) StartStrategy(ctx context.Context, a protocol.StartStrategyArgs) (protocol.Strategy, error) {
	var miss fields
	miss.need("account", strings.TrimSpace(a.Account) != "")
	miss.need("strategyClass", strings.TrimSpace(a.StrategyClass) != "")
	miss.need("instrument", strings.TrimSpace(a.Instrument) != "")
	if err := miss.err(); err != nil {
		return protocol.Strategy{}, err
	}
	if err := account(a.Account); err != nil {
		return protocol.Strategy{}, err
	}
	if err := text("strategyClass", a.StrategyClass, maxTagLen); err != nil {
		return protocol.Strategy{}, err
	}
	mode := protocol.StrategyModeRealtime
	if a.Mode != "" {
		m, ok := normalizeMode(a.Mode)
		if !ok {
			return protocol.Strategy{}, invalid("mode must be Realtime or Disabled")
		}
		mode = m
	}
	periodType := protocol.PeriodMinute
	if a.PeriodType != "" {
		pt, ok := protocol.NormalizePeriodType(a.PeriodType)
		if !ok {
			return protocol.Strategy{}, invalid("periodType must be tick, second, minute, day, week or month")
		}
		periodType = pt
	}
	period := a.Period
	if period == 0 {
		period = 1
	}
	if period < 1 || period > 100_000 {
		return protocol.Strategy{}, invalid("period must be between 1 and 100000")
	}
	info, err := o.resolve(ctx, "instrument", a.Instrument)
	if err != nil {
		return protocol.Strategy{}, err
	}
	if err := o.admitEntry(ctx, key{a.Account, info.Instrument}); err != nil {
		return protocol.Strategy{}, err
	}
	s, err := o.p.StartStrategy(ctx, bridge.StrategyRequest{
		Account: a.Account, Class: a.StrategyClass, Instrument: info.Instrument, Mode: mode,
		PeriodType: periodType, Period: period, Parameters: a.Parameters,
	})
	return s, wireError(err)
}

func normalizeMode(s string) (string, bool) {
	for _, m := range []string{protocol.StrategyModeRealtime, protocol.StrategyModeDisabled} {
		if strings.EqualFold(s, m) {
			return m, true
		}
	}
	return "", false
}

// CloseStrategy closes a strategy: it ends for good, its orders are
// cancelled and its position flattened. With strategyTag, the strategy's
// account and instrument must not be owned by another tag unless force.
// signalName is refused: the agent can only close a whole strategy.
func (o *Ops) CloseStrategy(ctx context.Context, a protocol.CloseStrategyArgs) (protocol.Strategy, error) {
	id, err := strategyID(a.Account, a.ID, a.StrategyID)
	if err != nil {
		return protocol.Strategy{}, err
	}
	if a.SignalName != "" {
		return protocol.Strategy{}, invalid("signalName is not supported: CloseStrategy closes the whole strategy")
	}
	if err := text("strategyTag", a.StrategyTag, maxTagLen); err != nil {
		return protocol.Strategy{}, err
	}
	s, err := o.findStrategy(ctx, a.Account, id)
	if err != nil {
		return protocol.Strategy{}, err
	}
	k := key{a.Account, s.Instrument}
	unlock, err := o.locks.lock(ctx, k)
	if err != nil {
		return protocol.Strategy{}, err
	}
	defer unlock()
	if a.StrategyTag != "" && !a.Force {
		st, err := o.read(ctx, k)
		if err != nil {
			return protocol.Strategy{}, err
		}
		if st.owner != "" && st.owner != a.StrategyTag {
			return protocol.Strategy{}, protocol.NewError(protocol.CodePositionOwned, "the strategy's instrument is owned by strategy tag "+quoteTag(st.owner)+"; send force to act anyway")
		}
	}
	return o.setStrategy(ctx, a.Account, id, bridge.StrategyClose)
}

// EnableStrategy lets a strategy trade.
func (o *Ops) EnableStrategy(ctx context.Context, a protocol.StrategyArgs) (protocol.Strategy, error) {
	id, err := strategyID(a.Account, a.ID, a.StrategyID)
	if err != nil {
		return protocol.Strategy{}, err
	}
	if o.gate.Load() != nil {
		ss, err := o.p.Strategies(ctx, a.Account)
		if err != nil {
			return protocol.Strategy{}, wireError(err)
		}
		for _, s := range ss {
			if s.ID == id {
				if err := o.admitEntry(ctx, key{a.Account, s.Instrument}); err != nil {
					return protocol.Strategy{}, err
				}
			}
		}
	}
	return o.setStrategy(ctx, a.Account, id, bridge.StrategyEnable)
}

// DisableStrategy stops a strategy from trading without ending it.
func (o *Ops) DisableStrategy(ctx context.Context, a protocol.StrategyArgs) (protocol.Strategy, error) {
	id, err := strategyID(a.Account, a.ID, a.StrategyID)
	if err != nil {
		return protocol.Strategy{}, err
	}
	return o.setStrategy(ctx, a.Account, id, bridge.StrategyDisable)
}

func (o *Ops) setStrategy(ctx context.Context, account, id string, action bridge.StrategyAction) (protocol.Strategy, error) {
	s, err := o.p.SetStrategyState(ctx, account, id, action)
	return s, wireError(err)
}
