// Package browser_test runs the traders' dashboard (relay/dashboard) in a
// real browser, as a trader does: Debian's chromium, headless, driven by
// internal/browsertest, against a real relay on a loopback port
// (internal/systemtest, sign-up open), with the agent's real command
// (cmd/agent, built once by TestMain) paired from the page and run as a
// child process on the simulator, the way a trader's PC runs it.
//
// The cases: signing up, out and in again, and a wrong password; adding a
// PC (its status turns online on the page, without a reload); API tokens
// made and revoked; the kill switch held (and tapped twice, on a phone)
// flattening the simulator's positions, which the activity page shows,
// and turned on while the PC is off (recorded, entries refused at once);
// the same flow at a phone's 375×812 viewport with nothing wider than the
// screen; a name holding markup shown as text; forms on another site
// posting to the dashboard refused. Part 2's pages: the Management API's
// editors (a copier made in the form copying a simulator order, a 422
// next to its field, a 412 between two sessions explained, a monitor
// tripping live and restarted, a Tandem copier halting live); the
// settings' editors (an alert destination whose "Send a test" reaches a
// receiver of the test, signed, listed as sent without a reload; the news
// lockout's event rows; an ATM template's brackets refused, then stored;
// an account group made and deleted); linking a Tradovate login (the
// Tradovate fake, systemtest.Tradovate) with "Link demo" through the
// broker's authorization page and back, with the API-key form on a phone
// (a wrong password refused first), and the broker family's editors once
// linked. Each case has a relay of its own, so they run in parallel. A
// page's uncaught exception or console error (a Content-Security-Policy
// violation among them) fails its case.
//
// Each page's screenshot is written under the test's temporary folder;
// the README's ones come from
//
//	go test ./relay/dashboard/browser -run . -screenshots docs/screenshots
package browser_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"go.uber.org/goleak"
)

// agentBin is the agent's command, built by TestMain.
var agentBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if !testing.Short() {
		dir, err := os.MkdirTemp("", "tradebridge-browser-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		_, file, _, _ := runtime.Caller(0)
		repo := filepath.Join(filepath.Dir(file), "..", "..", "..")
		agentBin = filepath.Join(dir, "agent")
		cmd := exec.Command("go", "build", "-o", agentBin, "./cmd/agent")
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build ./cmd/agent: %v\n%s", err, out)
			return 1
		}
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}
