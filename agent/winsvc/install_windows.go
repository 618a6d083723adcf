package winsvc

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc/eventlog"
	"golang.org/x/sys/windows/svc/mgr"
)

// recoveryActions are RecoveryActions as the service manager takes them.
func recoveryActions() []mgr.RecoveryAction {
	out := make([]mgr.RecoveryAction, len(RecoveryActions))
	for i, a := range RecoveryActions {
		out[i] = mgr.RecoveryAction{Type: mgr.ServiceRestart, Delay: a.Delay}
	}
	return out
}

// openService opens the installed service with every right.
func openService() (*mgr.Mgr, *mgr.Service, error) {
	m, err := mgr.Connect()
	if err != nil {
		return nil, nil, err
	}
	s, err := m.OpenService(Name)
	if err != nil {
		m.Disconnect() //nolint:errcheck
		return nil, nil, fmt.Errorf("opening the service %s: %w", Name, err)
	}
	return m, s, nil
}

// setRecovery applies RecoveryActions to s, also when the agent stops
// with an error instead of crashing.
func setRecovery(s *mgr.Service) error {
	if err := s.SetRecoveryActions(recoveryActions(), uint32(RecoveryResetPeriod.Seconds())); err != nil {
		return fmt.Errorf("setting the service's recovery actions: %w", err)
	}
	if err := s.SetRecoveryActionsOnNonCrashFailures(true); err != nil {
		return fmt.Errorf("setting the service's recovery actions: %w", err)
	}
	return nil
}

// ApplyRecovery sets the installed service's full list of recovery
// actions (RecoveryActions), after kardianos/service installed it with
// the first only.
func ApplyRecovery() error {
	m, s, err := openService()
	if err != nil {
		return err
	}
	defer m.Disconnect() //nolint:errcheck
	defer s.Close()
	return setRecovery(s)
}

// ConfigureInstalled finishes a service the installer registered: delayed
// automatic start, the recovery actions, and the Event Log source.
func ConfigureInstalled() error {
	m, s, err := openService()
	if err != nil {
		return err
	}
	defer m.Disconnect() //nolint:errcheck
	defer s.Close()
	cfg, err := s.Config()
	if err != nil {
		return fmt.Errorf("reading the service's configuration: %w", err)
	}
	cfg.StartType = mgr.StartAutomatic
	cfg.DelayedAutoStart = true
	if err := s.UpdateConfig(cfg); err != nil {
		return fmt.Errorf("setting the service's delayed automatic start: %w", err)
	}
	if err := setRecovery(s); err != nil {
		return err
	}
	return InstallEventSource()
}

// InstallEventSource registers the service's Event Log source; one that
// exists already is fine.
func InstallEventSource() error {
	err := eventlog.InstallAsEventCreate(Name, eventlog.Error|eventlog.Warning|eventlog.Info)
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return fmt.Errorf("registering the Event Log source: %w", err)
	}
	return nil
}

// RemoveEventSource removes the service's Event Log source; one that does
// not exist is fine.
func RemoveEventSource() error {
	err := eventlog.Remove(Name)
	if err != nil && !errors.Is(err, windows.ERROR_FILE_NOT_FOUND) {
		return fmt.Errorf("removing the Event Log source: %w", err)
	}
	return nil
}

// NeedsPrivilege reports that err is Windows refusing an operation to a
// prompt that is not elevated.
func NeedsPrivilege(err error) bool {
	return errors.Is(err, windows.ERROR_ACCESS_DENIED) ||
		(err != nil && strings.Contains(err.Error(), "Access is denied"))
}

// PrivilegeHint is how a refused command is told to run elevated.
const PrivilegeHint = "needs an elevated prompt (Run as administrator)"
