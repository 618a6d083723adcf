package tradovatewire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The websocket protocol. The server sends text frames starting with one
// letter: "o" when the socket opens, "h" as a heartbeat, "a" followed by a
// JSON array of messages, and "c" followed by [code,"reason"] before it
// closes. The client sends requests of four lines (endpoint, id, query,
// body; the body of "authorize" is the access token) and "[]" as its own
// heartbeat.

// ErrMalformedFrame reports a frame that is not in the protocol's format.
var ErrMalformedFrame = errors.New("tradovatewire: malformed frame")

// FrameKind is the first letter of a server frame.
type FrameKind byte

// Server frame kinds.
const (
	FrameOpen      FrameKind = 'o'
	FrameHeartbeat FrameKind = 'h'
	FrameArray     FrameKind = 'a'
	FrameClose     FrameKind = 'c'
)

// Frame is one server frame. Messages is set for FrameArray, CloseCode and
// CloseReason for FrameClose.
type Frame struct {
	Kind        FrameKind
	Messages    []Message
	CloseCode   int
	CloseReason string
}

// Message is one element of an "a" frame: a response to request I, with
// status S and data D, or an event named E (props, md, …) with data D.
type Message struct {
	S int             `json:"s"`
	I int64           `json:"i"`
	E string          `json:"e"`
	D json.RawMessage `json:"d"`
}

// IsEvent reports whether m is an event rather than a response.
func (m Message) IsEvent() bool { return m.E != "" }

// MarshalJSON writes a response as {"s","i","d"} and an event as {"e","d"},
// leaving d out when it is empty.
func (m Message) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if m.E != "" {
		e, _ := json.Marshal(m.E)
		b.WriteString(`{"e":`)
		b.Write(e)
	} else {
		fmt.Fprintf(&b, `{"s":%d,"i":%d`, m.S, m.I)
	}
	if len(m.D) > 0 {
		if !json.Valid(m.D) {
			return nil, fmt.Errorf("tradovatewire: message data: %w", ErrMalformedFrame)
		}
		b.WriteString(`,"d":`)
		b.Write(m.D)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Response returns the response to request id with status and data (any
// JSON-encodable value; nil leaves d out).
func Response(id int64, status int, data any) (Message, error) {
	m := Message{S: status, I: id}
	if data != nil {
		d, err := json.Marshal(data)
		if err != nil {
			return Message{}, err
		}
		m.D = d
	}
	return m, nil
}

// Event returns an event named name with data.
func Event(name string, data any) (Message, error) {
	d, err := json.Marshal(data)
	if err != nil {
		return Message{}, err
	}
	return Message{E: name, D: d}, nil
}

// ParseFrame parses a server frame.
func ParseFrame(b []byte) (Frame, error) {
	if len(b) == 0 {
		return Frame{}, ErrMalformedFrame
	}
	f := Frame{Kind: FrameKind(b[0])}
	rest := b[1:]
	switch f.Kind {
	case FrameOpen, FrameHeartbeat:
		if len(bytes.TrimSpace(rest)) != 0 {
			return Frame{}, ErrMalformedFrame
		}
	case FrameArray:
		if err := json.Unmarshal(rest, &f.Messages); err != nil {
			return Frame{}, ErrMalformedFrame
		}
	case FrameClose:
		var parts []json.RawMessage
		if err := json.Unmarshal(rest, &parts); err != nil || len(parts) == 0 {
			return Frame{}, ErrMalformedFrame
		}
		if err := json.Unmarshal(parts[0], &f.CloseCode); err != nil {
			return Frame{}, ErrMalformedFrame
		}
		if len(parts) > 1 {
			if err := json.Unmarshal(parts[1], &f.CloseReason); err != nil {
				return Frame{}, ErrMalformedFrame
			}
		}
	default:
		return Frame{}, ErrMalformedFrame
	}
	return f, nil
}

// FormatOpen returns the frame a server sends when a socket opens.
func FormatOpen() []byte { return []byte{byte(FrameOpen)} }

// FormatHeartbeat returns a server heartbeat frame.
func FormatHeartbeat() []byte { return []byte{byte(FrameHeartbeat)} }

// FormatMessages returns an "a" frame carrying msgs.
func FormatMessages(msgs ...Message) ([]byte, error) {
	if msgs == nil {
		msgs = []Message{}
	}
	j, err := json.Marshal(msgs)
	if err != nil {
		return nil, err
	}
	return append([]byte{byte(FrameArray)}, j...), nil
}

// FormatClose returns a "c" frame with code and reason.
func FormatClose(code int, reason string) []byte {
	r, _ := json.Marshal(reason)
	return []byte(fmt.Sprintf("c[%d,%s]", code, r))
}

// Request is one client request: Endpoint ("user/syncrequest",
// "md/subscribequote", "authorize"), ID (0 for authorize; the response
// carries it back), an optional URL query and an optional JSON body.
type Request struct {
	Endpoint string
	ID       int64
	Query    string
	Body     []byte
}

// ClientHeartbeat is the frame a client sends as its heartbeat.
var ClientHeartbeat = []byte("[]")

// AuthorizeEndpoint is the endpoint of the first request on a socket.
const AuthorizeEndpoint = "authorize"

// Authorize returns the request that authorizes a socket with token.
func Authorize(token string) Request {
	return Request{Endpoint: AuthorizeEndpoint, ID: 0, Body: []byte(token)}
}

// FormatRequest writes r as a client frame.
func FormatRequest(r Request) []byte {
	var b bytes.Buffer
	b.WriteString(r.Endpoint)
	b.WriteByte('\n')
	b.WriteString(strconv.FormatInt(r.ID, 10))
	b.WriteByte('\n')
	b.WriteString(r.Query)
	b.WriteByte('\n')
	b.Write(r.Body)
	return b.Bytes()
}

// IsClientHeartbeat reports whether a client frame is a heartbeat.
func IsClientHeartbeat(b []byte) bool { return bytes.Equal(bytes.TrimSpace(b), ClientHeartbeat) }

// ParseRequest parses a client request frame (not a heartbeat). The body
// is everything after the third newline; a frame with fewer lines is
// accepted when it has at least an endpoint and an id.
func ParseRequest(b []byte) (Request, error) {
	parts := strings.SplitN(string(b), "\n", 4)
	if len(parts) < 2 || parts[0] == "" || strings.ContainsAny(parts[0], " \t\r") {
		return Request{}, ErrMalformedFrame
	}
	id, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || id < 0 {
		return Request{}, ErrMalformedFrame
	}
	r := Request{Endpoint: parts[0], ID: id}
	if len(parts) > 2 {
		r.Query = parts[2]
	}
	if len(parts) > 3 && parts[3] != "" {
		r.Body = []byte(parts[3])
	}
	return r, nil
}
