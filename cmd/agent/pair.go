package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tradebridge/agent/installlog"
	"tradebridge/agent/sysproxy"
	"tradebridge/protocol"
	"tradebridge/trading/bridge/ninjatrader"
)

// pairTimeout bounds one request to the relay while pairing or unpairing.
const pairTimeout = 30 * time.Second

// dataConfigName is the config file `agent pair --data DIR` writes in DIR,
// and `agent run --data DIR` reads when nothing else gives it a token.
const dataConfigName = "config.json"

// pairEnv is what pairing needs of its surroundings; tests replace it.
type pairEnv struct {
	getenv func(string) string
	// interactive reports whether in is a terminal a person types at.
	interactive func(in io.Reader) bool
	// openURL opens a page in the default browser, best effort.
	openURL func(u string) error
	// needsElevation reports whether writing the target needs a
	// relaunch with more privileges (an elevated prompt on Windows).
	needsElevation func(machine bool) bool
	// elevate runs this program again, elevated, with args, waits for it
	// and returns its exit code.
	elevate func(args []string) (int, error)
	// client is the HTTP client that reaches the relay for an agent
	// configured with cfg (its proxy settings).
	client func(cfg Config) (*http.Client, error)
}

// systemPairEnv is pairEnv on this machine.
func systemPairEnv() pairEnv {
	return pairEnv{
		getenv: os.Getenv,
		interactive: func(in io.Reader) bool {
			f, ok := in.(*os.File)
			return ok && isTerminal(f)
		},
		openURL:        openBrowser,
		needsElevation: func(machine bool) bool { return checkWriter(machine) != nil },
		elevate:        runElevated,
		client:         relayClient,
	}
}

// relayClient is the HTTP client of pair and unpair: through the proxy an
// agent configured with cfg uses (sysproxy: the setting, the environment,
// the system's).
func relayClient(cfg Config) (*http.Client, error) {
	proxy, err := sysproxy.New(sysproxy.Options{Proxy: cfg.Proxy, PACURL: cfg.ProxyPAC})
	if err != nil {
		return nil, installlog.WithClass(err, installlog.ClassInvalid)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	proxy.Configure(t)
	return &http.Client{Timeout: pairTimeout, Transport: t}, nil
}

// pairTarget is the config file pair and unpair work on: --config, else
// AGENT_CONFIG, else DIR/config.json with --data DIR (dataDir is then DIR,
// absolute, to record in it), else the machine's.
func pairTarget(configFlag, dataFlag string, getenv func(string) string) (file string, machine bool, dataDir string, err error) {
	if configFlag != "" || getenv("AGENT_CONFIG") != "" || dataFlag == "" {
		file, machine = configFileOf(configFlag, getenv)
		return file, machine, "", nil
	}
	dir, err := filepath.Abs(dataFlag)
	if err != nil {
		return "", false, "", fmt.Errorf("--data: %w", err)
	}
	return filepath.Join(dir, dataConfigName), false, dir, nil
}

// pairFlags are the flags of `agent pair`.
type pairFlags struct {
	relay, config, data, platform string
	// pause waits for Enter before returning: the elevated relaunch's
	// window stays open so that its result can be read.
	pause bool
}

// args are the flags as arguments of a relaunch, after the code.
func (f pairFlags) args(relay string) []string {
	a := []string{"--relay", relay}
	if f.config != "" {
		a = append(a, "--config", f.config)
	}
	if f.data != "" {
		a = append(a, "--data", f.data)
	}
	if f.platform != "" {
		a = append(a, "--platform", f.platform)
	}
	return a
}

func newPairCmd(env pairEnv) *cobra.Command {
	var f pairFlags
	cmd := &cobra.Command{
		Use:   "pair [CODE]",
		Short: "Pair this PC with your account: exchange a one-time pairing code for the agent's token",
		Long: "Pair this PC with your account. CODE is the one-time pairing code (XXXX-XXXX, valid 10\n" +
			"minutes, once) shown by the dashboard's \"Add a PC\" (RELAY/app/pair) or minted by the operator\n" +
			"(relay agents pair-code). The agent exchanges it at the relay (POST /v1/agent/pair) for a new\n" +
			"agent token and stores the relay URL and the token (and --platform when given) in the config\n" +
			"file that `agent config` edits: --config or AGENT_CONFIG, else DIR/config.json with --data DIR\n" +
			"(which `agent run --data DIR` then reads), else the machine's, which the service reads and\n" +
			"applies within seconds. The relay is --relay, else the config file's relayUrl.\n" +
			"Nothing is written when the exchange fails; the token is never printed.\n" +
			"Prints {\"paired\":true,\"userId\":\"…\",\"configFile\":\"…\"}.\n\n" +
			"Without CODE, on a terminal (the Start menu's \"Pair this PC\"), it says where to get a code,\n" +
			"opens that page, asks for the relay URL when none is configured and for the code, then pairs;\n" +
			"on Windows it asks to run elevated when the machine's configuration is the target.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.pause {
				defer pressEnter(cmd.InOrStdin(), cmd.ErrOrStderr())
			}
			if len(args) == 1 {
				err := pairWith(cmd.Context(), env, f, args[0], cmd.OutOrStdout())
				if f.pause && err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), "agent:", err)
				}
				return err
			}
			if !env.interactive(cmd.InOrStdin()) {
				return errors.New("a pairing code is required: agent pair CODE --relay URL (get a code from the dashboard's \"Add a PC\", or from the operator)")
			}
			return pairInteractive(cmd.Context(), env, f, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.relay, "relay", "", "the relay's base URL, e.g. https://relay.example (default: the config file's relayUrl)")
	fl.StringVar(&f.config, "config", "", "config file to store the token in (env AGENT_CONFIG; default the machine's, or DIR/config.json with --data)")
	fl.StringVar(&f.data, "data", "", "store the configuration in DIR/config.json, with DIR as the agent's data folder (for agent run --data DIR)")
	fl.StringVar(&f.platform, "platform", "", "also set the trading platform: sim or ninjatrader")
	fl.BoolVar(&f.pause, "pause", false, "wait for Enter before exiting (the elevated window of an interactive pairing)")
	_ = fl.MarkHidden("pause")
	return cmd
}

// pairWith pairs with code: checks that the target can be written, then
// exchanges the code, then writes the relay URL and token through the
// writer of `agent config set`.
func pairWith(ctx context.Context, env pairEnv, f pairFlags, code string, stdout io.Writer) error {
	file, machine, dataDir, err := pairTarget(f.config, f.data, env.getenv)
	if err != nil {
		return err
	}
	cfg, err := pairPreflight("pair", file, machine)
	if err != nil {
		return err
	}
	relay := f.relay
	if relay == "" {
		relay = cfg.RelayURL
	}
	if relay == "" {
		return errors.New("the relay URL is required: --relay URL (the config file has no relayUrl)")
	}
	if !validRelayURL(relay) {
		return errors.New("--relay must be http:// or https:// with a host and nothing after the path, e.g. https://relay.example")
	}
	if f.platform != "" && f.platform != "sim" && f.platform != ninjatrader.Kind {
		return errors.New("--platform must be sim or ninjatrader")
	}
	client, err := env.client(cfg)
	if err != nil {
		return err
	}
	res, err := exchangeCode(ctx, client, relay, code)
	if err != nil {
		return err
	}
	if !validUserID(res.UserID) {
		_ = revokeToken(ctx, client, relay, res.Token)
		return installlog.WithClass(errors.New("the relay's answer names no user: is the URL the relay's?"), installlog.ClassRelayUnreachable)
	}
	kv := []string{"relay-url", relay, "token", "-", "user-id", res.UserID}
	if f.platform != "" {
		kv = append(kv, "platform", f.platform)
	}
	if dataDir != "" {
		kv = append(kv, "data-dir", dataDir)
	}
	if _, _, err := setConfig(file, machine, kv, strings.NewReader(res.Token+"\n")); err != nil {
		// The new token is stored nowhere: give it back, best effort.
		_ = revokeToken(ctx, client, relay, res.Token)
		return fmt.Errorf("the code was accepted but the configuration could not be written (the new token was revoked): %w",
			asPrivilegeError("pair", err))
	}
	return printJSON(stdout, struct {
		Paired     bool   `json:"paired"`
		UserID     string `json:"userId"`
		ConfigFile string `json:"configFile"`
	}{true, res.UserID, file})
}

// pairPreflight checks, before a code is spent, that the target config
// file may be written and, when it exists, is valid; it returns what it
// holds.
func pairPreflight(command, file string, machine bool) (Config, error) {
	if err := checkWriter(machine); err != nil {
		return Config{}, asPrivilegeError(command, err)
	}
	if machine && runtime.GOOS != "windows" && os.Geteuid() != 0 {
		// The machine's file is root's: say so before a code is spent.
		return Config{}, asPrivilegeError(command, os.ErrPermission)
	}
	cfg, err := readConfigFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return Config{}, asPrivilegeError(command, err)
		}
		return Config{}, fmt.Errorf("%w; fix it, or start again with agent config clear", err)
	}
	return cfg, nil
}

// InstallClass is the installer's class of the refusal (installlog): a
// refused code or too many attempts is the pairing's; another answer
// means the URL is not a working relay.
func (e *relayError) InstallClass() installlog.Class {
	if e.code == "pairing_code_invalid" || e.status == http.StatusTooManyRequests {
		return installlog.ClassPairingRefused
	}
	return installlog.ClassRelayUnreachable
}

// relayError is a refusal by the relay: its status and error code.
type relayError struct {
	status int
	code   string
	detail string
	// retryAfter is the Retry-After of a 429, in seconds.
	retryAfter string
}

func (e *relayError) Error() string {
	switch {
	case e.code == "pairing_code_invalid":
		return "the relay refused the pairing code: it is wrong, expired or already used; get a new one"
	case e.status == http.StatusTooManyRequests:
		return "the relay refused: too many attempts from this address; try again in " + e.retryAfter + " s"
	case e.status == http.StatusUnauthorized:
		return "the relay no longer accepts the agent token"
	}
	msg := fmt.Sprintf("the relay answered %d", e.status)
	if e.code != "" {
		msg += " " + e.code
	}
	if e.detail != "" {
		msg += ": " + e.detail
	}
	return msg
}

// relayPath is the relay's base URL with path after its own.
func relayPath(relay, path string) (string, error) {
	u, err := url.Parse(relay)
	if err != nil {
		return "", errors.New("the relay URL does not parse")
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	return u.String(), nil
}

// exchangeCode posts code to the relay's pairing route and returns the
// new token and its user.
func exchangeCode(ctx context.Context, client *http.Client, relay, code string) (protocol.PairResponse, error) {
	target, err := relayPath(relay, protocol.PairPath)
	if err != nil {
		return protocol.PairResponse{}, err
	}
	body, _ := json.Marshal(protocol.PairRequest{Code: code}) // a string always encodes
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return protocol.PairResponse{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	var out struct {
		Data protocol.PairResponse `json:"data"`
	}
	if err := callRelay(client, req, http.StatusOK, &out); err != nil {
		return protocol.PairResponse{}, err
	}
	if !strings.HasPrefix(out.Data.Token, "tb_agent_") || out.Data.UserID == "" {
		return protocol.PairResponse{}, errors.New("the relay's answer holds no agent token")
	}
	return out.Data, nil
}

// revokeToken asks the relay to revoke token (DELETE /v1/agent/token).
func revokeToken(ctx context.Context, client *http.Client, relay, token string) error {
	target, err := relayPath(relay, protocol.AgentTokenPath)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, target, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return callRelay(client, req, http.StatusNoContent, nil)
}

// callRelay sends req and decodes a want answer into out (when not nil);
// another status is a *relayError. Errors never carry the request.
func callRelay(client *http.Client, req *http.Request, want int, out any) error {
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is the relay's, known to the caller
		}
		return fmt.Errorf("reaching the relay: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return fmt.Errorf("reading the relay's answer: %w", err)
	}
	if resp.StatusCode != want {
		var e struct {
			Error  string `json:"error"`
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(b, &e)
		return &relayError{status: resp.StatusCode, code: e.Error, detail: e.Detail, retryAfter: resp.Header.Get("Retry-After")}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return errors.New("the relay's answer is not the pairing route's: is the URL the relay's?")
		}
	}
	return nil
}

// pairInteractive is `agent pair` without a code, on a terminal: it says
// where to get a code, opens that page, asks for what is missing, then
// pairs, here or in an elevated relaunch.
func pairInteractive(ctx context.Context, env pairEnv, f pairFlags, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	in := bufio.NewReader(stdin)
	defer func() {
		if err != nil {
			fmt.Fprintln(stderr, "\nPairing failed:", err)
		}
		fmt.Fprint(stderr, "\nPress Enter to close.")
		_, _ = in.ReadString('\n')
	}()
	file, machine, _, err := pairTarget(f.config, f.data, env.getenv)
	if err != nil {
		return err
	}
	if f.config == "" && f.data == "" && env.getenv("AGENT_CONFIG") != "" {
		// An elevated relaunch does not inherit this environment.
		f.config = file
	}
	relay := f.relay
	if relay == "" {
		if cfg, err := readConfigFile(file); err == nil {
			relay = cfg.RelayURL
		}
	}
	fmt.Fprintln(stderr, "Pair this PC with your TradeBridge account.")
	if relay == "" {
		fmt.Fprint(stderr, "\nThe relay's address (as your provider gave it, e.g. https://relay.example): ")
		line, err := readLine(in)
		if err != nil {
			return err
		}
		relay = line
		if !validRelayURL(relay) {
			return errors.New("the relay's address must start with https:// (or http://) and name a host, e.g. https://relay.example")
		}
	}
	page, err := relayPath(relay, "/app/pair")
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "\n1. Get a pairing code: sign in to your dashboard and choose \"Add a PC\":\n     %s\n", page)
	fmt.Fprintln(stderr, "   (opening it in your browser; your operator can also give you a code)")
	_ = env.openURL(page)
	fmt.Fprint(stderr, "\n2. Type the code shown there (XXXX-XXXX), then Enter: ")
	code, err := readLine(in)
	if err != nil {
		return err
	}
	if code == "" {
		return errors.New("no code was typed")
	}
	if env.needsElevation(machine) {
		fmt.Fprintln(stderr, "\nThe agent's settings belong to the administrators: Windows asks for permission now.")
		rc, err := env.elevate(append([]string{"pair", code, "--pause"}, f.args(relay)...))
		if err != nil {
			return err
		}
		if rc != 0 {
			return fmt.Errorf("pairing did not complete (exit code %d; the other window said why)", rc)
		}
		fmt.Fprintln(stderr, "\nThis PC is paired. The TradeBridge Agent service connects within a few seconds.")
		return nil
	}
	f.relay = relay
	if err := pairWith(ctx, env, f, code, stdout); err != nil {
		return err
	}
	fmt.Fprintln(stderr, "\nThis PC is paired.")
	if machine {
		fmt.Fprintln(stderr, "The TradeBridge Agent service connects within a few seconds.")
	}
	return nil
}

// readLine reads one line typed at the terminal, trimmed.
func readLine(in *bufio.Reader) (string, error) {
	line, err := in.ReadString('\n')
	if err != nil && (!errors.Is(err, io.EOF) || line == "") {
		return "", errors.New("nothing was typed")
	}
	return strings.TrimSpace(line), nil
}

// pressEnter says "Press Enter to close" and waits for it.
func pressEnter(stdin io.Reader, stderr io.Writer) {
	fmt.Fprint(stderr, "\nPress Enter to close.")
	_, _ = bufio.NewReader(stdin).ReadString('\n')
}

// unpairFlags are the flags of `agent unpair`.
type unpairFlags struct {
	config, data string
	force        bool
}

func newUnpairCmd(env pairEnv) *cobra.Command {
	var f unpairFlags
	cmd := &cobra.Command{
		Use:   "unpair",
		Short: "Revoke this PC's agent token on the relay and remove it from the configuration",
		Long: "Revoke this PC's agent token on the relay (DELETE /v1/agent/token, authorized by that\n" +
			"token) and remove it from the config file (--config or AGENT_CONFIG, else DIR/config.json\n" +
			"with --data DIR, else the machine's); the relay URL stays. When the relay cannot be reached,\n" +
			"nothing changes, unless --force, which removes the token here all the same: it then stays\n" +
			"valid on the relay until it is revoked from the dashboard or by the operator.\n" +
			"Prints {\"unpaired\":true,\"revoked\":true|false} (revoked: the relay revoked the token now).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return unpair(cmd.Context(), env, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&f.config, "config", "", "config file (env AGENT_CONFIG; default the machine's, or DIR/config.json with --data)")
	cmd.Flags().StringVar(&f.data, "data", "", "the configuration is DIR/config.json (as agent pair --data DIR wrote it)")
	cmd.Flags().BoolVar(&f.force, "force", false, "remove the token here even when the relay cannot revoke it")
	return cmd
}

// unpair revokes the configured token on the relay, then removes it from
// the config file.
func unpair(ctx context.Context, env pairEnv, f unpairFlags, stdout, stderr io.Writer) error {
	file, machine, _, err := pairTarget(f.config, f.data, env.getenv)
	if err != nil {
		return err
	}
	cfg, err := pairPreflight("unpair", file, machine)
	if err != nil {
		return err
	}
	type result struct {
		Unpaired bool `json:"unpaired"`
		Revoked  bool `json:"revoked"`
	}
	if cfg.Token == "" {
		fmt.Fprintln(stderr, "agent: no agent token is configured in", file, "- nothing to revoke")
		return printJSON(stdout, result{Unpaired: true})
	}
	client, err := env.client(cfg)
	if err != nil {
		return err
	}
	revoked := false
	switch err := revokeRelay(ctx, client, cfg.RelayURL, cfg.Token); {
	case err == nil:
		revoked = true
	case isRefusedToken(err):
		fmt.Fprintln(stderr, "agent: the relay no longer accepts this token (already revoked, or another relay's); removing it here")
	case f.force:
		fmt.Fprintln(stderr, "agent: the relay did not revoke the token ("+err.Error()+"); removing it here all the same: "+
			"it stays valid on the relay until it is revoked from the dashboard or by the operator (relay tokens revoke)")
	default:
		return fmt.Errorf("%w; nothing was changed (--force removes the token here all the same)", err)
	}
	cfg.Token = ""
	if err := writeConfigFile(file, machine, cfg); err != nil {
		return asPrivilegeError("unpair", err)
	}
	return printJSON(stdout, result{Unpaired: true, Revoked: revoked})
}

// revokeRelay revokes token on relay; an unusable relay URL is an error
// like an unreachable relay.
func revokeRelay(ctx context.Context, client *http.Client, relay, token string) error {
	if relay == "" || !validRelayURL(relay) {
		return errors.New("the configuration names no usable relay URL")
	}
	return revokeToken(ctx, client, relay, token)
}

// isRefusedToken reports a relay's 401: the token is not valid there.
func isRefusedToken(err error) bool {
	var re *relayError
	return errors.As(err, &re) && re.status == http.StatusUnauthorized
}
