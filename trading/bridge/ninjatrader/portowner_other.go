//go:build !linux && !windows

package ninjatrader

// DefaultPortOwner is nil on this system: the bridge does not check who
// listens on the add-on's port (NinjaTrader runs on Windows only).
func DefaultPortOwner() PortOwner { return nil }

// DefaultSessions is nil on this system: the service reads the
// configured discovery file.
func DefaultSessions() SessionScanner { return nil }
