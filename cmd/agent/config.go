package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"go.uber.org/zap"

	"tradebridge/agent/bridge"
	"tradebridge/agent/bridge/sim"
)

// Config is the agent's configuration, as the JSON config file holds it:
//
//	{"relayUrl": "https://relay.example", "token": "tb_agent_…", "platform": "sim"}
type Config struct {
	RelayURL string `json:"relayUrl"`
	Token    string `json:"token"`
	Platform string `json:"platform"`
}

// loadConfig merges flags over environment variables over the config file.
func loadConfig(path string, flags Config, getenv func(string) string) (Config, error) {
	var cfg Config
	if path == "" {
		path = getenv("AGENT_CONFIG")
	}
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return cfg, fmt.Errorf("reading the config file: %w", err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return cfg, fmt.Errorf("the config file is not valid: %w", err)
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
	if cfg.Platform == "" {
		cfg.Platform = "sim"
	}
	switch {
	case cfg.RelayURL == "":
		return cfg, errors.New("the relay URL is required: --relay, AGENT_RELAY_URL or relayUrl in the config file")
	case cfg.Token == "":
		return cfg, errors.New("the agent token is required: --token, AGENT_TOKEN or token in the config file")
	}
	return cfg, nil
}

// openPlatform starts the configured platform.
func openPlatform(cfg Config, log *zap.Logger) (bridge.Platform, error) {
	switch cfg.Platform {
	case "sim":
		return sim.New(sim.Options{Logger: log.Named("sim")})
	}
	return nil, fmt.Errorf("unknown platform %q: this build supports sim", cfg.Platform)
}
