package ninjatrader

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultPortOwner on Linux reads /proc: the listening socket's inode in
// /proc/net/tcp and tcp6, and the process's descriptors in
// /proc/PID/fd. It does not check the process's name (NinjaTrader does
// not run on Linux; the fake add-on of the tests runs in any process).
func DefaultPortOwner() PortOwner { return ProcPortOwner{Root: "/proc"} }

// ProcPortOwner is a PortOwner over a /proc file system at Root. Name,
// when set, is the process name (/proc/PID/comm) IsNinjaTrader requires.
type ProcPortOwner struct {
	Root string
	Name string
}

// loopbackListen are the local addresses (as /proc/net/tcp{,6} write
// them) on which a listener accepts connections to 127.0.0.1.
var loopbackListen = map[string]bool{
	"0100007F":                         true, // 127.0.0.1 (little-endian words)
	"00000000":                         true, // 0.0.0.0
	"00000000000000000000000000000000": true, // ::
	"0000000000000000FFFF00000100007F": true, // ::ffff:127.0.0.1
}

// ListensOn implements PortOwner.
func (o ProcPortOwner) ListensOn(pid, port int) (bool, error) {
	inodes := map[string]bool{}
	for _, f := range []string{"net/tcp", "net/tcp6"} {
		if err := o.listeners(filepath.Join(o.Root, f), port, inodes); err != nil {
			return false, err
		}
	}
	if len(inodes) == 0 {
		return false, ErrNoListener
	}
	fdDir := filepath.Join(o.Root, strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return false, fmt.Errorf("reading the process's descriptors: %w", err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
			return true, nil
		}
	}
	return false, nil
}

// listeners adds to inodes the sockets of file (a /proc/net/tcp table)
// that listen on port on a loopback or any address.
func (o ProcPortOwner) listeners(file string, port int, inodes map[string]bool) error {
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no IPv6
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
			continue
		}
		addr, p, ok := strings.Cut(fields[1], ":")
		if !ok || !loopbackListen[addr] {
			continue
		}
		if n, err := strconv.ParseUint(p, 16, 16); err != nil || int(n) != port {
			continue
		}
		inodes[fields[9]] = true
	}
	return sc.Err()
}

// IsNinjaTrader implements PortOwner: any running process, or the one
// named Name when set.
func (o ProcPortOwner) IsNinjaTrader(pid int) (bool, error) {
	b, err := os.ReadFile(filepath.Join(o.Root, strconv.Itoa(pid), "comm"))
	if err != nil {
		return false, err
	}
	return o.Name == "" || strings.TrimSpace(string(b)) == o.Name, nil
}

// DefaultSessions is nil on Linux: the service reads the configured
// discovery file.
func DefaultSessions() SessionScanner { return nil }
