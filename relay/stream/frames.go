package stream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/profile"
)

// Client actions.
const (
	actionRPC         = "rpc"
	actionSubscribe   = "subscribe"
	actionUnsubscribe = "unsubscribe"
	actionStreamPnl   = "streamPnl"
	actionPing        = "ping"
	// Activity subscriptions (the user's activity log, as written).
	actionSubscribeActivity   = "subscribeActivity"
	actionUnsubscribeActivity = "unsubscribeActivity"
)

// Server frame types.
const (
	typeSubscribed   = "subscribed"
	typeUnsubscribed = "unsubscribed"
	typePnlStreaming = "pnlStreaming"
	typePong         = "pong"
	typeError        = "error"
	typeStatus       = "status"
	typeMarketData   = "marketData"
	typePnlUpdate    = "pnlUpdate"

	typeActivitySubscribed   = "activitySubscribed"
	typeActivityUnsubscribed = "activityUnsubscribed"
	typeActivity             = "activity"
)

// maxDepth bounds the nesting of client frames (the args of an rpc nest
// one level below the frame).
const maxDepth = httpapi.DefaultMaxDepth

// maxIDLen bounds the id a client correlates with, as sent.
const maxIDLen = 130

// errorFrame is {type:"error"} and, without type, the failure of an rpc
// reply.
type errorFrame struct {
	Type       string               `json:"type,omitempty"`
	ID         json.RawMessage      `json:"id,omitempty"`
	Success    *bool                `json:"success,omitempty"`
	Error      string               `json:"error"`
	Detail     string               `json:"detail,omitempty"`
	Fields     []httpapi.FieldError `json:"fields,omitempty"`
	RetryAfter int                  `json:"retryAfter,omitempty"`
	Policy     string               `json:"policy,omitempty"`
	Replayed   bool                 `json:"replayed,omitempty"`
}

var falseValue = false

// frameError is a refusal of a client frame.
type frameError struct {
	code       string
	detail     string
	fields     []httpapi.FieldError
	retryAfter int
	policy     string
	// bad frames count towards the garbage limit.
	bad bool
	// replayed marks the recorded outcome of a keyed write answered
	// again (rpc replies only).
	replayed bool
}

func (e *frameError) encode(id json.RawMessage, rpc bool) []byte {
	f := errorFrame{Type: typeError, ID: id, Error: e.code, Detail: e.detail, Fields: e.fields,
		RetryAfter: e.retryAfter, Policy: e.policy}
	if rpc {
		f.Type = ""
		f.Success = &falseValue
		f.Replayed = e.replayed
	}
	return mustJSON(f)
}

func badFrame(code, detail string) *frameError {
	return &frameError{code: code, detail: detail, bad: true}
}

// mustJSON encodes frames the relay builds from its own values, which
// always encode.
func mustJSON(v any) []byte {
	b, err := httpapi.Marshal(v)
	if err != nil {
		return []byte(`{"type":"error","error":"` + errcode.InternalError + `","detail":"the relay failed to encode a frame"}`)
	}
	return b
}

type idOnly struct {
	Type string          `json:"type"`
	ID   json.RawMessage `json:"id,omitempty"`
}

type instrumentsFrame struct {
	Type        string            `json:"type"`
	ID          json.RawMessage   `json:"id,omitempty"`
	Instruments []string          `json:"instruments"`
	Unknown     []string          `json:"unknown,omitempty"`
	Quotes      []json.RawMessage `json:"quotes,omitempty"`
}

type pnlStreamingFrame struct {
	Type     string          `json:"type"`
	ID       json.RawMessage `json:"id,omitempty"`
	Enabled  bool            `json:"enabled"`
	Interval int64           `json:"interval"`
}

type statusFrame struct {
	Type           string `json:"type"`
	AgentConnected bool   `json:"agentConnected"`
	Detail         string `json:"detail"`
}

var (
	statusUp   = mustJSON(statusFrame{Type: typeStatus, AgentConnected: true, Detail: "the trading add-on is connected"})
	statusDown = mustJSON(statusFrame{Type: typeStatus, AgentConnected: false, Detail: "the trading add-on is not connected: start the agent next to the platform"})
)

func statusBody(connected bool) []byte {
	if connected {
		return statusUp
	}
	return statusDown
}

// rpcSuccess is {"id":…,"success":true,…} with the members of the
// call's reply in the caller's response profile (package profile), and
// "replayed":true last when the reply repeats a keyed write's recorded
// outcome. RPC replies carry no type: clients tell them from events by its
// absence, as the specification says.
func rpcSuccess(id json.RawMessage, reply profile.Reply, replayed bool) []byte {
	b := make([]byte, 0, 80+len(id)+reply.Size())
	b = append(b, `{"id":`...)
	b = append(b, id...)
	b = append(b, `,"success":true`...)
	b = reply.AppendTo(b)
	if replayed {
		b = append(b, `,"replayed":true`...)
	}
	return append(b, '}')
}

// clientFrame is a parsed client frame.
type clientFrame struct {
	action string
	id     json.RawMessage
	fields map[string]json.RawMessage
}

// allowedFields lists the fields each action takes besides action and id.
var allowedFields = map[string][]string{
	actionRPC:         {"api", "args"},
	actionSubscribe:   {"instruments"},
	actionUnsubscribe: {"instruments"},
	actionStreamPnl:   {"enabled", "interval"},
	actionPing:        nil,

	actionSubscribeActivity:   nil,
	actionUnsubscribeActivity: nil,
}

// parseFrame checks a client frame's syntax and envelope. Nothing the
// client sent is repeated in an error, except the id it correlates with.
func parseFrame(data []byte) (clientFrame, *frameError) {
	if err := httpapi.Validate(data, maxDepth); err != nil {
		return clientFrame{}, badFrame(errcode.InvalidJSON, "the frame is not valid JSON, has duplicate keys or nests too deeply")
	}
	var fields map[string]json.RawMessage
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' || json.Unmarshal(data, &fields) != nil {
		return clientFrame{}, badFrame(errcode.InvalidFrame, "a frame must be a JSON object with an action")
	}
	f := clientFrame{fields: fields}
	if raw, ok := fields["id"]; ok {
		if !validID(raw) {
			return clientFrame{}, badFrame(errcode.InvalidFrame, "id must be a string of at most 128 characters or a number")
		}
		f.id = raw
	}
	raw, ok := fields["action"]
	if !ok || json.Unmarshal(raw, &f.action) != nil {
		return f, badFrame(errcode.InvalidFrame, "a frame must be a JSON object with an action")
	}
	allowed, known := allowedFields[f.action]
	if !known {
		return f, badFrame(errcode.UnknownAction, "action must be one of rpc, subscribe, unsubscribe, streamPnl, subscribeActivity, unsubscribeActivity, ping")
	}
	for name := range fields {
		if name == "action" || name == "id" {
			continue
		}
		if !contains(allowed, name) {
			e := badFrame(errcode.InvalidFrame, "the frame has a field its action does not take")
			e.fields = []httpapi.FieldError{{Path: safeFieldName(name), Code: errcode.FieldCodeUnknownField}}
			return f, e
		}
	}
	return f, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// validID accepts a JSON string of at most 128 bytes or a finite number.
func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || len(raw) > maxIDLen {
		return false
	}
	switch raw[0] {
	case '"':
		return true // Validate checked the string
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

var fieldNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,39}$`)

// safeFieldName names a field in an error only when it looks like one.
func safeFieldName(s string) string {
	if fieldNameRE.MatchString(s) {
		return s
	}
	return "(unnamed)"
}

// instrumentRE is the one instrument grammar (protocol.ParseInstrument):
// "ES 12-26", a root ("ES"), or a month code ("ESZ26", "ESZ6"). Whether
// the root exists is the platform's to say.
var instrumentRE = regexp.MustCompile(protocol.InstrumentPattern)

// parseInstruments reads a subscribe or unsubscribe frame's instruments:
// 1 to max names of a valid form, normalized (trimmed, upper case) and
// deduplicated in order.
func parseInstruments(f clientFrame, max int) ([]string, *frameError) {
	raw, ok := f.fields["instruments"]
	if !ok {
		return nil, badFrame(errcode.InvalidFrame, "the frame needs instruments, an array of instrument names")
	}
	var names []string
	if json.Unmarshal(raw, &names) != nil || names == nil {
		return nil, badFrame(errcode.InvalidFrame, "instruments must be an array of instrument names")
	}
	if len(names) == 0 || len(names) > max {
		return nil, &frameError{code: errcode.InvalidArgument, detail: "instruments must hold 1 to " + strconv.Itoa(max) + " names",
			fields: []httpapi.FieldError{{Path: "instruments", Code: errcode.FieldCodeOutOfRange, Limit: max}}}
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		n = strings.TrimSpace(n)
		if !instrumentRE.MatchString(n) {
			return nil, &frameError{code: errcode.InvalidInstrument, detail: "an instrument name is not valid: use the form ES 12-26, a root such as ES, or a month code such as ESZ26",
				fields: []httpapi.FieldError{{Path: "instruments", Code: errcode.FieldCodeStringPatternMismatch, Pattern: instrumentRE.String()}}}
		}
		n = strings.ToUpper(n)
		if !contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// parseStreamPnl reads a streamPnl frame: enabled is required; interval,
// in milliseconds, defaults to DefaultPnlInterval and must lie within
// [MinPnlInterval, MaxPnlInterval].
func parseStreamPnl(f clientFrame) (enabled bool, interval time.Duration, e *frameError) {
	raw, ok := f.fields["enabled"]
	if !ok || json.Unmarshal(raw, &enabled) != nil {
		return false, 0, badFrame(errcode.InvalidFrame, "streamPnl needs enabled, a boolean")
	}
	interval = DefaultPnlInterval
	if raw, ok := f.fields["interval"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		var ms float64
		if json.Unmarshal(raw, &ms) != nil || ms != math.Trunc(ms) {
			return false, 0, &frameError{code: errcode.InvalidArgument, detail: "interval must be a whole number of milliseconds",
				fields: []httpapi.FieldError{{Path: "interval", Code: errcode.FieldCodeWrongType}}}
		}
		// The bound crossed: the minimum for an interval below it, the
		// maximum for one above.
		lo, hi := MinPnlInterval.Milliseconds(), MaxPnlInterval.Milliseconds()
		var fe *httpapi.FieldError
		switch {
		case ms < float64(lo):
			fe = &httpapi.FieldError{Path: "interval", Code: errcode.FieldCodeGreaterThanEqual, Limit: lo}
		case ms > float64(hi):
			fe = &httpapi.FieldError{Path: "interval", Code: errcode.FieldCodeLessThanEqual, Limit: hi}
		}
		if fe != nil {
			return false, 0, &frameError{code: errcode.InvalidArgument,
				detail: fmt.Sprintf("interval must be %d to %d milliseconds", lo, hi), fields: []httpapi.FieldError{*fe}}
		}
		interval = time.Duration(ms) * time.Millisecond
	}
	return enabled, interval, nil
}

// appendSeq writes body, a JSON object, as a frame with seq first:
// {"seq":N,…body's fields…}.
func appendSeq(dst []byte, seq uint64, body []byte) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	if len(body) > 2 {
		dst = append(dst, ',')
		dst = append(dst, body[1:]...)
	} else {
		dst = append(dst, '}')
	}
	return dst
}
