package relay_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/agent/agentstore"
	"tradebridge/internal/testkit"
	"tradebridge/protocol"
)

// buildAgent builds cmd/agent into a temporary directory and returns the
// binary's path.
func buildAgent(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agent")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "tradebridge/cmd/agent").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// agentProcess is `agent run` in a process of its own.
type agentProcess struct {
	cmd *exec.Cmd
	log string
}

// startAgentProcess runs the agent binary for user against the relay with
// its state in data, on the simulator started on a Wednesday morning in
// New York, and waits until the relay reaches it.
func (s *system) startAgentProcess(bin, user, data string) *agentProcess {
	s.T.Helper()
	logPath := filepath.Join(s.T.TempDir(), "agent.log")
	logFile, err := os.Create(logPath)
	require.NoError(s.T, err)
	defer logFile.Close()
	cmd := exec.Command(bin, "run", "--relay", s.Base, "--platform", "sim", "--data", data,
		"--sim-start", simStart.Format(time.RFC3339))
	cmd.Env = append(os.Environ(), "AGENT_TOKEN="+s.Users[user].AgentToken)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(s.T, cmd.Start())
	ap := &agentProcess{cmd: cmd, log: logPath}
	s.T.Cleanup(func() {
		if ap.cmd.ProcessState == nil {
			_ = ap.cmd.Process.Kill()
			_ = ap.cmd.Wait()
		}
		if s.T.Failed() {
			b, _ := os.ReadFile(logPath)
			s.T.Logf("agent log:\n%s", b)
		}
	})
	tok := s.Users[user].APIToken
	require.Eventually(s.T, func() bool {
		r, err := s.Request(http.MethodGet, "/v1/api/accounts", tok, "")
		return err == nil && r.Status == http.StatusOK
	}, testkit.Long, 20*time.Millisecond, "the agent process connected")
	return ap
}

// kill ends the process with SIGKILL: nothing of it runs after.
func (ap *agentProcess) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, ap.cmd.Process.Kill())
	_ = ap.cmd.Wait()
}

// An agent process killed with SIGKILL keeps what it must not forget: the
// configuration it ran, the monitor it stopped, strategy-tag ownership and
// the outcomes of writes are in its state file, and the restarted process
// runs on with them.
func TestKilledAgentKeepsItsState(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills an agent process; skipped with -short")
	}
	t.Parallel()
	bin := buildAgent(t)
	s := newSystem(t)
	tok := s.Users["bob"].APIToken
	data := t.TempDir()
	ap := s.startAgentProcess(bin, "bob", data)

	// A monitor that stops at once (the simulator's clock stands at 10:00
	// New York time, before its master window).
	r := s.manage(http.MethodPost, "desktop/monitors", tok,
		`{"account":"Sim101","masterWindow":{"days":["wed"],"start":"11:00","end":"12:00"}}`)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	var m protocol.Monitor
	require.NoError(t, json.Unmarshal(r.Data, &m))
	require.Eventually(t, func() bool { return s.monitorState(tok, &m) == protocol.MonitorStopped },
		engineWait, 10*time.Millisecond)
	// A strategy tag claims ES on Sim102, by a write with an idempotency key.
	r = s.Do(http.MethodPost, "/v1/api/accounts/Sim102/orders/place", tok,
		`{"action":"Buy","instrument":"ES 12-26","orderType":"Market","quantity":1,"timeInForce":"Day","strategyTag":"alpha"}`,
		"Content-Type", jsonBody, "Idempotency-Key", "crash-1")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	ap.kill(t)

	files, err := filepath.Glob(filepath.Join(data, "agent-state-*.db"))
	require.NoError(t, err)
	require.Len(t, files, 1, "one state file for this relay and token")
	st, err := agentstore.Open(agentstore.Options{Path: files[0]})
	require.NoError(t, err)
	cfg, err := st.LoadConfig()
	require.NoError(t, err)
	require.NotNil(t, cfg, "the configuration the agent ran")
	require.Len(t, cfg.Monitors, 1)
	tags, err := st.Load("ops.tags")
	require.NoError(t, err)
	require.Len(t, tags, 1, "the strategy tag's claim")
	monitors, err := st.Load("monitor.state")
	require.NoError(t, err)
	require.Contains(t, string(monitors["Sim101"]), protocol.MonitorStopped, "the stopped monitor")
	writes, err := st.LoadWrites(time.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.NotEmpty(t, writes, "the outcome of the write")
	for _, w := range writes {
		require.True(t, w.Done, "every write the agent answered has its outcome recorded")
	}
	require.NoError(t, st.Close())

	s.startAgentProcess(bin, "bob", data)
	r = s.placeMarket(tok, "Sim101", "Buy", 1)
	require.Equal(t, protocol.CodeTradingBlocked, r.Error, "the restarted agent still refuses entries on the stopped monitor's account: %s", r.Raw)
	require.Contains(t, r.Detail, "(rule: monitorStopped)")
}
