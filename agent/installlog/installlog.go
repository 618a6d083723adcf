// Package installlog says why a command the Windows installer ran failed.
// The MSI's custom actions run agent.exe with --msi-log FILE (the
// installer's own log, [MsiLogFileLocation]); a command so run that fails
// writes one line with its reason to the Windows Event Log (Application
// log, source TradeBridgeAgent, registered on demand) and appends it to
// FILE, and the process exits with the code of the failure's Class, which
// the MSI log records ("CustomAction … returned actual error code N").
//
// Packages mark their errors with WithClass, or give their error types a
// method InstallClass() Class; anything unmarked is ClassOther, except
// network failures, which are ClassRelayUnreachable. The line never holds
// a token or a pairing code: they are removed from it if an error carried
// one.
package installlog

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"tradebridge/agent/diag"
)

// Class is a kind of failure, with its own exit code.
type Class int

// The classes of failure. Their exit codes (ExitCode) are a documented
// contract (installer/README.md): never renumber them.
const (
	ClassOther            Class = iota // anything else: exit code 1
	ClassInvalid                       // a value the agent refuses: 10
	ClassPairingRefused                // the relay refused the pairing code, or it expired: 11
	ClassRelayUnreachable              // the relay could not be reached: 12
	ClassNeedsElevation                // run without the rights the command needs: 13
	ClassFolder                        // a folder or its permissions could not be prepared: 14
)

// Classes lists every class, in the order of their exit codes.
var Classes = []Class{ClassOther, ClassInvalid, ClassPairingRefused, ClassRelayUnreachable, ClassNeedsElevation, ClassFolder}

// ExitCode is the process's exit code for a failure of class c.
func (c Class) ExitCode() int {
	switch c {
	case ClassInvalid:
		return 10
	case ClassPairingRefused:
		return 11
	case ClassRelayUnreachable:
		return 12
	case ClassNeedsElevation:
		return 13
	case ClassFolder:
		return 14
	}
	return 1
}

// String describes c in a few words, as the reported line does.
func (c Class) String() string {
	switch c {
	case ClassInvalid:
		return "invalid value"
	case ClassPairingRefused:
		return "pairing code refused or expired"
	case ClassRelayUnreachable:
		return "relay unreachable"
	case ClassNeedsElevation:
		return "needs elevation"
	case ClassFolder:
		return "folder or permissions"
	}
	return "failed"
}

// EventID is the Event Log's event ID of a failure of class c: 100 plus
// its exit code (101, 110–114).
func (c Class) EventID() uint32 { return uint32(100 + c.ExitCode()) }

// NoticeEventID is the event ID of Notice's informational lines.
const NoticeEventID = 120

// classifier is an error that knows its class.
type classifier interface {
	InstallClass() Class
}

// ClassError is an error marked with its class (WithClass).
type ClassError struct {
	Class Class
	Err   error
}

func (e *ClassError) Error() string       { return e.Err.Error() }
func (e *ClassError) Unwrap() error       { return e.Err }
func (e *ClassError) InstallClass() Class { return e.Class }

// WithClass marks err as a failure of class c; nil stays nil. The
// outermost mark of an error's chain wins.
func WithClass(err error, c Class) error {
	if err == nil {
		return nil
	}
	return &ClassError{Class: c, Err: err}
}

// ClassOf is err's class: the first mark in its chain (WithClass, or an
// error type with an InstallClass method), else ClassRelayUnreachable for
// a network failure (a refused or timed-out connection, a name that does
// not resolve), else ClassOther.
func ClassOf(err error) Class {
	var c classifier
	if errors.As(err, &c) {
		return c.InstallClass()
	}
	var op *net.OpError
	var dns *net.DNSError
	if errors.As(err, &op) || errors.As(err, &dns) {
		return ClassRelayUnreachable
	}
	return ClassOther
}

// ExitCode is the exit code of a command that ended with err: 0 for nil,
// else its class's (ClassOf).
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	return ClassOf(err).ExitCode()
}

// EventLog is the system's log as Report and Notice write to it
// (golang.org/x/sys/windows/svc/eventlog's Log offers it).
type EventLog interface {
	Error(eid uint32, msg string) error
	Info(eid uint32, msg string) error
	Close() error
}

// Options say where Report and Notice write.
type Options struct {
	// File is the installer's log to append to (--msi-log); empty: none.
	// A file that does not exist is not created.
	File string
	// Command names what failed, e.g. "agent config set".
	Command string
	// EventLog is where the line goes besides File; nil: the system's
	// (on Windows the Application log, source TradeBridgeAgent; elsewhere
	// none).
	EventLog func() (EventLog, error)
	// Secrets are removed from the line literally, besides anything that
	// looks like a token or a pairing code.
	Secrets []string
	// Now stamps the line in File; nil: time.Now.
	Now func() time.Time
}

// Source is the Event Log source the lines are written under (the
// service's).
const Source = "TradeBridgeAgent"

// Report writes why the command failed with err, to the Event Log and
// File, both best effort, and returns the exit code (0 and nothing
// written for nil).
func Report(o Options, err error) int {
	if err == nil {
		return 0
	}
	class := ClassOf(err)
	command := o.Command
	if command == "" {
		command = "agent"
	}
	line := fmt.Sprintf("%s failed (exit code %d, %s): %s", command, class.ExitCode(), class, err)
	line = Clean(line, o.Secrets...)
	o.write(line, func(l EventLog) error { return l.Error(class.EventID(), line) })
	return class.ExitCode()
}

// Notice writes an informational message (e.g. what an uninstallation
// leaves on the PC) to the Event Log and File, best effort.
func Notice(o Options, msg string) {
	msg = Clean(msg, o.Secrets...)
	o.write(msg, func(l EventLog) error { return l.Info(NoticeEventID, msg) })
}

func (o Options) write(line string, event func(EventLog) error) {
	open := o.EventLog
	if open == nil {
		open = systemEventLog
	}
	if l, err := open(); err == nil && l != nil {
		_ = event(l)
		_ = l.Close()
	}
	if o.File != "" {
		now := time.Now
		if o.Now != nil {
			now = o.Now
		}
		_ = appendLine(o.File, fmt.Sprintf("%s [%s] %s", Source, now().UTC().Format(time.RFC3339), line))
	}
}

// codePattern matches a pairing code (XXXX-XXXX in the codes' alphabet,
// or its 8 characters without the dash when they hold a digit);
// tokenPattern anything shaped like a TradeBridge token, however short.
var (
	codePattern  = regexp.MustCompile(`\b[A-HJKMNP-Z2-9]{4}-[A-HJKMNP-Z2-9]{4}\b`)
	code8Pattern = regexp.MustCompile(`\b[A-HJKMNP-Z2-9]*[2-9][A-HJKMNP-Z2-9]*\b`)
	tokenPattern = regexp.MustCompile(`tb_[a-z]+_[^\s"']*`)
)

// Clean makes text one line without tokens, pairing codes or secrets.
func Clean(text string, secrets ...string) string {
	text = diag.NewRedactor(secrets...).Redact(text)
	text = tokenPattern.ReplaceAllString(text, diag.Redacted)
	text = codePattern.ReplaceAllString(text, diag.Redacted)
	text = code8Pattern.ReplaceAllStringFunc(text, func(w string) string {
		if len(w) == 8 {
			return diag.Redacted
		}
		return w
	})
	return strings.Join(strings.Fields(text), " ")
}
