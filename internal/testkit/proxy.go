package testkit

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// ConnectProxy is an HTTP proxy on a loopback port that serves CONNECT
// only, as corporate proxies do for HTTPS: it opens a TCP connection to
// the named host and pipes bytes both ways. It records the targets it
// was asked for.
type ConnectProxy struct {
	// URL is the proxy's address, http://127.0.0.1:port.
	URL string

	refuse  int
	pipes   pipes
	mu      sync.Mutex
	targets []string
}

// NewConnectProxy starts a CONNECT proxy, stopped at t's cleanup; with
// refuse not 0 it answers every CONNECT with that status (407 with
// Proxy-Authenticate: NTLM, as a Windows-authenticating proxy does).
func NewConnectProxy(t testing.TB, refuse int) *ConnectProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	p := &ConnectProxy{URL: "http://" + ln.Addr().String(), refuse: refuse}
	srv := &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: Medium}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
		p.pipes.close()
	})
	return p
}

// Targets are the host:port the proxy was asked to CONNECT to, in order.
func (p *ConnectProxy) Targets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

func (p *ConnectProxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	p.mu.Lock()
	p.targets = append(p.targets, r.Host)
	p.mu.Unlock()
	if p.refuse != 0 {
		if p.refuse == http.StatusProxyAuthRequired {
			w.Header().Set("Proxy-Authenticate", "NTLM")
		}
		w.WriteHeader(p.refuse)
		return
	}
	up, err := net.DialTimeout("tcp", r.Host, Medium)
	if err != nil {
		http.Error(w, "cannot reach the host", http.StatusBadGateway)
		return
	}
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		return
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		up.Close()
		conn.Close()
		return
	}
	// Bytes the client sent after its CONNECT are in buf already.
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			up.Close()
			conn.Close()
			return
		}
	}
	p.pipes.pipe(conn, up)
}

// TLSFront serves TLS on a loopback port, with a certificate of its own
// for 127.0.0.1, and pipes each connection's plain bytes to backend (a
// host:port): an HTTPS address for a plain HTTP server. It returns its
// address and the roots that trust its certificate; it stops at t's
// cleanup.
func TLSFront(t testing.TB, backend string) (addr string, roots *x509.CertPool) {
	t.Helper()
	cert, roots := selfSigned(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	var ps pipes
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.DialTimeout("tcp", backend, Medium)
			if err != nil {
				c.Close()
				continue
			}
			ps.pipe(c, up)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		ps.close()
	})
	return ln.Addr().String(), roots
}

// selfSigned makes a certificate for 127.0.0.1 and the pool trusting it.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("certificate: %v", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("certificate: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, roots
}

// pipes are pairs of connections copied into each other.
type pipes struct {
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
	wg     sync.WaitGroup
}

// pipe copies a into b and b into a until either ends, then closes both.
func (p *pipes) pipe(a, b net.Conn) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		a.Close()
		b.Close()
		return
	}
	p.conns = append(p.conns, a, b)
	p.wg.Add(2)
	p.mu.Unlock()
	cp := func(dst, src net.Conn) {
		defer p.wg.Done()
		_, _ = io.Copy(dst, src)
		src.Close()
		dst.Close()
	}
	go cp(a, b)
	go cp(b, a)
}

// close closes every connection and waits for the copies.
func (p *pipes) close() {
	p.mu.Lock()
	p.closed = true
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
