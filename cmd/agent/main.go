// Command agent runs next to the trading platform on the trader's PC: it
// dials out to the relay and serves the relay's calls against the platform
// (agent run). It never listens on a port reachable from outside.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"tradebridge/agent"
	"tradebridge/agent/agentstore"
	"tradebridge/agent/ops"
	"tradebridge/cmd/internal/logflags"
)

func main() {
	if err := newRootCmd(os.Stdout).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
}

func newRootCmd(stdout io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "agent",
		Short:         "The trading agent: connects the trading platform to the relay",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.AddCommand(newRunCmd(), &cobra.Command{
		Use:   "version",
		Short: "Print the agent's version",
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), agent.Version) },
	})
	return root
}

// openState opens the agent's state file in the configured data folder,
// creating the folder (readable by the user only) when needed.
func openState(cfg Config, log *zap.Logger) (*agentstore.Store, error) {
	dir := cfg.DataDir
	if dir == "" {
		var err error
		if dir, err = defaultDataDir(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the data folder: %w", err)
	}
	path := stateFile(dir, cfg.RelayURL, cfg.Token)
	st, err := agentstore.Open(agentstore.Options{Path: path, Logger: log})
	if err != nil {
		return nil, err
	}
	log.Info("agent state", zap.String("file", path))
	return st, nil
}

func newRunCmd() *cobra.Command {
	var (
		cfgPath string
		flags   Config
		logs    logflags.Flags
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Connect to the relay and serve it until interrupted",
		Long: "Connect to the relay and serve it until interrupted.\n\n" +
			"Settings come from flags, then environment variables (AGENT_RELAY_URL,\n" +
			"AGENT_TOKEN, AGENT_PLATFORM), then the JSON config file (--config, or\n" +
			"AGENT_CONFIG), in that order of precedence. Prefer the environment or the\n" +
			"config file for the token: command lines are visible to other users.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cfgPath, flags, os.Getenv)
			if err != nil {
				return err
			}
			log, err := logs.Logger()
			if err != nil {
				return err
			}
			defer log.Sync() //nolint:errcheck
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			platform, now, closePlatform, err := openPlatform(cfg, log)
			if err != nil {
				return err
			}
			defer closePlatform()
			state, err := openState(cfg, log)
			if err != nil {
				return err
			}
			defer state.Close()
			a, err := agent.New(agent.Options{RelayURL: cfg.RelayURL, Token: cfg.Token, Platform: platform, Logger: log,
				State: state, Ops: ops.Options{Now: now}})
			if err != nil {
				return err
			}
			defer a.Close()
			return a.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfgPath, "config", "", "JSON config file (env AGENT_CONFIG)")
	f.StringVar(&flags.RelayURL, "relay", "", "relay base URL, e.g. https://relay.example or http://127.0.0.1:8080 (env AGENT_RELAY_URL)")
	f.StringVar(&flags.Token, "token", "", "agent token (env AGENT_TOKEN)")
	f.StringVar(&flags.Platform, "platform", "", "trading platform: sim or ninjatrader (env AGENT_PLATFORM; default sim)")
	f.StringVar(&flags.DataDir, "data", "", "folder of the agent's state file (env AGENT_DATA; default tradebridge/agent under the user's configuration folder)")
	f.StringVar(&flags.SimStart, "sim-start", "", "with the simulator: the RFC 3339 time its clock starts at, then runs at real speed, e.g. to try a bot while the market is closed (env AGENT_SIM_START)")
	logs.Register(f)
	return cmd
}
