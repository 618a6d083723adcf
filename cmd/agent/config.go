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
	"time"

	"go.uber.org/zap"

	"tradebridge/agent"
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
	// NinjaTrader configures the NinjaTrader bridge (--platform
	// ninjatrader); every field has a default.
	NinjaTrader NinjaTraderConfig `json:"ninjatrader,omitzero"`
}

// NinjaTraderConfig is the "ninjatrader" part of the config file:
//
//	{"ninjatrader": {"discoveryFile": "C:\\ProgramData\\TradeBridge\\ninjatrader-addon.json", "ati": true}}
type NinjaTraderConfig struct {
	// DiscoveryFile is where the add-on writes its port and secret;
	// empty means the default (ninjatrader.DefaultDiscoveryFile).
	DiscoveryFile string `json:"discoveryFile,omitempty"`
	// Port and Secret override the discovery file's.
	Port   int    `json:"port,omitempty"`
	Secret string `json:"secret,omitempty"`
	// Dir is NinjaTrader's user folder ("Documents\\NinjaTrader 8"), where
	// the add-on is installed and the ATI folders are; empty means the
	// default (ninjatrader.DefaultNinjaTraderDir).
	Dir string `json:"dir,omitempty"`
	// ATI turns on the fallback to NinjaTrader's ATI order files while the
	// add-on cannot be reached.
	ATI bool `json:"ati,omitempty"`
}

// loadConfig merges flags over environment variables over the config file
// (path, else AGENT_CONFIG; none when both are empty).
func loadConfig(path string, flags Config, getenv func(string) string) (Config, error) {
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
		cfg.Platform = "sim"
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

// openPlatform starts the configured platform. now is the platform's
// clock, which the operations measure lookbackTime windows on; closeAll
// closes the platform and what it was built on.
func openPlatform(cfg Config, log *zap.Logger) (p bridge.Platform, now func() time.Time, closeAll func(), err error) {
	switch cfg.Platform {
	case "sim":
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
		if nt.Dir == "" {
			nt.Dir = ninjatrader.DefaultNinjaTraderDir()
		}
		opts := ninjatrader.Options{DiscoveryFile: nt.DiscoveryFile, Port: nt.Port, Secret: nt.Secret,
			NinjaTraderDir: nt.Dir, Logger: log.Named("ninjatrader"), Client: "tradebridge-agent " + agent.Version}
		var files *ati.Files
		if nt.ATI {
			f, err := ati.New(ati.Options{Dir: nt.Dir, Logger: log.Named("ati")})
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

// stateFile is the path of the agent's state file in dir. The file is
// named after the relay and the agent token it serves (a fingerprint,
// never the token): the state holds a configuration and outcomes that
// belong to one user of one relay, so another relay or another token (a
// relay whose data was reset issues new ones) starts from an empty state
// instead of running a configuration that is not its own.
func stateFile(dir, relayURL, token string) string {
	sum := sha256.Sum256([]byte(relayURL + "\n" + token))
	return filepath.Join(dir, "agent-state-"+hex.EncodeToString(sum[:6])+".db")
}
