package sim

import "time"

// afterAdvance runs at the end of begin, with p.mu held, once every market
// has moved to now and resting orders have been matched: it publishes the
// quotes of subscribed instruments and lets strategies act on closed bars.
func (p *Platform) afterAdvance(now time.Time) {}
