package sim

import (
	"context"
	"time"

	"tradebridge/protocol"
)

// Instrument resolves an instrument and describes its contract: exchange,
// tick size and values, expiry and roll date, the next contract, the
// trading hours, whether the market is open now, and the next sessions (the
// current one first while it is open), none past the contract's expiry.
func (p *Platform) Instrument(ctx context.Context, instrument string) (protocol.InstrumentInfo, error) {
	return locked(ctx, p, func(now time.Time) (protocol.InstrumentInfo, error) {
		c, err := resolve(instrument, now)
		if err != nil {
			return protocol.InstrumentInfo{}, err
		}
		return instrumentInfo(c, now), nil
	})
}

// instrumentInfo describes c at now.
func instrumentInfo(c contract, now time.Time) protocol.InstrumentInfo {
	r := c.root
	info := protocol.InstrumentInfo{
		Instrument:     c.name,
		Root:           r.symbol,
		Description:    r.desc,
		Exchange:       r.exchange,
		Currency:       "USD",
		TickSize:       r.tickSize,
		PointValue:     r.pointValue,
		TickValue:      r.tickValue,
		Expiry:         c.lastDay.Format(time.DateOnly),
		RollDate:       c.rollDay.Format(time.DateOnly),
		NextInstrument: c.next().name,
		TradingHours:   tradingHours,
		MarketOpen:     marketOpen(c, now),
		Sessions:       []protocol.TradingWindow{},
	}
	for s := sessionFrom(now); len(info.Sessions) < upcomingSessions && s.open.Before(c.expiresAt); s = s.next() {
		info.Sessions = append(info.Sessions, protocol.TradingWindow{
			Open: s.open.UTC().Format(time.RFC3339), Close: s.close.UTC().Format(time.RFC3339)})
	}
	return info
}
