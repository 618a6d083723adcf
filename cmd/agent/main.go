// Command agent runs next to the trading platform on the trader's PC: it
// dials out to the relay and serves the relay's calls against the platform
// (agent run). It never listens on a port reachable from outside.
//
// Installed, it runs as a system service (agent install; a Windows service,
// a systemd unit or a launchd job) started as `agent run --service`, which
// reads the machine configuration that `agent config set` writes.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"tradebridge/agent"
	"tradebridge/agent/agentlog"
	"tradebridge/agent/agentstore"
	"tradebridge/agent/diag"
	"tradebridge/agent/installlog"
	"tradebridge/agent/supportzip"
	"tradebridge/agent/sysproxy"
	"tradebridge/agent/tunnel"
	"tradebridge/agent/winsvc"
	"tradebridge/cmd/internal/logflags"
	"tradebridge/trading/ops"
)

func main() {
	os.Exit(execute(newRootCmd(os.Stdout), os.Args[1:], os.Stderr, nil))
}

// msiLogFlag is the hidden flag the installer's custom actions give every
// command: --msi-log FILE, the installer's log ([MsiLogFileLocation],
// empty when the installation is not logged).
const msiLogFlag = "msi-log"

// execute runs root on args and returns the process's exit code. A
// command that fails says why on stderr and exits with 1; run by the
// installer (--msi-log), it also writes its reason to the Event Log
// (eventLog; nil: the system's) and the installer's log, and exits with
// the code of its kind of failure (installlog.Class, installer/README.md).
func execute(root *cobra.Command, args []string, stderr io.Writer, eventLog func() (installlog.EventLog, error)) int {
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "agent:", err)
	file, ok := msiLogOf(root, args)
	if !ok {
		return 1
	}
	if cmd == nil {
		cmd = root
	}
	return installlog.Report(installlog.Options{File: file, Command: cmd.CommandPath(), EventLog: eventLog}, err)
}

// msiLogOf is the --msi-log the command was given, and whether it was:
// as cobra parsed it, else (the command line did not parse) as found in
// args.
func msiLogOf(root *cobra.Command, args []string) (string, bool) {
	if f := root.PersistentFlags().Lookup(msiLogFlag); f != nil && f.Changed {
		return f.Value.String(), true
	}
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--"+msiLogFlag+"="); ok {
			return v, true
		}
		if a == "--"+msiLogFlag && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

func newRootCmd(stdout io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "agent",
		Short:         "The trading agent: connects the trading platform to the relay",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.PersistentFlags().String(msiLogFlag, "", "the installer's log: a failure is also written there and to the Event Log, "+
		"and the exit code says its kind (the MSI's custom actions)")
	_ = root.PersistentFlags().MarkHidden(msiLogFlag)
	root.AddCommand(newRunCmd(), &cobra.Command{
		Use:   "version",
		Short: "Print the agent's version",
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), agent.Version) },
	}, newConfigCmd(), newDiagCmd(), newPairCmd(systemPairEnv()), newUnpairCmd(systemPairEnv()))
	root.AddCommand(newServiceCmds(openSystemService, systemPairEnv())...)
	return root
}

// dataDirOf is the configured data folder, else the user's (see
// defaultDataDir).
func dataDirOf(cfg Config) (string, error) {
	if cfg.DataDir != "" {
		return cfg.DataDir, nil
	}
	return defaultDataDir()
}

// openState opens the agent's state file in the data folder dir, creating
// the folder (readable by the user only) when needed.
func openState(cfg Config, dir string, log *zap.Logger) (*agentstore.Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the data folder: %w", err)
	}
	path := stateFile(dir, cfg)
	st, err := agentstore.Open(agentstore.Options{Path: path, Logger: log})
	if err != nil {
		return nil, err
	}
	log.Info("agent state", zap.String("file", path))
	return st, nil
}

// runAgent runs an agent on cfg until ctx ends: the platform, the state
// file and the agent, closed in the reverse order when it stops. d is
// what the agent reports to support staff; runAgent adds the snapshot
// file in the data folder.
func runAgent(ctx context.Context, cfg Config, log *zap.Logger, d agent.DiagnosticsOptions) error {
	dir, err := dataDirOf(cfg)
	if err != nil {
		return err
	}
	platform, now, closePlatform, err := openPlatform(cfg, log)
	if err != nil {
		return err
	}
	defer closePlatform()
	state, err := openState(cfg, dir, log)
	if err != nil {
		return err
	}
	defer state.Close()
	d.SnapshotFile = filepath.Join(dir, diag.SnapshotName)
	proxy, err := sysproxy.New(sysproxy.Options{Proxy: cfg.Proxy, PACURL: cfg.ProxyPAC, Logger: log})
	if err != nil {
		return err
	}
	a, err := agent.New(agent.Options{RelayURL: cfg.RelayURL, Token: cfg.Token, Platform: platform, Logger: log,
		State: state, Ops: ops.Options{Now: now}, Diagnostics: d, Tunnel: tunnel.Options{Proxy: proxy}})
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx)
}

// diagnosticsOf is what an agent on cfg, read from configFile and logging
// to logFile, reports about itself to support staff.
func diagnosticsOf(cfg Config, configFile, logFile string, rec *diag.Recorder, asService bool) agent.DiagnosticsOptions {
	rc := supportzip.ReportedConfig(zipConfig(cfg), configFile)
	rc.LogFile = logFile
	return agent.DiagnosticsOptions{Recorder: rec, Config: rc, Service: asService}
}

func newRunCmd() *cobra.Command {
	var (
		cfgPath   string
		flags     Config
		logs      logflags.Flags
		asService bool
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Connect to the relay and serve it until interrupted",
		Long: "Connect to the relay and serve it until interrupted.\n\n" +
			"Settings come from flags, then environment variables (AGENT_RELAY_URL,\n" +
			"AGENT_TOKEN, AGENT_PLATFORM, AGENT_DATA, AGENT_LOG_DIR), then the JSON config\n" +
			"file (--config, or AGENT_CONFIG), in that order of precedence. Prefer the\n" +
			"environment or the config file for the token: command lines are visible to\n" +
			"other users. With no config file named and no token given (--token,\n" +
			"AGENT_TOKEN), the data folder's config.json (--data DIR or AGENT_DATA), which\n" +
			"`agent pair CODE --data DIR` writes, is the config file when it exists:\n" +
			"  agent pair CODE --relay URL --data DIR  then  agent run --relay URL --data DIR\n\n" +
			"--service is how the service manager starts the agent: the config file\n" +
			"defaults to the machine's (agent config show), the logs go to the machine's\n" +
			"log folder and the system's log, and a missing or invalid configuration\n" +
			"does not stop it: it waits for `agent config set`, and restarts the agent\n" +
			"whenever the config file changes.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asService {
				return runService(cfgPath, flags, logs)
			}
			cfgPath = runConfigFile(cfgPath, flags, os.Getenv)
			cfg, err := loadConfig(cfgPath, flags, os.Getenv)
			if err != nil {
				return err
			}
			console, err := logs.Logger()
			if err != nil {
				return err
			}
			level, err := zapcore.ParseLevel(logs.Level)
			if err != nil {
				return err
			}
			rec := diag.NewRecorder()
			logger, err := agentlog.New(agentlog.Options{Dir: cfg.LogDir, Level: level,
				Cores: []zapcore.Core{console.Core(), rec.Core()}})
			if err != nil {
				return err
			}
			defer logger.Close()
			logger.SetSecrets(cfg.Token, cfg.NinjaTrader.Secret, supportzip.ProxyPassword(cfg.Proxy))
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			configFile := cfgPath
			if configFile == "" {
				configFile = os.Getenv("AGENT_CONFIG")
			}
			return runAgent(ctx, cfg, logger.Logger(), diagnosticsOf(cfg, configFile, logger.File(), rec, false))
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfgPath, "config", "", "JSON config file (env AGENT_CONFIG; with --service, default the machine's)")
	f.StringVar(&flags.RelayURL, "relay", "", "relay base URL, e.g. https://relay.example or http://127.0.0.1:8080 (env AGENT_RELAY_URL)")
	f.StringVar(&flags.Token, "token", "", "agent token (env AGENT_TOKEN)")
	f.StringVar(&flags.Platform, "platform", "", "trading platform: sim or ninjatrader (env AGENT_PLATFORM; default sim)")
	f.StringVar(&flags.DataDir, "data", "", "folder of the agent's state file (env AGENT_DATA; default tradebridge/agent under the user's configuration folder, or the machine's data folder with --service)")
	f.StringVar(&flags.LogDir, "log-dir", "", "folder of the rotating log file agent.log (env AGENT_LOG_DIR; default none, or the machine's log folder with --service)")
	f.StringVar(&flags.SimStart, "sim-start", "", "with the simulator: the RFC 3339 time its clock starts at, then runs at real speed, e.g. to try a bot while the market is closed (env AGENT_SIM_START)")
	f.BoolVar(&asService, "service", false, "run as the system service (the service manager starts the agent so)")
	logs.Register(f)
	return cmd
}

// runConfigFile is the config file of `agent run` (not --service):
// --config, else AGENT_CONFIG, else, when no token is given by flag or
// environment, DIR/config.json of the data folder (--data, else
// AGENT_DATA) if that file exists; "" when none.
func runConfigFile(path string, flags Config, getenv func(string) string) string {
	if path != "" || getenv("AGENT_CONFIG") != "" || flags.Token != "" || getenv("AGENT_TOKEN") != "" {
		return path
	}
	dir := flags.DataDir
	if dir == "" {
		dir = getenv("AGENT_DATA")
	}
	if dir == "" {
		return ""
	}
	file := filepath.Join(dir, dataConfigName)
	if _, err := os.Stat(file); err != nil {
		return ""
	}
	return file
}

// privilegeError is a command the system refused for want of privileges.
type privilegeError struct {
	command string // "install", "config set"
	err     error
}

func (e *privilegeError) Error() string { return e.command + " " + winsvc.PrivilegeHint }
func (e *privilegeError) Unwrap() error { return e.err }

// InstallClass: the installer's log says the command needs elevation,
// or, when a folder refused the process (as SYSTEM under the installer,
// elevation would not help), that the folder is the problem.
func (e *privilegeError) InstallClass() installlog.Class {
	if installlog.ClassOf(e.err) == installlog.ClassFolder {
		return installlog.ClassFolder
	}
	return installlog.ClassNeedsElevation
}

// asPrivilegeError turns err into a privilegeError when it is a
// permission refusal.
func asPrivilegeError(command string, err error) error {
	if err != nil && errors.Is(err, os.ErrPermission) {
		return &privilegeError{command: command, err: err}
	}
	return err
}
