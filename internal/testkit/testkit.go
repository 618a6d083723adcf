// Package testkit holds what every package's tests share and that needs
// nothing of the project: the named waits of Eventually, time.After and
// test contexts (Short, Medium, Long and the polling Tick), a manual
// Clock, and MissingTool, the rule for a tool beyond Go that a test needs.
// It imports no project package, so any test may use it; the fakes of the
// project's own interfaces live beside those interfaces
// (relay/auth/authtest, relay/store/storetest, relay/budget/budgettest),
// the in-process relay and agent in internal/systemtest, and the headless
// browser in internal/browsertest.
package testkit

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// The named waits. A test waits for something that must happen with
// Medium or Long: a passing test returns as soon as it happens, so these
// are generous, chosen so that nothing times out under the race detector
// on two cores shared with other test binaries. Short is for the other
// kind of wait, watching that something does NOT happen, which costs its
// whole length on every run.
const (
	// Short is how long a test watches for something that must not
	// happen (a frame not sent, a call not made, a goroutine still
	// blocked): what would come comes within milliseconds over loopback,
	// and every run pays the whole wait. Never the bound of something
	// that must happen.
	Short = time.Second
	// Medium bounds the wait for one thing that must happen: a frame, a
	// connection, a state an Eventually polls for, a call through the
	// tunnel. It takes milliseconds; the rest is slack for a loaded
	// machine.
	Medium = 5 * time.Second
	// Long bounds the wait for something that takes several steps or
	// timers of its own: an agent reconnecting with back-off after the
	// relay restarts, a cluster node noticing another's loss, a child
	// process starting, a server draining.
	Long = 15 * time.Second
	// Tick is the polling interval of Eventually: short enough that a
	// test does not wait long past the moment, long enough not to keep a
	// core busy under the race detector.
	Tick = 10 * time.Millisecond
)

// MissingTool skips t because a tool it needs beyond Go is not installed,
// with a message saying how to install it; under CI (CI set), where make
// test installs every such tool (scripts/test-deps.sh), it fails t
// instead, so that a broken install is not a silent skip.
func MissingTool(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...) + " (scripts/test-deps.sh installs it; make test runs that)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
