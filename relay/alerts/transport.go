package alerts

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// The transports: how a delivery's payload reaches each kind of
// destination. Each returns nil when the destination took it, or a
// *sendError that says whether trying again may help; no error holds a
// URL, a token or the body, only the kind of failure.

// Headers of a webhook delivery.
const (
	// HeaderSignature is "sha256=" and the hex HMAC-SHA256 of the raw
	// body, keyed by the destination's secret.
	HeaderSignature = "X-Tradebridge-Signature"
	// HeaderDelivery is the delivery's id: a receiver that sees one twice
	// (a retry after a lost answer) handles it once.
	HeaderDelivery = "X-Tradebridge-Delivery"
)

// userAgent is the User-Agent of every request the alerts make.
const userAgent = "tradebridge-alerts/1"

// Sign returns the X-Tradebridge-Signature value of a body: "sha256="
// and the hex HMAC-SHA256 of the raw body keyed by the secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// sendError is a failed attempt: its reason (a short code such as
// "http_500", "timeout", "address_not_allowed") and whether a later
// attempt may succeed.
type sendError struct {
	reason    string
	retryable bool
	// after is the destination's own Retry-After, when it gave one.
	after time.Duration
}

// Error reports the failure by its reason only.
func (e *sendError) Error() string { return "alerts: delivery failed: " + e.reason }

// errAddressRefused is the guard's refusal of a dialed address.
var errAddressRefused = errors.New("alerts: address not allowed")

// guardControl is the net.Dialer Control of connections to user-given
// URLs: it runs on the resolved address of every connection, so a name
// that resolves to a refused address (DNS rebinding included) is refused
// when it is dialed, whatever it resolved to before.
func guardControl(allowPrivate bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		if allowPrivate {
			return nil
		}
		ip, ok := hostPort(address)
		if !ok || !PublicAddr(ip) {
			return errAddressRefused
		}
		return nil
	}
}

// newClient returns an HTTP client for the alerts: no proxy, no
// redirects followed, the timeout on each request; guarded, its dialer
// refuses the addresses PublicAddr refuses (unless allowPrivate).
func newClient(timeout time.Duration, tlsConf *tls.Config, guarded, allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: timeout}
	if guarded {
		d.Control = guardControl(allowPrivate)
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		TLSClientConfig:       tlsConf,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// classify turns a request's error into a sendError.
func classify(err error) *sendError {
	var se *sendError
	switch {
	case errors.As(err, &se):
		return se
	case errors.Is(err, errAddressRefused):
		return &sendError{reason: "address_not_allowed"}
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return &sendError{reason: "timeout", retryable: true}
	case errors.Is(err, context.Canceled):
		return &sendError{reason: "cancelled", retryable: true}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return &sendError{reason: "dns_error", retryable: true}
	}
	var tlsErr *tls.CertificateVerificationError
	if errors.As(err, &tlsErr) {
		return &sendError{reason: "tls_error", retryable: true}
	}
	return &sendError{reason: "connection_error", retryable: true}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// post sends a JSON body and judges the answer: 2xx taken; 429, 408 and
// 5xx worth another attempt (with the answer's Retry-After); any other
// status (a 4xx, a redirect) refused for good.
func post(ctx context.Context, c *http.Client, target string, body []byte, header http.Header) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return &sendError{reason: "invalid_url"}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	resp, err := c.Do(req)
	if err != nil {
		return classify(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch s := resp.StatusCode; {
	case s >= 200 && s < 300:
		return nil
	case s == http.StatusTooManyRequests || s == http.StatusRequestTimeout || s >= 500:
		return &sendError{reason: "http_" + strconv.Itoa(s), retryable: true, after: retryAfter(resp.Header)}
	default:
		return &sendError{reason: "http_" + strconv.Itoa(s)}
	}
}

// retryAfter reads a Retry-After of seconds; 0 when there is none.
func retryAfter(h http.Header) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After")))
	if err != nil || n <= 0 {
		return 0
	}
	return min(time.Duration(n)*time.Second, time.Hour)
}

// sendWebhook POSTs the payload, signed.
func sendWebhook(ctx context.Context, c *http.Client, target, secret, deliveryID string, body []byte) error {
	h := http.Header{}
	h.Set(HeaderSignature, Sign(secret, body))
	h.Set(HeaderDelivery, deliveryID)
	return post(ctx, c, target, body, h)
}

// Message is a delivery as the chat and email transports word it.
type Message struct {
	DeliveryID string
	Kind       string
	At         time.Time
	Account    string
	Summary    string
	Detail     json.RawMessage
}

// title is a message's one line: its kind, account and summary.
func (m *Message) title() string {
	var b strings.Builder
	b.WriteString("[" + m.Kind + "]")
	if m.Account != "" {
		b.WriteString(" " + m.Account + ":")
	}
	b.WriteString(" " + m.Summary)
	return b.String()
}

// DiscordBody is the body of Discord's "Execute Webhook" as the alerts
// send it: content, one embed, and no mentions parsed.
type DiscordBody struct {
	Content         string         `json:"content"`
	Embeds          []DiscordEmbed `json:"embeds"`
	AllowedMentions struct {
		Parse []string `json:"parse"`
	} `json:"allowed_mentions"`
}

// DiscordEmbed is an embed of Discord's message.
type DiscordEmbed struct {
	Title       string         `json:"title"`
	Description string         `json:"description,omitempty"`
	Timestamp   string         `json:"timestamp,omitempty"`
	Fields      []DiscordField `json:"fields,omitempty"`
	Footer      *DiscordFooter `json:"footer,omitempty"`
}

// DiscordField is a field of an embed.
type DiscordField struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Inline bool   `json:"inline,omitempty"`
}

// DiscordFooter is an embed's footer.
type DiscordFooter struct {
	Text string `json:"text"`
}

// clip bounds s to n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// discordBody words a message for Discord (content at most 2000
// characters, an embed's description at most 4096).
func discordBody(m *Message) []byte {
	var b DiscordBody
	b.Content = clip(m.title(), 1900)
	e := DiscordEmbed{Title: clip(m.Kind, 250), Description: clip(m.Summary, 4000), Timestamp: m.At.UTC().Format(time.RFC3339),
		Footer: &DiscordFooter{Text: "delivery " + m.DeliveryID}}
	if m.Account != "" {
		e.Fields = append(e.Fields, DiscordField{Name: "Account", Value: clip(m.Account, 1000), Inline: true})
	}
	if d := detailText(m.Detail); d != "" {
		e.Fields = append(e.Fields, DiscordField{Name: "Detail", Value: clip(d, 1000)})
	}
	b.Embeds = []DiscordEmbed{e}
	b.AllowedMentions.Parse = []string{}
	out, _ := json.Marshal(b)
	return out
}

// detailText is a detail object as one line of JSON; "" when empty.
func detailText(d json.RawMessage) string {
	s := strings.TrimSpace(string(d))
	if s == "" || s == "{}" || s == "null" {
		return ""
	}
	var buf bytes.Buffer
	if json.Compact(&buf, d) != nil {
		return ""
	}
	return buf.String()
}

// sendDiscord executes the webhook at the path of the destination's URL
// on the relay's Discord base.
func sendDiscord(ctx context.Context, c *http.Client, base, webhookURL string, m *Message) error {
	u, err := url.Parse(webhookURL)
	if err != nil {
		return &sendError{reason: "invalid_url"}
	}
	return post(ctx, c, strings.TrimSuffix(base, "/")+u.EscapedPath(), discordBody(m), nil)
}

// TelegramBody is the body of the Bot API's sendMessage as the alerts
// send it.
type TelegramBody struct {
	ChatID                string `json:"chat_id"`
	Text                  string `json:"text"`
	DisableWebPagePreview bool   `json:"disable_web_page_preview"`
}

// telegramText words a message for Telegram (at most 4096 characters).
func telegramText(m *Message) string {
	var b strings.Builder
	b.WriteString(m.title())
	b.WriteString("\n" + m.At.UTC().Format(time.RFC3339))
	if d := detailText(m.Detail); d != "" {
		b.WriteString("\n" + d)
	}
	return clip(b.String(), 4000)
}

// sendTelegram calls sendMessage of the bot on the relay's Telegram base.
// Its errors never hold the request's URL, which holds the token.
func sendTelegram(ctx context.Context, c *http.Client, base, token, chatID string, m *Message) error {
	body, _ := json.Marshal(TelegramBody{ChatID: chatID, Text: telegramText(m), DisableWebPagePreview: true})
	return post(ctx, c, strings.TrimSuffix(base, "/")+"/bot"+token+"/sendMessage", body, nil)
}

// SMTP is the operator's mail server (relay serve --smtp-url, --smtp-from).
type SMTP struct {
	// URL is smtp://user:pass@host:port (STARTTLS when the server offers
	// it; port 587 by default) or smtps://… (TLS from the start; port 465
	// by default). Empty: no email destinations.
	URL string
	// From is the sender's address.
	From string
	// TLS configures TLS to the server; nil uses the system's roots and
	// the URL's host name. Tests set RootCAs.
	TLS *tls.Config
	// RequireTLS refuses to send over a server that does not offer
	// STARTTLS (smtp://); false sends in the clear then.
	RequireTLS bool
}

// Enabled reports whether the operator configured a mail server.
func (s SMTP) Enabled() bool { return s.URL != "" && s.From != "" }

// parsed returns the server's address, whether TLS starts at once, and
// the credentials.
func (s SMTP) parsed() (addr string, implicit bool, user, pass string, err error) {
	u, err := url.Parse(s.URL)
	if err != nil || u.Hostname() == "" {
		return "", false, "", "", errors.New("alerts: the SMTP URL is not smtp://user:pass@host:port")
	}
	port := u.Port()
	switch u.Scheme {
	case "smtp":
		if port == "" {
			port = "587"
		}
	case "smtps":
		implicit = true
		if port == "" {
			port = "465"
		}
	default:
		return "", false, "", "", errors.New("alerts: the SMTP URL's scheme is not smtp or smtps")
	}
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
	}
	return net.JoinHostPort(u.Hostname(), port), implicit, user, pass, nil
}

// Check validates the SMTP settings, for relay serve's flags; its error
// never holds the password.
func (s SMTP) Check() error {
	if s.URL == "" && s.From == "" {
		return nil
	}
	if s.URL == "" || s.From == "" {
		return errors.New("alerts: --smtp-url and --smtp-from go together")
	}
	if _, _, _, _, err := s.parsed(); err != nil {
		return err
	}
	if !ValidEmail(s.From) {
		return errors.New("alerts: --smtp-from is not an email address")
	}
	return nil
}

// emailMessage is the RFC 5322 message of a delivery.
func emailMessage(from, to string, m *Message, now time.Time) []byte {
	text := m.Summary + "\r\n\r\nKind: " + m.Kind + "\r\n"
	if m.Account != "" {
		text += "Account: " + m.Account + "\r\n"
	}
	text += "At: " + m.At.UTC().Format(time.RFC3339) + "\r\n"
	if d := detailText(m.Detail); d != "" {
		text += "Detail: " + d + "\r\n"
	}
	text += "Delivery: " + m.DeliveryID + "\r\n"
	return plainMessage(from, to, "[tradebridge] "+m.title(), text, now, HeaderDelivery+": "+m.DeliveryID)
}

// plainMessage is an RFC 5322 message of plain UTF-8 text, with the
// extra header lines given: its subject on one line (line breaks become
// spaces; at most 200 characters; RFC 2047 words when not ASCII), its
// text's lines ended by CRLF.
func plainMessage(from, to, subject, text string, now time.Time, headers ...string) []byte {
	var b bytes.Buffer
	var id [12]byte
	_, _ = rand.Read(id[:])
	subject = clip(strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, subject), 200)
	fmt.Fprintf(&b, "From: %s\r\n", from)
	fmt.Fprintf(&b, "To: %s\r\n", to)
	fmt.Fprintf(&b, "Subject: %s\r\n", mime.QEncoding.Encode("utf-8", subject))
	fmt.Fprintf(&b, "Date: %s\r\n", now.UTC().Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Message-ID: <%s@tradebridge>\r\n", hex.EncodeToString(id[:]))
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	b.WriteString(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\n", "\r\n"))
	return b.Bytes()
}

// SendTimeout bounds Send: dialing the server and the whole exchange.
const SendTimeout = 30 * time.Second

// ErrSMTPDisabled refuses Send without a mail server (SMTP.Enabled).
var ErrSMTPDisabled = errors.New("alerts: no SMTP server is configured")

// Send sends one plain-text email to one address through the operator's
// server, as the email destinations' deliveries are sent (STARTTLS, AUTH
// PLAIN): for the relay's own mail, such as package relay/account's
// password-reset links. Its error names the failure's kind only, never
// the server's credentials or the message.
func (s SMTP) Send(ctx context.Context, to, subject, text string) error {
	if !s.Enabled() {
		return ErrSMTPDisabled
	}
	if !ValidEmail(to) {
		return errors.New("alerts: the recipient is not an email address")
	}
	now := time.Now()
	return sendRaw(ctx, s, SendTimeout, to, plainMessage(s.From, to, subject, text, now), now)
}

// sendEmail sends the message through the operator's server with
// emersion/go-smtp: STARTTLS when the server offers it (smtp://), TLS
// from the start (smtps://), then AUTH PLAIN when the URL has a user. A
// 5xx answer is a refusal for good, other failures worth another attempt.
func sendEmail(ctx context.Context, s SMTP, timeout time.Duration, to string, m *Message, now time.Time) error {
	return sendRaw(ctx, s, timeout, to, emailMessage(s.From, to, m, now), now)
}

// sendRaw sends msg, an RFC 5322 message, to one address as sendEmail
// says.
func sendRaw(ctx context.Context, s SMTP, timeout time.Duration, to string, msg []byte, now time.Time) error {
	addr, implicit, user, pass, err := s.parsed()
	if err != nil {
		return &sendError{reason: "smtp_misconfigured"}
	}
	host, _, _ := net.SplitHostPort(addr)
	conf := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if s.TLS != nil {
		conf = s.TLS.Clone()
		if conf.ServerName == "" {
			conf.ServerName = host
		}
	}
	deadline := now.Add(timeout)
	if dl, ok := ctx.Deadline(); ok {
		deadline = dl
	}
	dial := func() (net.Conn, error) {
		d := &net.Dialer{Timeout: timeout}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, classify(err)
		}
		_ = conn.SetDeadline(time.Now().Add(time.Until(deadline)))
		return conn, nil
	}
	conn, err := dial()
	if err != nil {
		return err
	}
	var c *smtp.Client
	switch {
	case implicit:
		tc := tls.Client(conn, conf)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return &sendError{reason: "tls_error", retryable: true}
		}
		c = smtp.NewClient(tc)
	default:
		// STARTTLS when the server offers it; a server that does not is
		// dialed again and spoken to in the clear, unless RequireTLS.
		c, err = smtp.NewClientStartTLS(conn, conf)
		if err != nil {
			conn.Close()
			var se *smtp.SMTPError
			if errors.As(err, &se) || !strings.Contains(err.Error(), "STARTTLS") {
				return smtpErr(err)
			}
			if s.RequireTLS {
				return &sendError{reason: "smtp_no_starttls", retryable: true}
			}
			if conn, err = dial(); err != nil {
				return err
			}
			c = smtp.NewClient(conn)
		}
	}
	defer c.Close()
	if err := c.Hello("tradebridge"); err != nil {
		return smtpErr(err)
	}
	if user != "" {
		if ok, _ := c.Extension("AUTH"); ok {
			if err := c.Auth(sasl.NewPlainClient("", user, pass)); err != nil {
				return smtpErr(err)
			}
		}
	}
	if err := c.SendMail(s.From, []string{to}, bytes.NewReader(msg)); err != nil {
		return smtpErr(err)
	}
	_ = c.Quit()
	return nil
}

// smtpErr classifies an SMTP failure: a 5xx reply is for good.
func smtpErr(err error) error {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		return &sendError{reason: "smtp_" + strconv.Itoa(se.Code), retryable: se.Code < 500}
	}
	return classify(err)
}
