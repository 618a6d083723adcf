package main

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
)

// lockedBuffer is an output buffer a process writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// demoStartup bounds make demo's start: a relay, an agent, and the
// curl lines it prints.
const demoStartup = time.Minute

// make demo's script, as make demo runs it (with the commands built from
// this tree, on free ports, in a folder of the test's): it prints the demo
// user's id, an elite user's; a second demo started while the first runs
// refuses to start and wipes nothing; a demo on a port that answers
// already refuses too.
func TestDemoScript(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs make demo's script; skipped with -short")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		testkit.MissingTool(t, "curl not found")
	}
	bin := t.TempDir()
	for _, c := range []string{"relay", "agent"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(bin, c), "tradebridge/cmd/"+c).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	work := filepath.Join(t.TempDir(), "demo")
	port := freePorts(t, 2)
	demo := func(dir string) *exec.Cmd {
		cmd := exec.Command("../../scripts/demo.sh")
		cmd.Env = append(os.Environ(), "DEMO_PORT="+strconv.Itoa(port), "DEMO_OPERATOR_PORT="+strconv.Itoa(port+1),
			"DEMO_DIR="+dir, "DEMO_BIN="+bin, "DEMO_SECONDS=120")
		return cmd
	}

	first := demo(work)
	first.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // stopped with its relay and agent
	var out lockedBuffer
	first.Stdout, first.Stderr = &out, &out
	require.NoError(t, first.Start())
	done := make(chan error, 1)
	go func() { done <- first.Wait() }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = syscall.Kill(-first.Process.Pid, syscall.SIGTERM)
			<-done
		}
	}
	t.Cleanup(stop)

	deadline := time.Now().Add(demoStartup)
	for !regexp.MustCompile(`Example call`).MatchString(out.String()) {
		select {
		case err := <-done:
			t.Fatalf("the demo ended before it was ready (%v):\n%s", err, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo was not ready within %s:\n%s", demoStartup, out.String())
		}
	}
	m := regexp.MustCompile(`(?m)^User id: (usr_[A-Za-z0-9_-]+)   \(elite plan\)$`).FindStringSubmatch(out.String())
	require.NotNil(t, m, "the demo prints the user's id:\n%s", out.String())
	require.Contains(t, out.String(), "relay tokens issue --kind support --grant "+m[1])
	require.Contains(t, out.String(), "relay users access "+m[1])
	require.Contains(t, out.String(), "relay broker link --user "+m[1])
	listed, err := run(t, "", "users", "list", "--data", filepath.Join(work, "data"))
	require.NoError(t, err)
	users := decode[struct {
		Users []map[string]string `json:"users"`
	}](t, listed)
	require.Len(t, users.Users, 1)
	require.Equal(t, m[1], users.Users[0]["id"], "the id printed is the demo user's")
	require.Equal(t, "elite", users.Users[0]["plan"])

	// A second demo of the same folder refuses, and the first runs on
	// with its data and logs.
	second, err := demo(work).CombinedOutput()
	require.Error(t, err, "%s", second)
	require.Contains(t, string(second), "a demo is already running (pid "+strconv.Itoa(first.Process.Pid))
	require.Contains(t, string(second), "nothing was changed")
	for _, f := range []string{"relay.log", "agent.log", "demo.pid", filepath.Join("data", "relay.db")} {
		_, err := os.Stat(filepath.Join(work, f))
		require.NoError(t, err, "%s is kept", f)
	}
	require.Equal(t, http.StatusOK, httpStatus("http://127.0.0.1:"+strconv.Itoa(port)+"/healthz"), "the first demo still runs")

	// Another folder on the same port: the port answers.
	other, err := demo(filepath.Join(t.TempDir(), "other")).CombinedOutput()
	require.Error(t, err, "%s", other)
	require.Contains(t, string(other), "something already answers on 127.0.0.1:"+strconv.Itoa(port))

	stop()
	_, err = os.Stat(filepath.Join(work, "demo.pid"))
	require.ErrorIs(t, err, os.ErrNotExist, "a demo that stopped leaves no pid file")
}
