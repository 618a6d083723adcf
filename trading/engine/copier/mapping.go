package copier

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strings"

	"tradebridge/protocol"
)

// copyID returns the deterministic id of a follower order: IDPrefix and
// 20 hex digits of a hash of parts. The same parts give the same id, so a
// copy placed again is refused by the platform.
func copyID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	return IDPrefix + hex.EncodeToString(h.Sum(sum[:0])[:10])
}

// isCopy reports whether an order id is one a copier placed.
func isCopy(orderID string) bool { return strings.HasPrefix(orderID, IDPrefix) }

// scale returns q × ratio rounded half away from zero (q ≥ 0).
func scale(q int, ratio float64) int { return int(math.Round(float64(q) * ratio)) }

// scaleSigned scales a signed quantity, rounding its size.
func scaleSigned(q int, ratio float64) int {
	if q < 0 {
		return -scale(-q, ratio)
	}
	return scale(q, ratio)
}

// mapInstrument returns the follower contract of a leader contract: the
// root replaced as the copier says, the contract month kept. ok is false
// when the copier does not copy the instrument (filtered out, or a name
// the grammar does not read).
func (c *copierCfg) mapInstrument(leaderInstrument string) (string, bool) {
	in, err := protocol.ParseInstrument(protocol.NormalizeInstrument(leaderInstrument))
	if err != nil {
		return "", false
	}
	if c.roots != nil && !c.roots[in.Root] {
		return "", false
	}
	if to, ok := c.repl[in.Root]; ok {
		in.Root = to
		return in.String(), true
	}
	return leaderInstrument, true
}

// managesRoot reports whether auto-sync aligns a follower's positions in
// root: every root when the copier copies all, else the copied roots as
// replaced.
func (c *copierCfg) managesRoot(root string) bool {
	if c.roots == nil {
		return true
	}
	for r := range c.roots {
		if to, ok := c.repl[r]; ok {
			r = to
		}
		if r == root {
			return true
		}
	}
	return false
}

// flip returns the other side of action.
func flip(action string) string {
	if action == protocol.ActionBuy {
		return protocol.ActionSell
	}
	return protocol.ActionBuy
}

// priced is an order's type and prices as a follower copies it.
type priced struct {
	orderType         string
	limitPrice, stopP float64
}

// mapPrices returns the type and prices of a copy. A straight copy keeps
// them. An inverse copy trades the other side at the same price, so it
// triggers where the leader's does: a Limit at P becomes a StopMarket at
// P, a StopMarket at P a Limit at P, a StopLimit (stop S) a Limit at S,
// and a Market stays a Market.
func mapPrices(orderType string, limit, stop float64, inverse bool) priced {
	if !inverse {
		return priced{orderType, limit, stop}
	}
	switch orderType {
	case protocol.OrderTypeLimit:
		return priced{protocol.OrderTypeStopMarket, 0, limit}
	case protocol.OrderTypeStopMarket:
		return priced{protocol.OrderTypeLimit, stop, 0}
	case protocol.OrderTypeStopLimit:
		return priced{protocol.OrderTypeLimit, stop, 0}
	}
	return priced{orderType, limit, stop}
}
