package installlog

import (
	"errors"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
	"golang.org/x/sys/windows/svc/eventlog"
)

// applicationSources is the registry key of the Application log's
// sources.
const applicationSources = `SYSTEM\CurrentControlSet\Services\EventLog\Application\`

// systemEventLog opens the Application log under Source, registering the
// source first when it is missing (the installer's custom actions run
// before the service registered it, or after it was removed). A source
// that cannot be registered (no rights) is opened all the same: Windows
// then shows the line with a note that the source is unknown.
func systemEventLog() (EventLog, error) {
	if !sourceExists(Source) {
		_ = eventlog.InstallAsEventCreate(Source, eventlog.Error|eventlog.Warning|eventlog.Info)
	}
	return eventlog.Open(Source)
}

// sourceExists reports whether the Application log's source name is
// registered (a key that cannot be read for want of rights counts as
// registered: registering it would fail as well).
func sourceExists(name string) bool {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, applicationSources+name, registry.QUERY_VALUE)
	if err != nil {
		return !errors.Is(err, windows.ERROR_FILE_NOT_FOUND)
	}
	k.Close()
	return true
}
