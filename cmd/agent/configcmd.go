package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"tradebridge/agent/installlog"
	"tradebridge/agent/sysproxy"
	"tradebridge/agent/winsvc"
	"tradebridge/trading/bridge/ninjatrader"
)

// configKeys are the keys of `agent config set`, in the order help lists
// them.
var configKeys = []string{"relay-url", "token", "platform", "ninjatrader.dir", "ninjatrader.discovery-file",
	"ninjatrader.ati", "data-dir", "log-dir", "proxy", "proxy-pac", "user-id"}

// configView is a configuration as `agent config` prints it: the token
// and the NinjaTrader secret only as "set".
type configView struct {
	ConfigFile  string           `json:"configFile"`
	Exists      bool             `json:"exists"`
	RelayURL    string           `json:"relayUrl,omitempty"`
	Token       string           `json:"token"`
	Platform    string           `json:"platform"`
	UserID      string           `json:"userId,omitempty"`
	SimStart    string           `json:"simStart,omitempty"`
	DataDir     string           `json:"dataDir,omitempty"`
	LogDir      string           `json:"logDir,omitempty"`
	Proxy       string           `json:"proxy,omitempty"` // a password as xxxxx
	ProxyPAC    string           `json:"proxyPac,omitempty"`
	NinjaTrader *ninjaTraderView `json:"ninjatrader,omitempty"`
	// Missing lists the keys the agent needs and the file lacks.
	Missing []string `json:"missing,omitempty"`
}

type ninjaTraderView struct {
	DiscoveryFile string `json:"discoveryFile,omitempty"`
	Dir           string `json:"dir,omitempty"`
	ATI           bool   `json:"ati"`
	Port          int    `json:"port,omitempty"`
	Secret        string `json:"secret,omitempty"`
}

// set says whether a secret is set, never what it is.
func set(secret string) string {
	if secret == "" {
		return "not set"
	}
	return "set"
}

// viewConfig is cfg, read from path, as `agent config` prints it; the
// platform is the effective one: when the file names none, NinjaTrader
// for the machine's file (the service's default), the simulator for
// another (`agent run`'s).
func viewConfig(path string, machine, exists bool, cfg Config) configView {
	v := configView{ConfigFile: path, Exists: exists, RelayURL: cfg.RelayURL, Token: set(cfg.Token),
		Platform: cfg.Platform, SimStart: cfg.SimStart, DataDir: cfg.DataDir, LogDir: cfg.LogDir,
		Proxy: redactedProxy(cfg.Proxy), ProxyPAC: cfg.ProxyPAC, UserID: cfg.UserID}
	if v.Platform == "" {
		v.Platform = "sim"
		if machine {
			v.Platform = ninjatrader.Kind
		}
	}
	if nt := cfg.NinjaTrader; nt != (NinjaTraderConfig{}) {
		v.NinjaTrader = &ninjaTraderView{DiscoveryFile: nt.DiscoveryFile, Dir: nt.Dir, ATI: nt.ATI, Port: nt.Port}
		if nt.Secret != "" {
			v.NinjaTrader.Secret = set(nt.Secret)
		}
	}
	if cfg.RelayURL == "" {
		v.Missing = append(v.Missing, "relay-url")
	}
	if cfg.Token == "" {
		v.Missing = append(v.Missing, "token")
	}
	return v
}

// redactedProxy is a proxy setting with its password as xxxxx.
func redactedProxy(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

// configFileOf is the file `agent config` works on: --config, else
// AGENT_CONFIG, else the machine's; machine reports the last.
func configFileOf(path string, getenv func(string) string) (file string, machine bool) {
	if path == "" {
		path = getenv("AGENT_CONFIG")
	}
	if path == "" {
		return winsvc.MachinePaths().ConfigFile, true
	}
	return path, path == winsvc.MachinePaths().ConfigFile
}

func newConfigCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show or change the agent's machine configuration (the service's)",
		Long: "Show or change the agent's configuration file: the machine's (" + winsvc.MachinePaths().ConfigFile + "),\n" +
			"which the service reads, unless --config or AGENT_CONFIG names another. The machine's file is\n" +
			"readable by " + machineReaders + " only: change it from " + elevatedPrompt + ".",
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&path, "config", "", "config file (env AGENT_CONFIG; default the machine's)")

	setCmd := &cobra.Command{
		Use:   "set KEY VALUE [KEY VALUE ...]",
		Short: "Set keys of the configuration (a VALUE of - is read from standard input: the way to give the token)",
		Long: "Set keys of the configuration, checked before anything is written; the rest of the file stays.\n" +
			"Keys: " + strings.Join(configKeys, ", ") + ".\n" +
			"  relay-url                   the relay's base URL, http:// or https://\n" +
			"  token                       the agent token (tb_agent_…)\n" +
			"  platform                    ninjatrader or sim; unset, the service runs ninjatrader and\n" +
			"                              `agent run` the simulator (config show prints the effective one)\n" +
			"  ninjatrader.dir             NinjaTrader's user folder; unset, the one the add-on reports\n" +
			"  ninjatrader.discovery-file  where the add-on writes its port and secret; unset, the\n" +
			"                              trader's own (the service finds the running trader's)\n" +
			"  ninjatrader.ati             true or false: ATI order files while the add-on is away;\n" +
			"                              `agent run` in the trader's session only (the Windows service refuses it)\n" +
			"  data-dir, log-dir           the agent's state and log folders\n" +
			"  proxy                       direct, or http://host:port: the proxy to the relay (default: the\n" +
			"                              environment's, else the machine's WinHTTP proxy, else automatic)\n" +
			"  proxy-pac                   the http(s):// URL of a PAC script (default: the machine's, or WPAD)\n" +
			"  user-id                     the relay's user the token belongs to (agent pair writes it; it names\n" +
			"                              the state file, so a PC paired again with the account keeps its state;\n" +
			"                              setting token without it clears it)\n" +
			"Folders and files are absolute paths; an empty VALUE (\"\") returns them to their default.\n" +
			"A VALUE of - is read from standard input (one line per -): give the token so, since command\n" +
			"lines are visible to other users:  echo tb_agent_… | agent config set token -\n" +
			"A running service applies the change within seconds. Prints the result, the token as \"set\".",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 || len(args)%2 != 0 {
				return installlog.WithClass(errors.New("config set takes KEY VALUE pairs, e.g. config set relay-url https://relay.example"),
					installlog.ClassInvalid)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			file, machine := configFileOf(path, os.Getenv)
			cfg, exists, err := setConfig(file, machine, args, cmd.InOrStdin())
			if err != nil {
				return asPrivilegeError("config set", err)
			}
			return printJSON(cmd.OutOrStdout(), viewConfig(file, machine, exists, cfg))
		},
	}
	showCmd := &cobra.Command{
		Use:   "show",
		Short: "Print the configuration as JSON, the token as \"set\"",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, machine := configFileOf(path, os.Getenv)
			cfg, err := readConfigFile(file)
			exists := !errors.Is(err, fs.ErrNotExist)
			if err != nil && exists {
				return asPrivilegeError("config show", err)
			}
			return printJSON(cmd.OutOrStdout(), viewConfig(file, machine, exists, cfg))
		},
	}
	clearCmd := &cobra.Command{
		Use:   "clear",
		Short: "Delete the configuration file (and with it the token)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, machine := configFileOf(path, os.Getenv)
			removed, err := clearConfig(file, machine)
			if err != nil {
				return asPrivilegeError("config clear", err)
			}
			return printJSON(cmd.OutOrStdout(), struct {
				ConfigFile string `json:"configFile"`
				Removed    bool   `json:"removed"`
			}{file, removed})
		},
	}
	cmd.AddCommand(setCmd, showCmd, clearCmd)
	return cmd
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// setConfig applies the KEY VALUE pairs to the file's configuration and
// writes it, when every value and the result are valid; it returns what
// it wrote.
func setConfig(file string, machine bool, args []string, stdin io.Reader) (Config, bool, error) {
	if err := checkWriter(machine); err != nil {
		return Config{}, false, err
	}
	cfg, err := readConfigFile(file)
	exists := !errors.Is(err, fs.ErrNotExist)
	if err != nil && exists {
		if errors.Is(err, fs.ErrPermission) {
			return Config{}, exists, err
		}
		return Config{}, exists, fmt.Errorf("%w; fix it, or start again with agent config clear", err)
	}
	in := bufio.NewReader(stdin)
	var tokenSet, userSet bool
	for i := 0; i < len(args); i += 2 {
		key, value := args[i], args[i+1]
		tokenSet = tokenSet || key == "token"
		userSet = userSet || key == "user-id"
		if value == "-" {
			if value, err = readValue(in); err != nil {
				return Config{}, exists, installlog.WithClass(
					fmt.Errorf("reading the value of argument %d from standard input: %w", i+2, err), installlog.ClassInvalid)
			}
		}
		if err := setKey(&cfg, i+1, key, value); err != nil {
			return Config{}, exists, installlog.WithClass(err, installlog.ClassInvalid)
		}
	}
	if tokenSet && !userSet {
		// Another token may be another user's: their state is not this one.
		cfg.UserID = ""
	}
	if err := checkConfig(cfg); err != nil {
		return Config{}, exists, installlog.WithClass(err, installlog.ClassInvalid)
	}
	if err := writeConfigFile(file, machine, cfg); err != nil {
		return Config{}, exists, err
	}
	return cfg, true, nil
}

// readValue reads one line of standard input, without its line ending.
func readValue(in *bufio.Reader) (string, error) {
	line, err := in.ReadString('\n')
	if err != nil && (!errors.Is(err, io.EOF) || line == "") {
		if errors.Is(err, io.EOF) {
			return "", errors.New("standard input ended")
		}
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// setKey sets one key; arg is the key's position among the arguments,
// which errors name (they never repeat what was given).
func setKey(cfg *Config, arg int, key, value string) error {
	path := func(dst *string, what string) error {
		if value != "" && !filepath.IsAbs(value) {
			return fmt.Errorf("%s must be an absolute path (the service does not run in this folder)", what)
		}
		*dst = value
		return nil
	}
	switch key {
	case "relay-url":
		if !validRelayURL(value) {
			return errors.New("relay-url must be http:// or https:// with a host and nothing after the path, " +
				"e.g. https://relay.example or http://127.0.0.1:8080")
		}
		cfg.RelayURL = value
	case "token":
		switch {
		case value == "":
			return errors.New("token must not be empty (agent config clear removes the whole configuration)")
		case strings.HasPrefix(value, "tb_api_"):
			return errors.New("token is an API token (tb_api_…): the agent needs its agent token (tb_agent_…)")
		case strings.ContainsFunc(value, func(r rune) bool { return r <= ' ' || r == 0x7f }):
			return errors.New("token must not contain spaces or control characters")
		}
		cfg.Token = value
	case "platform":
		if value != "sim" && value != ninjatrader.Kind {
			return errors.New("platform must be sim or ninjatrader")
		}
		cfg.Platform = value
		if value != "sim" {
			cfg.SimStart = ""
		}
	case "ninjatrader.dir":
		return path(&cfg.NinjaTrader.Dir, key)
	case "ninjatrader.discovery-file":
		return path(&cfg.NinjaTrader.DiscoveryFile, key)
	case "ninjatrader.ati":
		switch strings.ToLower(value) {
		case "true":
			cfg.NinjaTrader.ATI = true
		case "false":
			cfg.NinjaTrader.ATI = false
		default:
			return errors.New("ninjatrader.ati must be true or false")
		}
	case "user-id":
		if value != "" && !validUserID(value) {
			return errors.New("user-id must be a relay's user id, usr_…")
		}
		cfg.UserID = value
		return nil
	case "data-dir":
		return path(&cfg.DataDir, key)
	case "log-dir":
		return path(&cfg.LogDir, key)
	case "proxy":
		if err := sysproxy.CheckSetting(value); err != nil {
			return err
		}
		cfg.Proxy = value
	case "proxy-pac":
		if err := sysproxy.CheckPACURL(value); err != nil {
			return err
		}
		cfg.ProxyPAC = value
	default:
		return fmt.Errorf("argument %d is not a key of the configuration; the keys are %s", arg, strings.Join(configKeys, ", "))
	}
	return nil
}

// writeConfigFile writes cfg to file atomically (a temporary file in the
// same folder, renamed over it), readable by the machine's administrators
// only (machine) or by its owner only.
//
// The machine's file is written into the machine's folders, created or
// repaired first (winsvc.EnsureMachineFolders: owned by the
// Administrators, SYSTEM and the Administrators alone).
func writeConfigFile(file string, machine bool, cfg Config) (err error) {
	if machine {
		if err := winsvc.EnsureMachineFolders(); err != nil {
			return installlog.WithClass(fmt.Errorf("securing the machine's folders: %w", err), installlog.ClassFolder)
		}
	}
	dir := filepath.Dir(file)
	_, statErr := os.Stat(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return installlog.WithClass(fmt.Errorf("creating the configuration folder: %w", err), installlog.ClassFolder)
	}
	if machine || errors.Is(statErr, fs.ErrNotExist) {
		if err := secureDir(dir, machine); err != nil {
			return installlog.WithClass(fmt.Errorf("restricting the configuration folder: %w", err), installlog.ClassFolder)
		}
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(file)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing the configuration: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := secureFile(tmp.Name(), machine); err != nil {
		return fmt.Errorf("restricting the configuration file: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing the configuration: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("writing the configuration: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the configuration: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("writing the configuration: %w", err)
	}
	return nil
}

// clearConfig deletes the configuration file and any temporary file a
// failed write left beside it; it reports whether the file existed.
func clearConfig(file string, machine bool) (bool, error) {
	if err := checkWriter(machine); err != nil {
		return false, err
	}
	err := os.Remove(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(file), "."+filepath.Base(file)+".*.tmp"))
	for _, l := range leftovers {
		os.Remove(l)
	}
	return err == nil, nil
}

// validUserID reports whether s has the form of a relay's user id: usr_
// and up to 64 letters, digits, - or _.
func validUserID(s string) bool {
	rest, ok := strings.CutPrefix(s, "usr_")
	if !ok || rest == "" || len(rest) > 64 {
		return false
	}
	for _, r := range rest {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
