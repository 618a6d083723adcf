package scale_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/agent/tunnel"
	"tradebridge/protocol"
)

// fleetEnv names the fleet's configuration file. A test binary started
// with it set runs the fleet (fleetMain) instead of the tests.
const fleetEnv = "TB_SCALE_FLEET"

// fleetConfig is what the parent tells the fleet process.
type fleetConfig struct {
	RelayURL string
	Tokens   []string
	// Addrs is how many source addresses the agents are spread over,
	// from firstSource up: agent i dials from address i % Addrs.
	Addrs int
	// StartEvery paces the agents' first connects (0: all at once).
	StartEvery time.Duration
}

// firstSource is the first source address of the fleet's agents: they
// dial from 127.0.1.1, 127.0.1.2, … so that the relay's per-address
// limits hold (httpapi.DefaultMaxConnsPerAddr, admit.DefaultIPPolicy).
var firstSource = netip.MustParseAddr("127.0.1.1")

// sourceAddr returns the i-th source address.
func sourceAddr(i int) netip.Addr {
	a := firstSource
	for range i {
		a = a.Next()
	}
	return a
}

// fleetStats is what the fleet reports on "stats": the relay's answers to
// the agents' connects as the agents saw them.
type fleetStats struct {
	Connected int   // agents whose tunnel is up
	Upgrades  int64 // connects answered 101
	Refused   map[int]int64
	DialFails int64 // connects that got no answer (refused, reset, timeout)
}

// fleetMain runs the agents of the configuration named by $TB_SCALE_FLEET
// until its stdin says "quit" or ends. "stats" prints a fleetStats as one
// line of JSON.
func fleetMain() int {
	raw, err := os.ReadFile(os.Getenv(fleetEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var cfg fleetConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := raiseNoFile(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	counts := &connectCounts{refused: map[int]int64{}}
	clients := make([]*http.Client, max(cfg.Addrs, 1))
	for i := range clients {
		clients[i] = counts.client(sourceAddr(i))
	}
	agents := make([]*tunnel.Client, len(cfg.Tokens))
	for i, tok := range cfg.Tokens {
		c, err := tunnel.New(tunnel.Options{
			RelayURL:   cfg.RelayURL,
			Token:      tok,
			Hello:      fleetHello,
			Handler:    emptyAnswers{},
			HTTPClient: clients[i%len(clients)],
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		agents[i] = c
		go func() { _ = c.Run(context.Background()) }()
		if cfg.StartEvery > 0 {
			time.Sleep(cfg.StartEvery)
		}
	}
	fmt.Println("started")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() && in.Text() != "quit" {
		if in.Text() != "stats" {
			continue
		}
		st := counts.snapshot()
		for _, a := range agents {
			if a.Connected() {
				st.Connected++
			}
		}
		line, _ := json.Marshal(st)
		fmt.Println(string(line))
	}
	// The agents are not closed one by one: the process exits and the
	// system closes their sockets, as when a machine's agents all stop.
	fmt.Println("stopped")
	return 0
}

// raiseNoFile raises the soft limit of open files to the hard one: each
// agent holds a socket.
func raiseNoFile() error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return nil
}

func fleetHello(context.Context) (protocol.Hello, error) {
	return protocol.Hello{AgentVersion: "scale", Platform: "sim", Connections: []protocol.Connection{}}, nil
}

// emptyAnswers is the fleet's dispatcher: every call succeeds with {}.
type emptyAnswers struct{}

func (emptyAnswers) Handle(context.Context, *protocol.Request) (json.RawMessage, *protocol.Error) {
	return json.RawMessage(`{}`), nil
}

// connectCounts counts the relay's answers to the agents' connects.
type connectCounts struct {
	upgrades  atomic.Int64
	dialFails atomic.Int64
	mu        sync.Mutex
	refused   map[int]int64 // by HTTP status
}

// client returns an HTTP client for the agents that dial from src and
// counts what the relay answers them.
func (cc *connectCounts) client(src netip.Addr) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(src, 0))}
	tr := &http.Transport{
		DialContext:           d.DialContext,
		ResponseHeaderTimeout: 15 * time.Second,
		MaxIdleConnsPerHost:   -1, // an upgraded connection is never idle
	}
	return &http.Client{Transport: countingTransport{next: tr, counts: cc}}
}

func (cc *connectCounts) snapshot() fleetStats {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	st := fleetStats{Upgrades: cc.upgrades.Load(), DialFails: cc.dialFails.Load(), Refused: map[int]int64{}}
	for code, n := range cc.refused {
		st.Refused[code] = n
	}
	return st
}

type countingTransport struct {
	next   http.RoundTripper
	counts *connectCounts
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	switch {
	case err != nil:
		t.counts.dialFails.Add(1)
	case resp.StatusCode == http.StatusSwitchingProtocols:
		t.counts.upgrades.Add(1)
	default:
		t.counts.mu.Lock()
		t.counts.refused[resp.StatusCode]++
		t.counts.mu.Unlock()
	}
	return resp, err
}

// fleet is the parent's handle on a fleet process.
type fleet struct {
	tb    testing.TB
	cmd   *exec.Cmd
	stdin interface {
		Write([]byte) (int, error)
		Close() error
	}
	lines chan string
	done  chan struct{}
}

// startFleet starts a fleet process of agents with tokens, dialing relayURL
// from addrs source addresses, and waits until it has started them all.
func startFleet(tb testing.TB, relayURL string, tokens []string, addrs int, startEvery time.Duration) *fleet {
	tb.Helper()
	raw, err := json.Marshal(fleetConfig{RelayURL: relayURL, Tokens: tokens, Addrs: addrs, StartEvery: startEvery})
	require.NoError(tb, err)
	path := filepath.Join(tb.TempDir(), "fleet.json")
	require.NoError(tb, os.WriteFile(path, raw, 0o600))
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), fleetEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(tb, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(tb, err)
	require.NoError(tb, cmd.Start())
	f := &fleet{tb: tb, cmd: cmd, stdin: stdin, lines: make(chan string, 16), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		defer close(f.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
	}()
	tb.Cleanup(f.stop)
	require.Equal(tb, "started", f.line(2*time.Minute))
	return f
}

// line returns the fleet's next line of output.
func (f *fleet) line(timeout time.Duration) string {
	f.tb.Helper()
	select {
	case l, ok := <-f.lines:
		require.True(f.tb, ok, "the fleet process ended")
		return l
	case <-time.After(timeout):
		f.tb.Fatalf("the fleet process said nothing for %s", timeout)
		return ""
	}
}

// stats asks the fleet for its counts.
func (f *fleet) stats() fleetStats {
	f.tb.Helper()
	_, err := f.stdin.Write([]byte("stats\n"))
	require.NoError(f.tb, err)
	var st fleetStats
	require.NoError(f.tb, json.Unmarshal([]byte(f.line(time.Minute)), &st))
	return st
}

// stop closes every agent and waits for the process to exit.
func (f *fleet) stop() {
	if f.cmd.ProcessState != nil {
		return
	}
	_, _ = f.stdin.Write([]byte("quit\n"))
	_ = f.stdin.Close()
	exited := make(chan error, 1)
	go func() {
		for range f.lines { // "stopped", or nothing when it failed
		}
		<-f.done
		exited <- f.cmd.Wait()
	}()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			f.tb.Errorf("the fleet process failed: %v", err)
		}
	case <-time.After(2 * time.Minute):
		_ = f.cmd.Process.Kill()
		<-exited
		f.tb.Errorf("the fleet process did not stop; killed")
	}
}
