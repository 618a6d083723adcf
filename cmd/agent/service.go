package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/kardianos/service"
	"github.com/spf13/cobra"

	"tradebridge/agent/installlog"
	"tradebridge/agent/winsvc"
)

// controller is the agent's service in the system's service manager
// (kardianos/service's Service offers it).
type controller interface {
	Install() error
	Uninstall() error
	Start() error
	Stop() error
	Restart() error
	Status() (service.Status, error)
	// Platform names the service manager ("linux-systemd",
	// "windows-service", "darwin-launchd").
	Platform() string
}

// openSystemService opens the agent's service in the system's service
// manager; the service is the running executable.
func openSystemService() (controller, error) {
	s, err := winsvc.New(idleProgram{}, "")
	if err != nil {
		return nil, err
	}
	return systemService{s}, nil
}

// installGuard is what a controller may also offer: the checks and the
// machine folders around installing the service. The system's service
// offers it (winsvc's, which do nothing outside Windows); a controller
// without it is installed without them.
type installGuard interface {
	// MSIInstalled reports whether the installer (MSI) installed the
	// agent, which then owns the service.
	MSIInstalled() (bool, error)
	// CheckExecutable refuses an executable a non-administrator may
	// change.
	CheckExecutable() error
	// EnsureFolders creates or repairs the machine's folders.
	EnsureFolders() error
}

// systemService is the system's service with winsvc's install guard.
type systemService struct{ service.Service }

func (systemService) MSIInstalled() (bool, error) { return winsvc.MSIInstalled() }
func (systemService) EnsureFolders() error {
	return installlog.WithClass(winsvc.EnsureMachineFolders(), installlog.ClassFolder)
}
func (systemService) CheckExecutable() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return winsvc.CheckExecutable(exe)
}

// guardInstall refuses to install the service from c's executable when
// the installer (MSI) installed the agent, or when a non-administrator
// may change the executable (the service would run what they put
// there).
func guardInstall(c controller) error {
	g, ok := c.(installGuard)
	if !ok {
		return nil
	}
	if err := refuseMSI(g); err != nil {
		return err
	}
	if err := g.CheckExecutable(); err != nil {
		return fmt.Errorf("the service runs this executable as SYSTEM, and other users may change it or its folder: "+
			"copy agent.exe to a folder only administrators may change (e.g. under Program Files): %w", err)
	}
	return nil
}

// refuseMSI refuses when the installer (MSI) installed the agent.
func refuseMSI(g installGuard) error {
	msi, err := g.MSIInstalled()
	if err != nil {
		return err
	}
	if msi {
		return winsvc.ErrMSIInstalled
	}
	return nil
}

// idleProgram is the program of a service that is only controlled, not
// run.
type idleProgram struct{}

func (idleProgram) Start(service.Service) error { return nil }
func (idleProgram) Stop(service.Service) error  { return nil }

// errNotInstalled is returned by start, stop and restart when the service
// is not installed.
var errNotInstalled = errors.New("the service " + winsvc.Name + " is not installed: run `agent install` first")

// newServiceCmds are install, uninstall, start, stop, restart and status,
// on the service open returns.
func newServiceCmds(open func() (controller, error), pair pairEnv) []*cobra.Command {
	status := func(c controller) winsvc.Report { return winsvc.StatusOf(c) }
	report := func(w io.Writer, c controller) error {
		b, err := json.Marshal(status(c))
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	}
	// control runs op on the installed service, then prints its state.
	control := func(name string, op func(controller) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			c, err := open()
			if err != nil {
				return err
			}
			if status(c).Status == winsvc.StatusNotInstalled {
				return errNotInstalled
			}
			if err := op(c); err != nil {
				return serviceError(name, err)
			}
			return report(cmd.OutOrStdout(), c)
		}
	}

	var msiInstall, msiUninstall, revoke bool
	install := &cobra.Command{
		Use:   "install",
		Short: "Install the agent as a system service started with the machine (elevated prompt / root)",
		Long: "Install the agent as a system service: on Windows the service " + winsvc.Name + " (delayed automatic\n" +
			"start, restarted after a failure after 5 s, 30 s, then 2 min), on Linux a systemd unit, on macOS a\n" +
			"launchd job. The service runs this executable, from where it is now, as `agent run --service`;\n" +
			"configure it with `agent config set`, start it with `agent start`. On Windows it creates the\n" +
			"machine's folders under %ProgramData%\\TradeBridge for SYSTEM and the Administrators alone, and\n" +
			"refuses when the installer (MSI) installed the agent, or when other users may change this\n" +
			"executable or its folder.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := open()
			if err != nil {
				return err
			}
			g, guarded := c.(installGuard)
			if msiInstall {
				// The installer's step, before the service starts: the
				// machine folders first, with their security.
				if guarded {
					if err := g.EnsureFolders(); err != nil {
						return serviceError("install", err)
					}
				}
				return serviceError("install", winsvc.ConfigureInstalled())
			}
			if err := guardInstall(c); err != nil {
				return err
			}
			if runtime.GOOS == "linux" && c.Platform() != "linux-systemd" {
				return errors.New("agent install needs systemd on Linux; this system's service manager is another")
			}
			if st := status(c).Status; st != winsvc.StatusNotInstalled && st != winsvc.StatusUnknown {
				return errors.New("the service " + winsvc.Name + " is installed already (agent uninstall removes it)")
			}
			if err := c.Install(); err != nil {
				return serviceError("install", err)
			}
			if err := winsvc.ApplyRecovery(); err != nil {
				return serviceError("install", err)
			}
			if guarded {
				if err := g.EnsureFolders(); err != nil {
					return serviceError("install", err)
				}
			}
			return report(cmd.OutOrStdout(), c)
		},
	}
	install.Flags().BoolVar(&msiInstall, "msi", false, "the installer registered the service: finish it (delayed start, recovery, Event Log source)")
	_ = install.Flags().MarkHidden("msi")

	uninstall := &cobra.Command{
		Use:   "uninstall",
		Short: "Stop and remove the agent's system service (elevated prompt / root); the configuration and logs stay",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if msiUninstall {
				// Said before the source goes, so the line is under it.
				installlog.Notice(installlog.Options{File: msiLogValue(cmd)}, leftBehind(winsvc.MachinePaths(), fileExists))
				return serviceError("uninstall", winsvc.RemoveEventSource())
			}
			c, err := open()
			if err != nil {
				return err
			}
			if g, ok := c.(installGuard); ok {
				if err := refuseMSI(g); err != nil {
					return err
				}
			}
			switch status(c).Status {
			case winsvc.StatusNotInstalled:
				return report(cmd.OutOrStdout(), c)
			case winsvc.StatusRunning:
				if err := c.Stop(); err != nil {
					return serviceError("uninstall", err)
				}
			}
			if err := c.Uninstall(); err != nil {
				return serviceError("uninstall", err)
			}
			if err := report(cmd.OutOrStdout(), c); err != nil {
				return err
			}
			return offerRevoke(cmd.Context(), pair, revoke, cmd.InOrStdin(), cmd.ErrOrStderr())
		},
	}
	uninstall.Flags().BoolVar(&revoke, "revoke", false, "also revoke this PC's agent token on the relay (agent unpair), without asking")
	uninstall.Flags().BoolVar(&msiUninstall, "msi", false, "the installer removes the service: say what stays on the PC, remove the Event Log source")
	_ = uninstall.Flags().MarkHidden("msi")

	return []*cobra.Command{install, uninstall,
		{Use: "start", Short: "Start the agent's service (elevated prompt / root)", Args: cobra.NoArgs,
			RunE: control("start", controller.Start)},
		{Use: "stop", Short: "Stop the agent's service (elevated prompt / root)", Args: cobra.NoArgs,
			RunE: control("stop", controller.Stop)},
		{Use: "restart", Short: "Restart the agent's service (elevated prompt / root)", Args: cobra.NoArgs,
			RunE: control("restart", controller.Restart)},
		statusCmd(open, report),
	}
}

// statusCmd is `agent status [--pause]`.
func statusCmd(open func() (controller, error), report func(io.Writer, controller) error) *cobra.Command {
	var pause bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: `Print the service's state as JSON: {"service":"` + winsvc.Name + `","status":"running|stopped|not-installed|unknown"}`,
		Long: `Print the service's state as JSON: {"service":"` + winsvc.Name + `","status":"running|stopped|not-installed|unknown"}.` + "\n" +
			"--pause (the Start menu's \"TradeBridge Agent status\") adds a summary for people: the service's state, the\n" +
			"configured relay, whether a token is set (never the token) and the platform; then it waits for Enter\n" +
			"when run in a console window.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			c, err := open()
			if err == nil {
				err = report(out, c)
			}
			if !pause {
				return err
			}
			if err != nil {
				fmt.Fprintln(out, "The service's state could not be read:", err)
			} else {
				file, _ := configFileOf("", os.Getenv)
				cfg, cfgErr := readConfigFile(file)
				writeStatusSummary(out, winsvc.StatusOf(c), file, cfg, cfgErr)
			}
			waitForEnter(out, cmd.InOrStdin())
			return err
		},
	}
	cmd.Flags().BoolVar(&pause, "pause", false, "also print a summary for people, then wait for Enter (the Start-menu entry)")
	return cmd
}

// writeStatusSummary writes the service's state r and the configuration
// cfg read from file (cfgErr: why it could not be) for people. The token
// appears only as set or not set.
func writeStatusSummary(w io.Writer, r winsvc.Report, file string, cfg Config, cfgErr error) {
	state := map[string]string{
		winsvc.StatusRunning:      "running",
		winsvc.StatusStopped:      "stopped (it starts with Windows; Services > " + winsvc.DisplayName + " > Start starts it now)",
		winsvc.StatusNotInstalled: "not installed (install the TradeBridge Agent MSI)",
	}[r.Status]
	if state == "" {
		state = "unknown (the service manager did not say)"
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, winsvc.DisplayName)
	fmt.Fprintln(w, "  Service:       "+state)
	fmt.Fprintln(w, "  Configuration: "+file)
	switch {
	case errors.Is(cfgErr, fs.ErrNotExist):
		fmt.Fprintln(w, "  Not paired yet: open Start > TradeBridge Agent > Pair this PC.")
		return
	case errors.Is(cfgErr, fs.ErrPermission):
		fmt.Fprintln(w, "  The configuration is readable by "+machineReaders+" only: run this entry as administrator to see it.")
		return
	case cfgErr != nil:
		fmt.Fprintln(w, "  The configuration cannot be used:", cfgErr)
		return
	}
	relay := cfg.RelayURL
	if relay == "" {
		relay = "not set"
	}
	platform := cfg.Platform
	if platform == "" {
		platform = "not set (the service's default)"
	}
	fmt.Fprintln(w, "  Relay:         "+relay)
	fmt.Fprintln(w, "  Token:         "+set(cfg.Token))
	fmt.Fprintln(w, "  Platform:      "+platform)
	if cfg.Token == "" {
		fmt.Fprintln(w, "  Not paired yet: open Start > TradeBridge Agent > Pair this PC.")
	}
}

// waitForEnter asks for Enter and waits for it when in is a console (a
// window the Start menu opened closes when the command ends); otherwise
// it returns at once.
func waitForEnter(w io.Writer, in io.Reader) {
	if f, ok := in.(*os.File); !ok || !isConsole(f) {
		return
	}
	fmt.Fprint(w, "\nPress Enter to close this window.")
	_, _ = bufio.NewReader(in).ReadString('\n')
}

// isConsole reports whether f is a terminal or console (a character
// device), not a file or pipe.
func isConsole(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// msiLogValue is the installer's log the command was given (--msi-log),
// or empty.
func msiLogValue(cmd *cobra.Command) string {
	if f := cmd.Flags().Lookup(msiLogFlag); f != nil {
		return f.Value.String()
	}
	return ""
}

// fileExists reports whether path exists (or cannot be looked at).
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// leftBehind says what an uninstallation leaves on the PC and where: the
// machine folders p (the configuration only if exists finds it still
// there), the NinjaTrader add-on's discovery file in each trader's
// profile, and the add-on inside NinjaTrader.
func leftBehind(p winsvc.Paths, exists func(string) bool) string {
	var b strings.Builder
	b.WriteString(winsvc.DisplayName + " was uninstalled. Left on this PC: ")
	if exists(p.ConfigFile) {
		b.WriteString("the configuration " + p.ConfigFile + ", with the agent token (delete it); ")
	}
	b.WriteString("the agent's logs (" + p.LogDir + ") and data (" + p.DataDir + "), kept for support: delete " +
		filepath.Dir(filepath.Dir(p.ConfigFile)) + " when they are not wanted; ")
	b.WriteString(`in each trader's profile, the NinjaTrader add-on's discovery file %LOCALAPPDATA%\TradeBridge\ninjatrader-addon.json; `)
	b.WriteString(`the TradeBridge add-on inside NinjaTrader 8 (Documents\NinjaTrader 8\bin\Custom\AddOns\TradeBridge*.cs): ` +
		"remove it in NinjaTrader's NinjaScript Editor.")
	return b.String()
}

// offerRevoke, after `agent uninstall` removed the service, says what
// stays on the PC and offers to revoke the PC's agent token on the relay:
// at once with --revoke (revoke), else by asking on a terminal, else by
// naming `agent unpair`. The configuration is the one `agent config`
// edits (the machine's unless AGENT_CONFIG names another).
func offerRevoke(ctx context.Context, env pairEnv, revoke bool, stdin io.Reader, stderr io.Writer) error {
	p := winsvc.MachinePaths()
	file, _ := configFileOf("", env.getenv)
	fmt.Fprintf(stderr, "The service %s was removed. Left on this PC: agent.exe itself; the configuration %s; "+
		"the agent's logs (%s) and data (%s), for support.\n", winsvc.Name, file, p.LogDir, p.DataDir)
	cfg, err := readConfigFile(file)
	if err != nil || cfg.Token == "" {
		return nil // nothing to revoke, or nothing this prompt may read
	}
	if !revoke {
		if !env.interactive(stdin) {
			fmt.Fprintln(stderr, "The configuration still holds the PC's agent token: `agent unpair` revokes it on the relay, "+
				"`agent config clear` deletes the configuration.")
			return nil
		}
		fmt.Fprint(stderr, "The configuration still holds the PC's agent token. Revoke it on the relay now (agent unpair)? [y/N] ")
		answer, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(stderr, "The token stays valid; `agent unpair` revokes it later.")
			return nil
		}
	}
	if err := unpair(ctx, env, unpairFlags{config: file}, io.Discard, stderr); err != nil {
		return fmt.Errorf("the service was removed, but the token was not revoked: %w", err)
	}
	fmt.Fprintln(stderr, "The PC's agent token was revoked on the relay and removed from the configuration.")
	return nil
}

// serviceError says that command needs privileges when err is the
// system's refusal of them; it wraps any other error.
func serviceError(command string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, winsvc.ErrWindowsOnly):
		return err
	case winsvc.NeedsPrivilege(err):
		return &privilegeError{command: command, err: err}
	}
	return fmt.Errorf("%s: %w", command, err)
}
