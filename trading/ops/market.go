package ops

import (
	"context"
	"errors"
	"strings"
	"time"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// instrumentOrRoot picks the instrument of a market call: instrument when
// sent, else root.
func instrumentOrRoot(instrument, root string) (string, error) {
	if strings.TrimSpace(instrument) == "" && strings.TrimSpace(root) == "" {
		return "", missing("instrument or root")
	}
	if err := text("instrument", instrument, maxNameLen); err != nil {
		return "", err
	}
	if err := text("root", root, maxNameLen); err != nil {
		return "", err
	}
	if strings.TrimSpace(instrument) != "" {
		return instrument, nil
	}
	return root, nil
}

// GetQuote returns the current quote of an instrument (a root means its
// front month); with showRollover also the quote of the contract that
// follows it.
func (o *Ops) GetQuote(ctx context.Context, a protocol.QuoteArgs) (protocol.QuoteResult, error) {
	name, err := instrumentOrRoot(a.Instrument, a.Root)
	if err != nil {
		return protocol.QuoteResult{}, err
	}
	if !a.ShowRollover {
		q, err := o.p.Quote(ctx, name)
		return protocol.QuoteResult{Quote: q}, wireError(err)
	}
	info, err := o.p.Instrument(ctx, name)
	if err != nil {
		return protocol.QuoteResult{}, wireError(err)
	}
	q, err := o.p.Quote(ctx, info.Instrument)
	if err != nil {
		return protocol.QuoteResult{}, wireError(err)
	}
	res := protocol.QuoteResult{Quote: q}
	if info.NextInstrument != "" {
		next, err := o.p.Quote(ctx, info.NextInstrument)
		if err != nil {
			return protocol.QuoteResult{}, wireError(err)
		}
		res.Rollover = &next
	}
	return res, nil
}

// MarketInfo describes an instrument (a root means its front month).
func (o *Ops) MarketInfo(ctx context.Context, a protocol.InstrumentArgs) (protocol.InstrumentInfo, error) {
	name, err := instrumentOrRoot(a.Instrument, a.Root)
	if err != nil {
		return protocol.InstrumentInfo{}, err
	}
	info, err := o.p.Instrument(ctx, name)
	return info, wireError(err)
}

// Bounds and defaults of GetBars.
const (
	defaultBarsLimit = 5000
	maxBarsLimit     = 20_000
	maxDaysBack      = 3650
	maxBarsTimeoutMs = 120_000
)

// mergePolicies are NinjaTrader's merge policies, accepted for
// compatibility; futures contracts of the simulator are never merged.
var mergePolicies = []string{"DoNotMerge", "MergeBackAdjusted", "MergeNonBackAdjusted", "UseGlobalSettings"}

// GetBars returns bars of an instrument: periodType (default minute) and
// period (default 1), over [from, to] when from is sent (to defaults to
// now), else over daysBack days (default 1) back from now, at most limit
// bars (default 5000, the most recent ones). timeoutMs bounds the call.
// splitAdjust, dividendAdjust and mergePolicy are accepted and have no
// effect on futures.
func (o *Ops) GetBars(ctx context.Context, a protocol.BarsArgs) (protocol.Bars, error) {
	req, timeout, err := checkBars(a, o.opts.Now())
	if err != nil {
		return protocol.Bars{}, err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	b, err := o.p.Bars(ctx, req)
	if err != nil {
		return protocol.Bars{}, wireError(err)
	}
	if b.Bars == nil {
		b.Bars = []protocol.Bar{}
	}
	return b, nil
}

func checkBars(a protocol.BarsArgs, now time.Time) (bridge.BarsRequest, time.Duration, error) {
	req := bridge.BarsRequest{Instrument: a.Instrument, PeriodType: protocol.PeriodMinute, Period: 1, DaysBack: 1, Limit: defaultBarsLimit}
	if strings.TrimSpace(a.Instrument) == "" {
		return req, 0, missing("instrument")
	}
	if err := text("instrument", a.Instrument, maxNameLen); err != nil {
		return req, 0, err
	}
	if a.PeriodType != "" {
		pt, ok := protocol.NormalizePeriodType(a.PeriodType)
		if !ok {
			return req, 0, invalid("periodType must be tick, second, minute, day, week or month")
		}
		req.PeriodType = pt
	}
	if a.Period != nil {
		if *a.Period < 1 || *a.Period > 100_000 {
			return req, 0, invalid("period must be between 1 and 100000")
		}
		req.Period = *a.Period
	}
	if a.DaysBack != nil {
		if *a.DaysBack < 0 || *a.DaysBack > maxDaysBack {
			return req, 0, invalid("daysBack must be between 0 and 3650")
		}
		req.DaysBack = *a.DaysBack
	}
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > maxBarsLimit {
			return req, 0, invalid("limit must be between 1 and 20000")
		}
		req.Limit = *a.Limit
	}
	var timeout time.Duration
	if a.TimeoutMs != nil {
		if *a.TimeoutMs < 1 || *a.TimeoutMs > maxBarsTimeoutMs {
			return req, 0, invalid("timeoutMs must be between 1 and 120000")
		}
		timeout = time.Duration(*a.TimeoutMs) * time.Millisecond
	}
	if a.MergePolicy != "" {
		ok := false
		for _, m := range mergePolicies {
			ok = ok || strings.EqualFold(a.MergePolicy, m)
		}
		if !ok {
			return req, 0, invalid("mergePolicy must be DoNotMerge, MergeBackAdjusted, MergeNonBackAdjusted or UseGlobalSettings")
		}
	}
	if a.To != "" && a.From == "" {
		return req, 0, missing("from")
	}
	if a.From != "" {
		from, ok := parseTime(a.From)
		if !ok {
			return req, 0, invalid("from must be an RFC 3339 time or a YYYY-MM-DD date")
		}
		to := now
		if a.To != "" {
			if to, ok = parseTime(a.To); !ok {
				return req, 0, invalid("to must be an RFC 3339 time or a YYYY-MM-DD date")
			}
		}
		if to.Before(from) {
			return req, 0, invalid("from must not be after to")
		}
		req.From, req.To, req.DaysBack = from, to, 0
	}
	return req, timeout, nil
}

// parseTime reads an RFC 3339 time, or a YYYY-MM-DD date as midnight UTC.
func parseTime(s string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, true
	}
	return time.Time{}, false
}

// badRequest recognizes a platform's refusal of a malformed request and
// returns its reason, a fixed sentence that never repeats the caller's
// input.
func badRequest(err error) (string, bool) {
	var re *bridge.RequestError
	if errors.As(err, &re) {
		return re.Reason, true
	}
	return "", false
}
