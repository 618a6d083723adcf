package winsvc

import (
	"errors"
	"os"
	"time"

	"github.com/kardianos/service"
)

// DisplayName is the service's name in the Services console.
const DisplayName = "TradeBridge Agent"

// Description is the service's description in the service manager.
const Description = "Connects the trading platform on this PC (NinjaTrader 8) to the TradeBridge relay. " +
	"Configure it with `agent config set`; its logs are in the agent's log folder."

// RecoveryAction is what the service manager does after a failure of the
// service: restart it after Delay.
type RecoveryAction struct {
	Delay time.Duration
}

// RecoveryActions are the restarts after the first, second and each later
// failure of the service (Windows repeats the last one for every failure
// after the third), with increasing delays so that a crash at start does
// not spin. A day without failures (RecoveryResetPeriod) starts the count
// again.
var RecoveryActions = []RecoveryAction{
	{Delay: 5 * time.Second},
	{Delay: 30 * time.Second},
	{Delay: 2 * time.Minute},
}

// RecoveryResetPeriod is how long the service must run without failing
// before the service manager counts failures from the first again.
const RecoveryResetPeriod = 24 * time.Hour

// ErrWindowsOnly is returned by the installer's steps (Windows services
// and their Event Log source) on other systems.
var ErrWindowsOnly = errors.New("the installer's steps (--msi) apply to Windows only")

// systemdScript is the systemd unit, in kardianos/service's template
// syntax: the agent restarts always, 5 s after it stopped, without ever
// giving up; it starts once the network is up; systemd creates its log
// and state folders readable by root only, and the agent's files are
// created readable by root only (UMask).
const systemdScript = `[Unit]
Description={{Description}}
ConditionFileIsExecutable={{Path | cmdEscape}}
After=network-online.target
Wants=network-online.target
StartLimitIntervalSec=0

[Service]
ExecStart={{Path | cmdEscape}}{{range Arguments}} {{. | cmd}}{{end}}
Restart=always
RestartSec=5
TimeoutStopSec=30
UMask=0077
NoNewPrivileges=yes
PrivateTmp=yes
ProtectSystem=full
LogsDirectory=tradebridge
LogsDirectoryMode=0700
StateDirectory=tradebridge/agent
StateDirectoryMode=0700

[Install]
WantedBy=multi-user.target
`

// Config is the service's configuration for the service manager: the
// agent's executable at exePath started with ServiceArguments, started
// automatically (on Windows after the other automatic services: delayed)
// and restarted after a failure. The full list of Windows recovery
// actions is applied after the install (ApplyRecovery), since
// kardianos/service sets only the first.
func Config(exePath string) *service.Config {
	return &service.Config{
		Name:        Name,
		DisplayName: DisplayName,
		Description: Description,
		Executable:  exePath,
		Arguments:   append([]string(nil), ServiceArguments...),
		Option: service.KeyValue{
			// Windows
			"StartType":              "automatic",
			"DelayedAutoStart":       true,
			"OnFailure":              "restart",
			"OnFailureDelayDuration": RecoveryActions[0].Delay.String(),
			"OnFailureResetPeriod":   int(RecoveryResetPeriod / time.Second),
			// Linux (systemd)
			"SystemdScript": systemdScript,
			"Restart":       "always",
			// macOS (launchd)
			"RunAtLoad": true,
			"KeepAlive": true,
		},
	}
}

// Service states, as Status reports them.
const (
	StatusRunning      = "running"
	StatusStopped      = "stopped"
	StatusNotInstalled = "not-installed"
	StatusUnknown      = "unknown"
)

// Report is the service's state as `agent status` prints it.
type Report struct {
	Service string `json:"service"`
	Status  string `json:"status"`
}

// New is the agent's service in the system's service manager, running
// program. exePath empty means the running executable.
func New(program service.Interface, exePath string) (service.Service, error) {
	if exePath == "" {
		var err error
		if exePath, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	return service.New(program, Config(exePath))
}

// StatusOf asks the service manager for s's state (s is a
// service.Service).
func StatusOf(s interface {
	Status() (service.Status, error)
}) Report {
	st, err := s.Status()
	r := Report{Service: Name, Status: StatusUnknown}
	switch {
	case errors.Is(err, service.ErrNotInstalled):
		r.Status = StatusNotInstalled
	case err != nil:
	case st == service.StatusRunning:
		r.Status = StatusRunning
	case st == service.StatusStopped:
		r.Status = StatusStopped
	}
	return r
}

// QueryStatus asks the service manager for the agent service's state; it
// needs no privileges.
func QueryStatus() Report {
	s, err := New(idle{}, "")
	if err != nil {
		return Report{Service: Name, Status: StatusUnknown}
	}
	return StatusOf(s)
}

// idle is a service program that does nothing, for asking about the
// service.
type idle struct{}

func (idle) Start(service.Service) error { return nil }
func (idle) Stop(service.Service) error  { return nil }
