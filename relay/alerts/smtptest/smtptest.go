// Package smtptest gives tests a mail server: emersion/go-smtp's server on
// a loopback port, offering STARTTLS on a test certificate and AUTH PLAIN
// for one user (User, Password), that records every message it receives.
// The tests of relay/alerts and relay/account send through it with
// alerts.SMTP (Server.SMTP).
package smtptest

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"tradebridge/relay/alerts"
)

// The credentials the server accepts.
const (
	User     = "relay"
	Password = "p4ss"
)

// Msg is one message the server received.
type Msg struct {
	From, To string
	// User is the authenticated user; "" when the client did not
	// authenticate.
	User string
	Data []byte
	// TLS reports that the message came over TLS (STARTTLS).
	TLS bool
}

// Server is a running test mail server.
type Server struct {
	// Addr is the server's host:port.
	Addr string
	// Roots trusts the server's certificate (ServerName "example.com").
	Roots *x509.CertPool
	// Got receives every message, buffered (64).
	Got chan Msg

	mu   sync.Mutex
	msgs []Msg
}

// Start starts a server, closed at the test's cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	certSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	certSrv.StartTLS()
	cert := certSrv.TLS.Certificates
	roots := x509.NewCertPool()
	roots.AddCert(certSrv.Certificate())
	certSrv.Close()

	s := &Server{Roots: roots, Got: make(chan Msg, 64)}
	srv := smtp.NewServer(backend{s})
	srv.Domain = "localhost"
	srv.TLSConfig = &tls.Config{Certificates: cert}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("smtptest: listen: %v", err)
	}
	s.Addr = l.Addr().String()
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return s
}

// SMTP is the alerts.SMTP that sends through the server, from the
// address, over STARTTLS (required), authenticated.
func (s *Server) SMTP(from string) alerts.SMTP {
	return alerts.SMTP{URL: "smtp://" + User + ":" + Password + "@" + s.Addr, From: from,
		TLS: &tls.Config{RootCAs: s.Roots, ServerName: "example.com"}, RequireTLS: true}
}

// Next returns the next message received, failing the test when none
// arrives within wait.
func (s *Server) Next(t testing.TB, wait time.Duration) Msg {
	t.Helper()
	select {
	case m := <-s.Got:
		return m
	case <-time.After(wait):
		t.Fatal("smtptest: no email")
		return Msg{}
	}
}

// Messages returns every message received so far.
func (s *Server) Messages() []Msg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Msg(nil), s.msgs...)
}

type backend struct{ s *Server }

func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{s: b.s, conn: c}, nil
}

type session struct {
	s    *Server
	conn *smtp.Conn
	msg  Msg
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != User || pass != Password {
			return errors.New("bad credentials")
		}
		s.msg.User = user
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error { s.msg.From = from; return nil }
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error   { s.msg.To = to; return nil }

func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.msg.Data = b
	_, s.msg.TLS = s.conn.TLSConnectionState()
	s.s.mu.Lock()
	s.s.msgs = append(s.s.msgs, s.msg)
	s.s.mu.Unlock()
	select {
	case s.s.Got <- s.msg:
	default:
	}
	return nil
}

func (s *session) Reset()        {}
func (s *session) Logout() error { return nil }
