package ninjatrader

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"tradebridge/trading/bridge/ninjatrader/ntwire"
)

// DefaultDiscoveryFile is where the add-on writes its discovery file for
// the user running it: %LOCALAPPDATA%\TradeBridge\ninjatrader-addon.json
// on Windows (the trader's own profile, which other users cannot write),
// and ninjatrader-addon.json in the user's configuration folder
// elsewhere. The SYSTEM service does not use it: it finds the file of the
// trader whose NinjaTrader runs (Options.Sessions).
func DefaultDiscoveryFile() string {
	if runtime.GOOS == "windows" {
		dir := os.Getenv("LOCALAPPDATA")
		if dir == "" {
			dir, _ = os.UserCacheDir() // %LocalAppData% on Windows
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
// the user's Documents, or "" when there is no home folder. The add-on's
// discovery file names the real one (DiscoveredUserDataDir).
func DefaultNinjaTraderDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, "Documents", "NinjaTrader 8")
}

// DiscoveredUserDataDir is the NinjaTrader user folder the add-on wrote
// into the discovery file at path, or "" when there is no file or it
// names no absolute folder.
func DiscoveredUserDataDir(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var d ntwire.Discovery
	if json.Unmarshal(b, &d) != nil || !filepath.IsAbs(d.UserDataDir) {
		return ""
	}
	return d.UserDataDir
}

// addonSource is the add-on's main source file relative to NinjaTrader's
// user folder, present once the add-on is imported.
var addonSource = filepath.Join("bin", "Custom", "AddOns", "TradeBridgeAddOn.cs")

// errNoDiscovery reports a missing discovery file.
var errNoDiscovery = errors.New("ninjatrader: no discovery file")

// ErrNoListener is returned by a PortOwner when nothing listens on the
// port.
var ErrNoListener = errors.New("ninjatrader: nothing listens on the add-on's port")

// PortOwner tells which process listens on a loopback port. The bridge
// connects to the add-on only when the process the discovery file names
// listens on its port and is NinjaTrader, so a file or a listener another
// user planted is not trusted.
type PortOwner interface {
	// ListensOn reports whether process pid owns the TCP listener on
	// 127.0.0.1:port; ErrNoListener when nothing listens there.
	ListensOn(pid, port int) (bool, error)
	// IsNinjaTrader reports whether process pid is NinjaTrader
	// (NinjaTrader.exe, installed where users cannot write, on Windows).
	IsNinjaTrader(pid int) (bool, error)
}

// TraderProcess is a running NinjaTrader, as a SessionScanner finds it:
// its process id, its user (a SID on Windows) and that user's discovery
// file.
type TraderProcess struct {
	PID           int
	User          string
	DiscoveryFile string
}

// SessionScanner finds the running NinjaTraders for an agent that runs
// as another user than the trader (the SYSTEM service).
type SessionScanner interface {
	// NinjaTraderProcesses lists the running NinjaTrader processes.
	NinjaTraderProcesses() ([]TraderProcess, error)
	// FileOwner is the owner of the file at path (a SID on Windows), read
	// without following a link; a link is an error.
	FileOwner(path string) (string, error)
	// Trusted reports whether owner is the system's (SYSTEM or the
	// Administrators), who may own any user's discovery file.
	Trusted(owner string) bool
}

// SeveralTradersError is the refusal to choose between the NinjaTraders
// of Count users.
type SeveralTradersError struct{ Count int }

func (e *SeveralTradersError) Error() string {
	return fmt.Sprintf("NinjaTrader runs in %d users' sessions; the service serves one trader: "+
		"close the others, or run the agent in the trader's session (agent run)", e.Count)
}

// errDiscoveryOwner reports a discovery file that its trader does not
// own.
var errDiscoveryOwner = errors.New("ninjatrader: the discovery file does not belong to the user running NinjaTrader")

// SelectDiscovery is the discovery file of the one user whose NinjaTrader
// runs: errNoDiscovery when none runs, a *SeveralTradersError when
// NinjaTrader runs for more than one user, and an error when the file is
// owned by someone else than that user (or the system).
func SelectDiscovery(s SessionScanner) (string, error) {
	procs, err := s.NinjaTraderProcesses()
	if err != nil {
		return "", fmt.Errorf("ninjatrader: listing NinjaTrader's processes: %w", err)
	}
	users := map[string]TraderProcess{} // by user: one trader may run several processes
	var p TraderProcess
	for _, proc := range procs {
		users[strings.ToUpper(proc.User)], p = proc, proc
	}
	switch len(users) {
	case 0:
		return "", errNoDiscovery
	case 1:
	default:
		return "", &SeveralTradersError{Count: len(users)}
	}
	owner, err := s.FileOwner(p.DiscoveryFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", errNoDiscovery
	case err != nil:
		return "", fmt.Errorf("%w: %v", errDiscoveryOwner, err)
	case !strings.EqualFold(owner, p.User) && !s.Trusted(owner):
		return "", errDiscoveryOwner
	}
	return p.DiscoveryFile, nil
}

// errPortOwner reports that the add-on's port is not NinjaTrader's.
var errPortOwner = errors.New("ninjatrader: the add-on's port does not belong to the NinjaTrader the discovery file names")

// discoveryFile is the discovery file to read: the configured one, or
// the running trader's (Options.Sessions).
func (p *Platform) discoveryFile() (string, error) {
	if p.opts.Sessions == nil {
		return p.opts.DiscoveryFile, nil
	}
	return SelectDiscovery(p.opts.Sessions)
}

// readDiscovery reads the add-on's discovery file, applies the configured
// overrides, and checks that the port is the named NinjaTrader's.
func (p *Platform) readDiscovery() (ntwire.Discovery, error) {
	var d ntwire.Discovery
	file, err := p.discoveryFile()
	if err != nil && !errors.Is(err, errNoDiscovery) {
		return d, err
	}
	var b []byte
	if err == nil {
		b, err = os.ReadFile(file)
	}
	switch {
	case errors.Is(err, errNoDiscovery), errors.Is(err, fs.ErrNotExist):
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
	if filepath.IsAbs(d.UserDataDir) {
		p.mu.Lock()
		p.userDataDir = d.UserDataDir
		p.mu.Unlock()
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
	if p.opts.Port != 0 && p.opts.OverrideTrusted {
		return d, nil // an administrator's settings: no process to check
	}
	return d, p.checkPortOwner(d)
}

// checkPortOwner checks that the process d names listens on d's port and
// is NinjaTrader.
func (p *Platform) checkPortOwner(d ntwire.Discovery) error {
	if p.opts.PortOwner == nil {
		return nil
	}
	if d.PID <= 0 {
		return fmt.Errorf("%w: the file names no process", errPortOwner)
	}
	owns, err := p.opts.PortOwner.ListensOn(d.PID, d.Port)
	switch {
	case errors.Is(err, ErrNoListener):
		return err
	case err != nil:
		return fmt.Errorf("%w: %v", errPortOwner, err)
	case !owns:
		return errPortOwner
	}
	nt, err := p.opts.PortOwner.IsNinjaTrader(d.PID)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %v", errPortOwner, err)
	case !nt:
		return fmt.Errorf("%w: the process is not NinjaTrader", errPortOwner)
	}
	return nil
}

// addonInstalled reports whether the add-on's source is in NinjaTrader's
// folder, when that folder is known: the configured one, else the one
// the add-on's discovery file last named.
func (p *Platform) addonInstalled() (installed, known bool) {
	dir := p.opts.NinjaTraderDir
	if dir == "" {
		p.mu.Lock()
		dir = p.userDataDir
		p.mu.Unlock()
	}
	if dir == "" && p.opts.Sessions == nil {
		dir = DefaultNinjaTraderDir()
	}
	if dir == "" {
		return false, false
	}
	if _, err := os.Stat(dir); err != nil {
		return false, false
	}
	_, err := os.Stat(filepath.Join(dir, addonSource))
	return err == nil, true
}
