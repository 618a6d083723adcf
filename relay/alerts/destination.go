package alerts

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"regexp"
	"strings"

	"tradebridge/protocol"
	"tradebridge/relay/sealed"
)

// Kinds of destination (Destination.Kind).
const (
	KindWebhook  = "webhook"
	KindDiscord  = "discord"
	KindTelegram = "telegram"
	KindEmail    = "email"
)

// Kinds lists every Destination.Kind.
var Kinds = []string{KindWebhook, KindDiscord, KindTelegram, KindEmail}

// Bounds and defaults of a destination.
const (
	// DefaultGraceSeconds is graceSeconds when a create does not send it.
	DefaultGraceSeconds = 60
	// MaxGraceSeconds bounds graceSeconds.
	MaxGraceSeconds = 3600
	// MaxEvents bounds a destination's events.
	MaxEvents = 32
	// MaxNameLength bounds a destination's name, in bytes.
	MaxNameLength = 100
)

// Kinds of payload that are not activity kinds: a destination's test
// (POST …/alerts/{id}/test) and the summary of a minute's entries past
// the rate limit.
const (
	PayloadTest    = "alert.test"
	PayloadSummary = "alert.summary"
)

// AlertableKinds are the activity kinds a destination may ask for: every
// kind of protocol.ActivityKinds but the alerts' own (alert.sent,
// alert.failed), so that alerts cannot alert about themselves in a loop.
var AlertableKinds = func() []string {
	var out []string
	for _, k := range protocol.ActivityKinds {
		if !strings.HasPrefix(k, "alert.") {
			out = append(out, k)
		}
	}
	return out
}()

// Alertable reports whether a destination may ask for the activity kind.
func Alertable(kind string) bool {
	for _, k := range AlertableKinds {
		if k == kind {
			return true
		}
	}
	return false
}

// Destination is an alert destination of a user, a resource of the
// Management API (/v1/api/manage/alerts), as stored. Its secrets (a
// webhook's signing secret, a Discord webhook URL, which embeds Discord's
// token, a Telegram bot token) are kept in Sealed only; the fields shown
// say that they exist (HasSecret, HasBotToken) or, for Discord, the
// URL's host.
type Destination struct {
	protocol.Meta
	// Kind is one of Kinds; set at creation.
	Kind string `json:"kind"`
	// Name is the user's name for it; optional.
	Name string `json:"name"`
	// Active is false to keep it without sending to it.
	Active bool `json:"active"`
	// GraceSeconds delays agent.disconnected: an agent that is back
	// within it sends nothing.
	GraceSeconds int `json:"graceSeconds"`
	// Events are the activity kinds it is sent (of AlertableKinds).
	Events []string `json:"events"`
	// URL is a webhook's URL; a Discord destination's is shown as its
	// host only.
	URL string `json:"url,omitempty"`
	// BotToken is a Telegram destination's bot token, as sent: never
	// stored or shown (HasBotToken).
	BotToken string `json:"botToken,omitempty"`
	// ChatID is a Telegram destination's chat.
	ChatID string `json:"chatId,omitempty"`
	// To is an email destination's address.
	To string `json:"to,omitempty"`
	// HasSecret reports that a webhook has its signing secret.
	HasSecret bool `json:"hasSecret,omitempty"`
	// HasBotToken reports that a Telegram destination has its bot token.
	HasBotToken bool `json:"hasBotToken,omitempty"`
	// Sealed holds the Secrets, sealed (relay/sealed); never shown.
	Sealed string `json:"sealed,omitempty"`
}

// Wants reports whether the destination is active and asks for the kind.
func (d *Destination) Wants(kind string) bool {
	if !d.Active {
		return false
	}
	for _, k := range d.Events {
		if k == kind {
			return true
		}
	}
	return false
}

// Secrets are a destination's secrets, kept sealed in
// Destination.Sealed.
type Secrets struct {
	// Secret is a webhook's signing secret.
	Secret string `json:"secret,omitempty"`
	// URL is a Discord destination's webhook URL.
	URL string `json:"url,omitempty"`
	// BotToken is a Telegram destination's bot token.
	BotToken string `json:"botToken,omitempty"`
}

// aad binds a destination's sealed secrets to the user and the
// destination: copied onto another row, they do not open.
func aad(userID, destinationID string) []byte {
	return []byte("tradebridge/alerts\x00" + userID + "\x00" + destinationID)
}

// ErrNoKeys reports a destination whose secrets cannot be sealed or
// opened: the relay has no key ring.
var ErrNoKeys = errors.New("alerts: no key ring to seal or open secrets")

// Seal seals s into d.Sealed with the key ring, for the user.
func Seal(keys *sealed.Keyring, userID string, d *Destination, s Secrets) error {
	if keys == nil {
		return ErrNoKeys
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	out, err := keys.Seal(b, aad(userID, d.ID))
	if err != nil {
		return err
	}
	d.Sealed = out
	return nil
}

// Open returns the secrets sealed in d.Sealed.
func Open(keys *sealed.Keyring, userID string, d *Destination) (Secrets, error) {
	var s Secrets
	if d.Sealed == "" {
		return s, nil
	}
	if keys == nil {
		return s, ErrNoKeys
	}
	b, err := keys.Open(d.Sealed, aad(userID, d.ID))
	if err != nil {
		return s, err
	}
	err = json.Unmarshal(b, &s)
	return s, err
}

// NewSecret returns a fresh webhook signing secret: "whsec_" and 32
// random bytes in hex.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "whsec_" + hex.EncodeToString(b[:])
}

// Redact clears what callers never see of a destination: the sealed
// secrets and a bot token.
func Redact(d *Destination) {
	d.Sealed = ""
	d.BotToken = ""
}

// Problems of a URL, as CheckURL reports them.
var (
	// ErrURLInvalid: not an absolute http(s) URL with a host, or it
	// holds credentials or a fragment.
	ErrURLInvalid = errors.New("alerts: the URL is not an https URL with a host and no credentials")
	// ErrURLInsecure: http rather than https, without AllowPrivate.
	ErrURLInsecure = errors.New("alerts: the URL must be https")
	// ErrURLPrivate: the host is a loopback, private or other address the
	// relay does not send to, without AllowPrivate.
	ErrURLPrivate = errors.New("alerts: the URL names an address the relay does not send to")
)

// CheckURL checks a destination's URL as a create or change gives it: an
// absolute https URL with a host, no user or password and no fragment;
// its host no loopback, private, link-local, CGNAT, unique-local,
// unspecified or multicast address, nor "localhost". allowPrivate (relay
// serve --alerts-allow-private) lets plain http and those addresses. A
// host name is checked again, resolved, at every connection (Guard).
func CheckURL(raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return ErrURLInvalid
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !allowPrivate {
			return ErrURLInsecure
		}
	default:
		return ErrURLInvalid
	}
	if allowPrivate {
		return nil
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return ErrURLPrivate
	}
	if ip, err := netip.ParseAddr(host); err == nil && !PublicAddr(ip) {
		return ErrURLPrivate
	}
	return nil
}

// discordPath is the path of a Discord webhook URL: /api/webhooks/{id}/{token}.
var discordPath = regexp.MustCompile(`^/api(/v[0-9]+)?/webhooks/[0-9]{1,30}/[A-Za-z0-9_-]{1,200}$`)

// discordHosts are the hosts of Discord's webhook URLs.
var discordHosts = map[string]bool{
	"discord.com": true, "discordapp.com": true, "ptb.discord.com": true, "canary.discord.com": true,
}

// CheckDiscordURL checks a Discord webhook URL: https, on one of
// Discord's hosts, with the path of a webhook and no query or fragment.
// It is sent to the relay's Discord base URL (relay serve --discord-url),
// never to another host.
func CheckDiscordURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.User != nil || u.Fragment != "" || u.RawQuery != "" ||
		!discordHosts[strings.ToLower(u.Host)] || !discordPath.MatchString(u.Path) {
		return ErrURLInvalid
	}
	return nil
}

// DiscordHost returns the host of a Discord webhook URL, as the
// destination shows it.
func DiscordHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Host)
}

// botTokenPattern is the form of a Telegram bot token: the bot's id, a
// colon and its secret.
var botTokenPattern = regexp.MustCompile(`^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$`)

// BotTokenPattern is the form of a Telegram bot token, as field errors
// show it.
const BotTokenPattern = `^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$`

// ValidBotToken reports whether s has the form of a Telegram bot token.
func ValidBotToken(s string) bool { return botTokenPattern.MatchString(s) }

// ChatIDPattern is the form of a Telegram chat id: a number (negative for
// groups) or a channel's @username.
const ChatIDPattern = `^(-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{4,31})$`

var chatIDPattern = regexp.MustCompile(ChatIDPattern)

// ValidChatID reports whether s has the form of ChatIDPattern.
func ValidChatID(s string) bool { return chatIDPattern.MatchString(s) }

// ValidEmail reports whether s is one plain email address (no display
// name), at most 254 bytes.
func ValidEmail(s string) bool {
	if len(s) > 254 || strings.ContainsAny(s, "\r\n<>") {
		return false
	}
	a, err := mail.ParseAddress(s)
	return err == nil && a.Name == "" && a.Address == s
}

// cgnat, nat64 and the other ranges PublicAddr refuses besides those the
// netip methods name.
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // CGNAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: an IPv4 address behind
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local NAT64
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
	netip.MustParsePrefix("100::/64"),        // discard
	netip.MustParsePrefix("2002::/16"),       // 6to4: an IPv4 address inside
	netip.MustParsePrefix("2001::/32"),       // Teredo: an IPv4 address inside
	netip.MustParsePrefix("169.254.0.0/16"),  // link-local (also IsLinkLocalUnicast)
	netip.MustParsePrefix("fc00::/7"),        // unique local (also IsPrivate)
	netip.MustParsePrefix("ff00::/8"),        // multicast (also IsMulticast)
	netip.MustParsePrefix("224.0.0.0/4"),     // multicast (also IsMulticast)
	netip.MustParsePrefix("::ffff:0:0/96"),   // IPv4-mapped: unmapped first
	netip.MustParsePrefix("::/128"),          // unspecified
	netip.MustParsePrefix("::1/128"),         // loopback
	netip.MustParsePrefix("127.0.0.0/8"),     // loopback
	netip.MustParsePrefix("10.0.0.0/8"),      // private
	netip.MustParsePrefix("172.16.0.0/12"),   // private
	netip.MustParsePrefix("192.168.0.0/16"),  // private
	netip.MustParsePrefix("fe80::/10"),       // link-local
	netip.MustParsePrefix("ff02::/16"),       // link-local multicast
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
}

// PublicAddr reports whether the relay may send to ip without
// AllowPrivate: not loopback, private (RFC 1918), link-local, CGNAT,
// unique-local, unspecified, multicast, nor another special range (an
// IPv4-mapped address is judged as the IPv4 address it maps).
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range refusedPrefixes {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// hostPort splits a dialed address; the host is an IP address.
func hostPort(address string) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return netip.Addr{}, false
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return ip, true
}
