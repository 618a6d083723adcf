package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/store/storetest"
)

// The README's three-node setup is scripts/three-nodes.sh: it runs here
// as documented, against the machine's PostgreSQL, Redis and NATS, with
// the relay and agent built from this tree. A call through nodes b and c
// reaches the agent connected to node a.
func TestThreeNodesScript(t *testing.T) {
	env := map[string]string{"STORE": os.Getenv("TB_TEST_POSTGRES"), "BUDGETS": os.Getenv("TB_TEST_REDIS"), "BUS": os.Getenv("TB_TEST_NATS")}
	for k, v := range env {
		if v == "" {
			t.Skipf("the three-node script needs %s set (see README, \"Many relay nodes\")", map[string]string{
				"STORE": "TB_TEST_POSTGRES", "BUDGETS": "TB_TEST_REDIS", "BUS": "TB_TEST_NATS"}[k])
		}
	}
	// A schema of the test's own, dropped at its end.
	env["STORE"] = storetest.PostgresURL(t)
	bin := t.TempDir()
	for _, c := range []string{"relay", "agent"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(bin, c), "tradebridge/cmd/"+c).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	port := freePorts(t, 6)
	cmd := exec.Command("../../scripts/three-nodes.sh")
	cmd.Env = append(os.Environ(), "BIN="+bin, "WORK="+t.TempDir(), "PORT="+strconv.Itoa(port), "THREE_NODES_SECONDS=0")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	timer := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	text := string(out)
	require.Contains(t, text, "through node b:\n{\"success\":true")
	require.Contains(t, text, "through node c:\n{\"success\":true")
	require.Equal(t, 2, strings.Count(text, `"name":"Sim101"`), "%s", text)
}

// freePorts returns the first of n consecutive ports free on 127.0.0.1
// right now.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for base := 20000 + os.Getpid()%20000; base < 60000; base += n {
		ok := true
		for i := range n {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			if err != nil {
				ok = false
				break
			}
			ln.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free ports")
	return 0
}
