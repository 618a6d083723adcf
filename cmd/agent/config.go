package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"go.uber.org/zap"

	"tradebridge/agent"
	"tradebridge/agent/sysproxy"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/ninjatrader"
	"tradebridge/trading/bridge/ninjatrader/ati"
	"tradebridge/trading/bridge/sim"
)

// Config is the agent's configuration, as the JSON config file holds it:
//
//	{"relayUrl": "https://relay.example", "token": "tb_agent_…", "platform": "sim"}
type Config struct {
	RelayURL string `json:"relayUrl"`
	Token    string `json:"token"`
	Platform string `json:"platform"`
	// UserID is the relay's user the token belongs to, as `agent pair`
	// learnt it; it names the state file, so that pairing the PC again
	// with the same account keeps the agent's state. Setting another
	// token without it clears it.
	UserID string `json:"userId,omitempty"`
	// SimStart, with the simulator, is the RFC 3339 instant its clock
	// starts at (it then runs at real speed); empty means now.
	SimStart string `json:"simStart,omitempty"`
	// DataDir is the folder of the agent's state file; empty means the
	// user's configuration folder (see defaultDataDir), or the machine's
	// data folder when the agent runs as a service.
	DataDir string `json:"dataDir,omitempty"`
	// LogDir is the folder of the agent's rotating log file; empty means
	// the machine's log folder when the agent runs as a service, and no
	// log file in the foreground.
	LogDir string `json:"logDir,omitempty"`
	// Proxy is the proxy to the relay: "direct", or
	// http://[user:password@]host:port; empty means the environment's,
	// else the machine's (WinHTTP, automatic configuration). See
	// agent/sysproxy.
	Proxy string `json:"proxy,omitempty"`
	// ProxyPAC is the URL of a proxy auto-config script, used when
	// neither Proxy, the environment nor WinHTTP names a proxy; empty
	// means the one the machine names, or WPAD.
	ProxyPAC string `json:"proxyPac,omitempty"`
	// NinjaTrader configures the NinjaTrader bridge (--platform
	// ninjatrader); every field has a default.
	NinjaTrader NinjaTraderConfig `json:"ninjatrader,omitzero"`

	// asService: the agent runs as the system service (SYSTEM on
	// Windows), not in the trader's session.
	asService bool
	// adminOwned: the config file passed the service's ownership checks
	// (only SYSTEM and the Administrators may change it).
	adminOwned bool
	// platformDefaulted: no setting chose the platform.
	platformDefaulted bool
}

// NinjaTraderConfig is the "ninjatrader" part of the config file:
//
//	{"ninjatrader": {"dir": "D:\\Trading\\NinjaTrader 8", "ati": true}}
type NinjaTraderConfig struct {
	// DiscoveryFile is where the add-on writes its port and secret;
	// empty means the default: the user's own
	// (ninjatrader.DefaultDiscoveryFile) for `agent run`, and for the
	// Windows service the file of the trader whose NinjaTrader runs.
	DiscoveryFile string `json:"discoveryFile,omitempty"`
	// Port and Secret override the discovery file's. The process
	// listening on Port is checked to be NinjaTrader unless the config
	// file is the service's and only administrators can change it.
	Port   int    `json:"port,omitempty"`
	Secret string `json:"secret,omitempty"`
	// Dir is NinjaTrader's user folder ("Documents\\NinjaTrader 8"), where
	// the add-on is installed and the ATI folders are; empty means the
	// one the add-on's discovery file names (userDataDir), else
	// ninjatrader.DefaultNinjaTraderDir.
	Dir string `json:"dir,omitempty"`
	// ATI turns on the fallback to NinjaTrader's ATI order files while the
	// add-on cannot be reached; `agent run` in the trader's session only
	// (the Windows service refuses it: see checkServiceConfig).
	ATI bool `json:"ati,omitempty"`
}

// loadConfig merges flags over environment variables over the config file
// (path, else AGENT_CONFIG; none when both are empty); the platform is
// the simulator unless one is chosen.
func loadConfig(path string, flags Config, getenv func(string) string) (Config, error) {
	return loadConfigWith(path, flags, getenv, "sim")
}

// loadConfigWith is loadConfig with defaultPlatform as the platform when
// none is chosen.
func loadConfigWith(path string, flags Config, getenv func(string) string, defaultPlatform string) (Config, error) {
	var cfg Config
	if path == "" {
		path = getenv("AGENT_CONFIG")
	}
	if path != "" {
		var err error
		if cfg, err = readConfigFile(path); err != nil {
			return cfg, err
		}
	}
	pick := func(dst *string, env, flag string) {
		if v := getenv(env); v != "" {
			*dst = v
		}
		if flag != "" {
			*dst = flag
		}
	}
	pick(&cfg.RelayURL, "AGENT_RELAY_URL", flags.RelayURL)
	pick(&cfg.Token, "AGENT_TOKEN", flags.Token)
	pick(&cfg.Platform, "AGENT_PLATFORM", flags.Platform)
	pick(&cfg.SimStart, "AGENT_SIM_START", flags.SimStart)
	pick(&cfg.DataDir, "AGENT_DATA", flags.DataDir)
	pick(&cfg.LogDir, "AGENT_LOG_DIR", flags.LogDir)
	if cfg.Platform == "" {
		cfg.Platform, cfg.platformDefaulted = defaultPlatform, true
	}
	if err := checkConfig(cfg); err != nil {
		return cfg, err
	}
	switch {
	case cfg.RelayURL == "":
		return cfg, errors.New("the relay URL is required: --relay, AGENT_RELAY_URL or relayUrl in the config file")
	case cfg.Token == "":
		return cfg, errors.New("the agent token is required: --token, AGENT_TOKEN or token in the config file (agent pair CODE stores one)")
	}
	return cfg, nil
}

// readConfigFile reads a JSON config file; a key it does not know is an
// error (a misspelt key would otherwise be ignored silently).
func readConfigFile(path string) (Config, error) {
	var cfg Config
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("reading the config file: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("the config file is not valid: %w", err)
	}
	return cfg, nil
}

// checkConfig checks the settings that have a form (the relay URL when
// set, the platform, the simulator's start); which are required is the
// caller's business.
func checkConfig(cfg Config) error {
	switch cfg.Platform {
	case "", "sim", ninjatrader.Kind:
	default:
		return errors.New("--platform must be sim or ninjatrader")
	}
	if cfg.SimStart != "" {
		if cfg.Platform != "" && cfg.Platform != "sim" {
			return errors.New("--sim-start applies to the simulator only (--platform sim)")
		}
		if _, err := time.Parse(time.RFC3339, cfg.SimStart); err != nil {
			return errors.New("--sim-start must be an RFC 3339 time, e.g. 2026-11-25T10:00:00-05:00")
		}
	}
	if err := sysproxy.CheckSetting(cfg.Proxy); err != nil {
		return err
	}
	if err := sysproxy.CheckPACURL(cfg.ProxyPAC); err != nil {
		return err
	}
	if cfg.RelayURL != "" && !validRelayURL(cfg.RelayURL) {
		return errors.New("the relay URL must be http:// or https:// with a host and nothing after the path, " +
			"e.g. https://relay.example or http://127.0.0.1:8080")
	}
	return nil
}

// validRelayURL reports whether s is an http or https URL with a host and
// no credentials, query or fragment.
func validRelayURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return false
	}
	return u.Scheme == "http" || u.Scheme == "https"
}

// ErrATIUnderService is the Windows service's refusal of the ATI
// fallback: NinjaTrader's ATI folders are in the trader's profile, and
// the SYSTEM service does not write into a user's folders (a user could
// redirect the writes with a junction).
var ErrATIUnderService = errors.New("ninjatrader.ati is for `agent run` in the trader's own session: the Windows " +
	"service runs as SYSTEM and does not write into a user's folders; set ninjatrader.ati false, or run the agent " +
	"in the trader's session")

// checkServiceConfig checks what the service (on the system goos)
// refuses to run: the ATI fallback on Windows.
func checkServiceConfig(cfg Config, goos string) error {
	if goos == "windows" && cfg.Platform == ninjatrader.Kind && cfg.NinjaTrader.ATI {
		return ErrATIUnderService
	}
	return nil
}

// openPlatform starts the configured platform. now is the platform's
// clock, which the operations measure lookbackTime windows on; closeAll
// closes the platform and what it was built on.
func openPlatform(cfg Config, log *zap.Logger) (p bridge.Platform, now func() time.Time, closeAll func(), err error) {
	switch cfg.Platform {
	case "sim":
		if cfg.platformDefaulted && !cfg.asService {
			discovery := cfg.NinjaTrader.DiscoveryFile
			if discovery == "" {
				discovery = ninjatrader.DefaultDiscoveryFile()
			}
			if _, err := os.Stat(discovery); err == nil {
				log.Warn("the agent runs the simulator, but NinjaTrader's TradeBridge add-on is running for this user: "+
					"choose the platform (--platform ninjatrader, or platform in the config file)", zap.String("discoveryFile", discovery))
			}
		}
		opts := sim.Options{Logger: log.Named("sim")}
		now = time.Now
		if cfg.SimStart != "" {
			start, err := time.Parse(time.RFC3339, cfg.SimStart)
			if err != nil {
				return nil, nil, nil, err
			}
			opts.Clock = sim.StartedClock(start)
			now = opts.Clock.Now
			log.Info("the simulator's clock starts at a chosen time", zap.Time("simStart", start))
		}
		p, err := sim.New(opts)
		if err != nil {
			return nil, nil, nil, err
		}
		return p, now, func() { p.Close() }, nil
	case ninjatrader.Kind:
		nt := cfg.NinjaTrader
		opts := ninjatrader.Options{DiscoveryFile: nt.DiscoveryFile, Port: nt.Port, Secret: nt.Secret,
			NinjaTraderDir: nt.Dir, Logger: log.Named("ninjatrader"), Client: "tradebridge-agent " + agent.Version,
			OverrideTrusted: cfg.asService && cfg.adminOwned}
		if cfg.asService && nt.DiscoveryFile == "" {
			opts.Sessions = ninjatrader.DefaultSessions()
		}
		var files *ati.Files
		if nt.ATI {
			if cfg.asService {
				if err := checkServiceConfig(cfg, runtime.GOOS); err != nil {
					return nil, nil, nil, err
				}
			}
			dir := nt.Dir
			if dir == "" {
				discovery := nt.DiscoveryFile
				if discovery == "" {
					discovery = ninjatrader.DefaultDiscoveryFile()
				}
				if dir = ninjatrader.DiscoveredUserDataDir(discovery); dir == "" {
					dir = ninjatrader.DefaultNinjaTraderDir()
				}
			}
			f, err := ati.New(ati.Options{Dir: dir, Logger: log.Named("ati")})
			if err != nil {
				return nil, nil, nil, err
			}
			if err := f.Start(); err != nil {
				return nil, nil, nil, err
			}
			files, opts.ATI = f, f
		}
		p, err := ninjatrader.New(opts)
		if err != nil {
			if files != nil {
				files.Close()
			}
			return nil, nil, nil, err
		}
		return p, time.Now, func() {
			p.Close()
			if files != nil {
				files.Close()
			}
		}, nil
	}
	return nil, nil, nil, fmt.Errorf("unknown platform %q: this build supports sim and ninjatrader", cfg.Platform)
}

// defaultDataDir is the agent's data folder when none is configured:
// tradebridge/agent under the user's configuration folder (%AppData% on
// Windows, ~/.config on Linux).
func defaultDataDir() (string, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no data folder configured (--data) and no user configuration folder: %w", err)
	}
	return filepath.Join(base, "tradebridge", "agent"), nil
}

// stateFile is the path of the state file of an agent on cfg in dir. The
// file is named after the relay and the user it serves (a fingerprint,
// never the token): the state holds a configuration and outcomes that
// belong to one user of one relay, so another relay or another user
// starts from an empty state instead of running a configuration that is
// not its own. The user is the one `agent pair` recorded (cfg.UserID), so
// a PC paired again with the same account (a new token, after a
// reinstallation, say) keeps its state; a configuration without it (a
// token set by hand) is named after the token instead, so another token
// (a relay whose data was reset issues new ones) starts afresh.
func stateFile(dir string, cfg Config) string {
	who := cfg.Token
	if cfg.UserID != "" {
		who = "user:" + cfg.UserID
	}
	sum := sha256.Sum256([]byte(cfg.RelayURL + "\n" + who))
	return filepath.Join(dir, "agent-state-"+hex.EncodeToString(sum[:6])+".db")
}
