package httpapi

import (
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"tradebridge/relay/errcode"
)

// DefaultMaxConnsPerAddr is the default cap of LimitListener: the open
// connections one client address may hold. It is sized for a NAT'd office
// (many bots, each with a few keep-alive connections and a stream socket)
// and far below what would let one address starve the relay.
const DefaultMaxConnsPerAddr = 128

// connRefusedWrite bounds writing the refusal to a connection over the
// cap, so that a peer that does not read cannot stall Accept.
const connRefusedWrite = 100 * time.Millisecond

// LimitOptions configure LimitListener.
type LimitOptions struct {
	// MaxPerAddr is the number of open connections one client address may
	// hold; the next is answered 429 rate_limited (policy "connections")
	// and closed. IPv6 addresses count by their /64, the block one
	// subscriber usually holds. Zero means DefaultMaxConnsPerAddr.
	MaxPerAddr int
	// OnRefuse, when set, is called (on the accepting goroutine) for each
	// connection refused.
	OnRefuse func()
}

// LimitListener returns ln with a cap on the open connections of each
// client address (see LimitOptions). A connection counts from Accept until
// it is closed, also while a handler holds it after a WebSocket upgrade.
func LimitListener(ln net.Listener, opts LimitOptions) (net.Listener, error) {
	if opts.MaxPerAddr < 0 {
		return nil, errors.New("httpapi: LimitOptions.MaxPerAddr must not be negative")
	}
	if opts.MaxPerAddr == 0 {
		opts.MaxPerAddr = DefaultMaxConnsPerAddr
	}
	return &limitListener{Listener: ln, opts: opts, open: map[netip.Prefix]int{}}, nil
}

type limitListener struct {
	net.Listener
	opts LimitOptions

	mu   sync.Mutex
	open map[netip.Prefix]int
}

// connRefused is the whole answer to a connection over the cap.
var connRefused = func() []byte {
	body := `{"success":false,"error":"` + errcode.RateLimited + `","detail":"too many open connections from your address; close some or wait","retryAfter":1,"policy":"connections"}` + "\n"
	return []byte("HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\n" +
		"Cache-Control: no-store\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

// Accept returns the next connection within its address's cap; those over
// it are answered and closed here.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, ok := addrKey(c.RemoteAddr())
		if !ok {
			return c, nil // not an IP connection: nothing to count by
		}
		l.mu.Lock()
		over := l.open[key] >= l.opts.MaxPerAddr
		if !over {
			l.open[key]++
		}
		l.mu.Unlock()
		if !over {
			return &limitedConn{Conn: c, l: l, key: key}, nil
		}
		if l.opts.OnRefuse != nil {
			l.opts.OnRefuse()
		}
		_ = c.SetWriteDeadline(time.Now().Add(connRefusedWrite))
		_, _ = c.Write(connRefused)
		_ = c.Close()
	}
}

func (l *limitListener) release(key netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key]--; l.open[key] <= 0 {
		delete(l.open, key)
	}
}

// addrKey is the address a connection counts against: the IPv4 address,
// or the /64 of an IPv6 one.
func addrKey(a net.Addr) (netip.Prefix, bool) {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}, false
	}
	ip, ok := netip.AddrFromSlice(tcp.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ip = ip.Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, err := ip.Prefix(bits)
	return p, err == nil
}

// limitedConn releases its address's slot once, when closed.
type limitedConn struct {
	net.Conn
	l    *limitListener
	key  netip.Prefix
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.key) })
	return err
}

// CloseWrite half-closes the connection when the underlying one can
// (net/http uses it to let the client read an answer before the close).
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
