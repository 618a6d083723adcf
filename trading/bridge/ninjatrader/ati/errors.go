package ati

import (
	"errors"
	"fmt"

	"tradebridge/trading/bridge"
)

// ErrNeedsAddon reports a request the Automated Trading Interface cannot
// serve: account values, executions, quotes, bars, the ATM template list,
// strategies, watermarks, and orders this process did not place through
// the ATI. They need the tradebridge NinjaScript add-on, installed in
// NinjaTrader with Tools > Import > NinjaScript Add-On… and then enabled.
// Callers wrap it; this package returns it wrapped for orders it does not
// know (together with bridge.ErrOrderNotFound).
var ErrNeedsAddon = errors.New("ati: needs the tradebridge NinjaScript add-on " +
	"(NinjaTrader: Tools > Import > NinjaScript Add-On…, then enable it)")

// ErrFolder reports that NinjaTrader's ATI folders cannot be used: the
// incoming or outgoing folder is missing, or cannot be read or written.
// The detail (paths, system errors) is logged, never returned.
var ErrFolder = errors.New("ati: NinjaTrader's incoming/outgoing folders cannot be used " +
	"(is NinjaTrader installed, and the Automated Trading Interface enabled in Tools > Options > Automated Trading Interface?)")

// ErrNotPickedUp reports an order instruction file NinjaTrader did not read
// in time and that was then withdrawn (deleted) unread: nothing was done,
// and nothing can be done later by a NinjaTrader that starts reading the
// folder again. It matches bridge.ErrNotConnected.
var ErrNotPickedUp = fmt.Errorf("ati: NinjaTrader did not pick up the order instruction file; "+
	"it was withdrawn unread (is the Automated Trading Interface enabled?): %w", bridge.ErrNotConnected)

// ErrClosed is returned by the methods of closed Files. It matches
// bridge.ErrNotConnected.
var ErrClosed = fmt.Errorf("ati: closed: %w", bridge.ErrNotConnected)

// errUnknownOrder reports an order this process did not place: the ATI
// cannot tell whether it exists, nor describe it.
var errUnknownOrder = fmt.Errorf("ati: no order of this agent has that id: %w (%w)", bridge.ErrOrderNotFound, ErrNeedsAddon)

// reject reports an order (or a change, or a cancel) refused with reason.
func reject(reason string) error { return &bridge.RejectError{Reason: reason} }
