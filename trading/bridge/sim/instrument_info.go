package sim

import (
	"context"
	"time"

	"tradebridge/protocol"
)

// Instrument resolves an instrument and describes its contract at the
// simulator's clock (futures.Contract.Info): exchange, tick size and
// values, expiry and roll date, the next contract, the trading hours,
// whether the market is open now, and the next sessions (the current one
// first while it is open), none past the contract's expiry.
func (p *Platform) Instrument(ctx context.Context, instrument string) (protocol.InstrumentInfo, error) {
	return locked(ctx, p, func(now time.Time) (protocol.InstrumentInfo, error) {
		c, err := resolve(instrument, now)
		if err != nil {
			return protocol.InstrumentInfo{}, err
		}
		return c.Info(now), nil
	})
}
