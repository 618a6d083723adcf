package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"tradebridge/agent/supportzip"
	"tradebridge/agent/winsvc"
)

func newDiagCmd() *cobra.Command {
	d := diagConfig{getenv: os.Getenv, machine: winsvc.MachinePaths()}
	var (
		opts  supportzip.Options
		pause bool
	)
	cmd := &cobra.Command{
		Use:   "diag",
		Short: "Write a zip for support staff: the agent's state, checks made now, its configuration without secrets, the log's tail",
		Long: "Write a zip for support staff. It holds summary.json (what the running agent last\n" +
			"recorded: tunnel, platform, recent errors), live.json (checks made now: the relay\n" +
			"reached over HTTPS, the round trip, the clock's difference with the relay's, the\n" +
			"NinjaTrader add-on's port), config.json (the configuration without the token or\n" +
			"the NinjaTrader secret), logs/agent.log (the log's last lines, with anything\n" +
			"looking like a token removed) and service.json (the system service's state).\n" +
			"A configuration that cannot be read is reported in the zip. Nothing in it is\n" +
			"a secret; look inside before sending it if you like.\n\n" +
			"--pause is the Start menu's \"Diagnostics for support\": without --out the zip goes to\n" +
			"the Desktop, and the command says where and waits for Enter when run in a console window.\n" +
			"Run it as administrator to include the machine's configuration and logs.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Lines < 0 {
				return errors.New("--lines must be 0 or more")
			}
			if host, err := os.Hostname(); err == nil {
				opts.Hostname = host
			}
			cfg, file, err := d.load()
			opts.Config, opts.ConfigFile, opts.ConfigErr = zipConfig(cfg), file, err
			opts.Secrets = secretsOf(file)
			opts.Getenv, opts.Machine, opts.UserDataDir = d.getenv, d.machine, defaultDataDir
			opts.Service = func() any { return winsvc.QueryStatus() }
			opts.Now = time.Now
			if pause && opts.Out == "" {
				// The Start menu starts the command in the program's
				// folder, which users cannot write to: the Desktop.
				if desktop := desktopDir(); desktop != "" {
					if err := os.Chdir(desktop); err != nil {
						return err
					}
				}
			}
			path, err := supportzip.Write(cmd.Context(), opts)
			out := cmd.OutOrStdout()
			if err != nil {
				if pause {
					fmt.Fprintln(out, "The support zip could not be written:", err)
					waitForEnter(out, cmd.InOrStdin())
				}
				return err
			}
			if abs, err := filepath.Abs(path); err == nil {
				path = abs
			}
			fmt.Fprintln(out, path)
			if pause {
				fmt.Fprintln(out, "\nThe file above is for support staff: send it to them. It holds no token or secret.")
				waitForEnter(out, cmd.InOrStdin())
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Out, "out", "", "the zip file to write (default tradebridge-diag-<host>-<UTC time>.zip in the current folder)")
	f.StringVar(&d.path, "config", "", "JSON config file, as for run (env AGENT_CONFIG; default the machine configuration file when there is one)")
	f.IntVar(&opts.Lines, "lines", supportzip.DefaultLines, "how many of the log's last lines to include")
	f.BoolVar(&pause, "pause", false, "for the Start-menu entry: the zip to the Desktop (unless --out), then wait for Enter")
	return cmd
}

// diagConfig finds the configuration `agent diag` reports.
type diagConfig struct {
	path    string // --config
	getenv  func(string) string
	machine winsvc.Paths
}

// load loads the configuration as `agent run` does; without --config and
// AGENT_CONFIG it reads the machine configuration file when there is one.
// It returns what it could read even when it is not valid, and the file.
func (d diagConfig) load() (Config, string, error) {
	path := d.path
	if path == "" {
		path = d.getenv("AGENT_CONFIG")
	}
	if path == "" && d.machine.ConfigFile != "" {
		if _, err := os.Stat(d.machine.ConfigFile); err == nil || errors.Is(err, fs.ErrPermission) {
			path = d.machine.ConfigFile
		}
	}
	cfg, err := loadConfig(path, Config{}, d.getenv)
	return cfg, path, err
}

// secretsOf reads the token and the NinjaTrader secret from a config file
// leniently, for the zip's redactor: a file that is not valid for the
// agent (a misspelt key) may still hold them.
func secretsOf(path string) []string {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var c Config
	_ = json.Unmarshal(b, &c)
	secrets := []string{c.Token, c.NinjaTrader.Secret}
	if p := supportzip.ProxyPassword(c.Proxy); p != "" {
		secrets = append(secrets, p)
	}
	return secrets
}

// zipConfig is cfg as the support zip and the diagnostics describe it.
func zipConfig(cfg Config) supportzip.Config {
	nt := cfg.NinjaTrader
	return supportzip.Config{RelayURL: cfg.RelayURL, Token: cfg.Token, Platform: cfg.Platform, SimStart: cfg.SimStart,
		DataDir: cfg.DataDir, LogDir: cfg.LogDir, Proxy: cfg.Proxy, ProxyPAC: cfg.ProxyPAC,
		NinjaTrader: supportzip.NinjaTrader{DiscoveryFile: nt.DiscoveryFile, Port: nt.Port, Secret: nt.Secret, Dir: nt.Dir, ATI: nt.ATI}}
}
