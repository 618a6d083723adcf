package ninjatrader

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"tradebridge/trading/bridge/ninjatrader/ntwire"
)

// DefaultDiscoveryFile is where the add-on writes its discovery file:
// %ProgramData%\TradeBridge\ninjatrader-addon.json on Windows (a place both
// a Windows service and the trader's desktop session can read), and
// ninjatrader-addon.json in the user's configuration folder elsewhere.
func DefaultDiscoveryFile() string {
	if runtime.GOOS == "windows" {
		dir := os.Getenv("ProgramData")
		if dir == "" {
			dir = `C:\ProgramData`
		}
		return filepath.Join(dir, "TradeBridge", ntwire.DiscoveryFileName)
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "tradebridge", ntwire.DiscoveryFileName)
}

// DefaultNinjaTraderDir is NinjaTrader's user folder, "NinjaTrader 8" in
// the user's Documents, or "" when there is no home folder.
func DefaultNinjaTraderDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, "Documents", "NinjaTrader 8")
}

// addonSource is the add-on's main source file relative to NinjaTrader's
// user folder, present once the add-on is imported.
var addonSource = filepath.Join("bin", "Custom", "AddOns", "TradeBridgeAddOn.cs")

// errNoDiscovery reports a missing discovery file.
var errNoDiscovery = errors.New("ninjatrader: no discovery file")

// readDiscovery reads the add-on's discovery file and applies the
// configured overrides.
func (p *Platform) readDiscovery() (ntwire.Discovery, error) {
	var d ntwire.Discovery
	b, err := os.ReadFile(p.opts.DiscoveryFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if p.opts.Port == 0 || p.opts.Secret == "" {
			return d, errNoDiscovery
		}
	case err != nil:
		return d, fmt.Errorf("ninjatrader: read the discovery file: %w", err)
	default:
		if err := json.Unmarshal(b, &d); err != nil {
			return d, fmt.Errorf("ninjatrader: the discovery file is not valid JSON: %w", err)
		}
	}
	if p.opts.Port != 0 {
		d.Port = p.opts.Port
	}
	if p.opts.Secret != "" {
		d.Secret = p.opts.Secret
	}
	if d.Port <= 0 || d.Port > 65535 || d.Secret == "" {
		return d, errors.New("ninjatrader: the discovery file names no port or secret")
	}
	return d, nil
}

// addonInstalled reports whether the add-on's source is in NinjaTrader's
// folder, when that folder is known.
func (p *Platform) addonInstalled() (installed, known bool) {
	if p.opts.NinjaTraderDir == "" {
		return false, false
	}
	if _, err := os.Stat(p.opts.NinjaTraderDir); err != nil {
		return false, false
	}
	_, err := os.Stat(filepath.Join(p.opts.NinjaTraderDir, addonSource))
	return err == nil, true
}
