//go:build !windows

package installlog

// systemEventLog is none outside Windows: the line goes to the file only.
func systemEventLog() (EventLog, error) { return nil, nil }
