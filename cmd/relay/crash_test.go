package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tradebridge/internal/testkit"

	"github.com/stretchr/testify/require"
)

// buildRelay builds this command into a temporary directory and returns
// the binary's path.
func buildRelay(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "relay")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// startRelayProcess starts `relay serve` on data at addr and waits until
// it is ready. The caller ends it.
func startRelayProcess(t *testing.T, bin, data, addr string, log *os.File) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--listen", addr, "--operator-listen", "off", "--data", data)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(testkit.Long)
	for httpStatus("http://"+addr+"/readyz") != http.StatusOK {
		require.True(t, time.Now().Before(deadline), "the relay did not become ready")
		time.Sleep(20 * time.Millisecond)
	}
	return cmd
}

// A relay killed with SIGKILL in the middle of a stream of writes loses
// none it acknowledged: six elite users create account groups at once,
// the relay dies mid-stream, and after a restart on the same data every
// group that was answered 2xx is there.
func TestKilledRelayKeepsAcknowledgedWrites(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and kills a relay process; skipped with -short")
	}
	bin := buildRelay(t)
	data := t.TempDir()
	log, err := os.Create(filepath.Join(t.TempDir(), "relay.log"))
	require.NoError(t, err)
	defer log.Close()
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("relay log:\n%s", b)
		}
	}()

	const users = 6
	tokens := make([]string, users)
	for i := range tokens {
		out, err := exec.Command(bin, "users", "add", "--data", data, "--name", fmt.Sprintf("crash-%d", i), "--plan", "elite").Output()
		require.NoError(t, err)
		var creds struct{ APIToken string }
		require.NoError(t, json.Unmarshal(out, &creds))
		require.NotEmpty(t, creds.APIToken)
		tokens[i] = creds.APIToken
	}

	addr := freeAddr(t)
	base := "http://" + addr + "/v1/api/manage/desktop/account-groups"
	relay := startRelayProcess(t, bin, data, addr, log)

	// Each user creates groups as fast as its budgets and in-flight limit
	// admit, from two goroutines, until the relay is gone.
	var (
		mu    sync.Mutex
		acked = make([][]string, users) // ids answered 201, per user
		total int
		wg    sync.WaitGroup
	)
	killAt := make(chan struct{})
	var once sync.Once
	client := &http.Client{Timeout: 5 * time.Second}
	for u := range users {
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; ; n++ {
					body := fmt.Sprintf(`{"name":"group-%d-%d","destination":"desktop","accounts":[]}`, g, n)
					req, _ := http.NewRequest(http.MethodPost, base, strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+tokens[u])
					req.Header.Set("Content-Type", "application/json")
					resp, err := client.Do(req)
					if err != nil {
						return // the relay died
					}
					var out struct {
						Success bool
						Data    struct{ ID string }
					}
					decErr := json.NewDecoder(resp.Body).Decode(&out)
					resp.Body.Close()
					if resp.StatusCode == http.StatusCreated && decErr == nil && out.Data.ID != "" {
						mu.Lock()
						acked[u] = append(acked[u], out.Data.ID)
						total++
						if total >= 12 {
							once.Do(func() { close(killAt) })
						}
						mu.Unlock()
					}
					if resp.StatusCode == http.StatusTooManyRequests {
						time.Sleep(50 * time.Millisecond)
					}
				}
			}()
		}
	}
	select {
	case <-killAt:
	case <-time.After(30 * time.Second):
		t.Error("too few writes were acknowledged to kill the relay mid-stream")
	}
	require.NoError(t, relay.Process.Signal(syscall.SIGKILL))
	_ = relay.Wait()
	wg.Wait()

	relay = startRelayProcess(t, bin, data, addr, log)
	defer func() {
		_ = relay.Process.Signal(syscall.SIGTERM)
		_ = relay.Wait()
	}()
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, total, 12)
	for u := range users {
		req, _ := http.NewRequest(http.MethodGet, base, nil)
		req.Header.Set("Authorization", "Bearer "+tokens[u])
		resp, err := client.Do(req)
		require.NoError(t, err)
		var list struct {
			Data []struct{ ID string }
		}
		b := new(bytes.Buffer)
		_, _ = b.ReadFrom(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, b.String())
		require.NoError(t, json.Unmarshal(b.Bytes(), &list))
		have := map[string]bool{}
		for _, g := range list.Data {
			have[g.ID] = true
		}
		for _, id := range acked[u] {
			require.True(t, have[id], "user %d lost acknowledged group %s", u, id)
		}
	}
}
