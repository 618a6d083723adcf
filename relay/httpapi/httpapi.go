// Package httpapi is the relay's only way to speak JSON over HTTP. Every
// relay handler writes its responses through Write, WriteWithTop,
// WriteMembers (a response profile's rendering) and WriteError, and reads
// request bodies through ReadJSON and RejectBody, so that the envelope,
// the security headers, the size and time limits and the strictness of
// the JSON accepted are decided once, here, and are the same on every
// route (the role coder's coderd/httpapi plays for coderd).
//
// # Responses
//
// A success is {"success":true,"data":...}, optionally with more top-level
// fields next to data (WriteWithTop). A failure is
//
//	{"success":false,"error":"<code>","detail":"<sentence>","fields":[...],
//	 "retryAfter":<seconds>,"policy":"<name>","meta":{"requestId":"<id>","etag":"<tag>"}}
//
// where only success and error are always present. Every response
// carries Content-Type: application/json, X-Content-Type-Options: nosniff
// and Cache-Control: no-store. Bodies are encoded into a buffer before
// anything is sent, so a value that cannot be encoded yields a clean 500
// internal_error instead of a truncated 200. They are encoded without
// HTML escaping (Marshal): "&" is sent as "&", not "\u0026".
//
// # Requests
//
// ReadJSON accepts only what RFC 8259 calls JSON, minus what the service
// refuses on top of it: duplicate object keys and nesting deeper than a
// limit. It reports every refusal as an *Error carrying the HTTP status and
// a stable code (see the Code constants), whose Detail is a fixed sentence
// that never repeats bytes the caller sent. Validate exposes the same strict
// syntax check for readers of other transports, such as the WebSocket.
package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
)

// RequestIDHeader names a request: the relay sets it on every response, and
// WriteError repeats it as meta.requestId when the Error names none.
const RequestIDHeader = "X-Request-Id"

// Error is a failed request as the caller sees it. It is also an error, so
// code deeper in a handler may return it and let the handler write it with
// WriteError. errors.Unwrap on it yields the cause when the package built it
// (for example a *SyntaxError or an *http.MaxBytesError); the cause is for
// logs and errors.Is/As only and is never written to the caller.
type Error struct {
	// Status is the HTTP status. ReadJSON and RejectBody set it; WriteError
	// uses it when called with status 0.
	Status int
	// Code is the stable, machine-readable error code, e.g. "invalid_json".
	// WriteError writes "internal_error" when it is empty.
	Code string
	// Detail is a sentence for humans. It must never contain bytes the
	// caller sent: callers' bodies may hold secrets and land in logs.
	Detail string
	// Fields names the fields at fault, for validation errors.
	Fields []FieldError
	// RetryAfter, when positive, is the number of seconds after which a
	// retry may succeed; WriteError also sends it as the Retry-After header.
	RetryAfter int
	// Policy names the rule that refused the request (a rate limit or a
	// plan policy), when one did.
	Policy string
	// RequestID is written as meta.requestId so that a caller can quote it.
	RequestID string
	// ETag, when set, is sent as the ETag header, e.g. with 412 so that the
	// caller can retry against the current version.
	ETag string

	cause error
}

// Error returns the code and the detail, never the cause.
func (e *Error) Error() string {
	code := e.Code
	if code == "" {
		code = errcode.InternalError
	}
	if e.Detail == "" {
		return code
	}
	return code + ": " + e.Detail
}

// Unwrap returns the cause of the error, or nil.
func (e *Error) Unwrap() error { return e.cause }

// FieldError names one field at fault. Path is the dotted path of the field
// as the API documents it ("quantity", "smartOptions.x"); Code says what is
// wrong with it; Limit, Pattern and Allowed state the rule that was broken
// when it has one (the bound crossed, a regular expression, the values an
// enumerated field takes).
type FieldError struct {
	Path    string   `json:"path"`
	Code    string   `json:"code"`
	Limit   any      `json:"limit,omitempty"`
	Pattern string   `json:"pattern,omitempty"`
	Allowed []string `json:"allowed,omitempty"`
}

// maxPooledBuffer bounds the buffers kept for reuse, so that one huge
// response or body does not pin its memory for the life of the process.
const maxPooledBuffer = 256 << 10

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuffer() *bytes.Buffer { return bufPool.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledBuffer {
		return
	}
	b.Reset()
	bufPool.Put(b)
}

// encodeFailure is written when a response cannot be encoded. It is a
// constant so that writing it cannot fail in turn.
var encodeFailure = []byte(`{"success":false,"error":"` + errcode.InternalError + `","detail":"the relay failed to encode the response"}` + "\n")

// Write sends status and {"success":true,"data":data}. data is encoded with
// encoding/json; a json.RawMessage is written as is. status must allow a
// body (not 1xx, 204 or 304). If data cannot be encoded, Write sends a 500
// internal_error instead. Errors writing to the connection (the caller went
// away) are not reported: there is nobody left to tell.
func Write(w http.ResponseWriter, status int, data any) {
	WriteWithTop(w, status, data, nil)
}

// WriteWithTop is Write with more top-level fields next to success and data,
// for values callers look for at the top level (e.g. "orderId"). Keys are
// written in sorted order; the keys "success" and "data" in top are ignored.
func WriteWithTop(w http.ResponseWriter, status int, data any, top map[string]any) {
	buf := getBuffer()
	defer putBuffer(buf)
	enc := newEncoder(buf)
	buf.WriteString(`{"success":true,"data":`)
	if err := encodeValue(enc, buf, data); err != nil {
		send(w, http.StatusInternalServerError, encodeFailure)
		return
	}
	if len(top) > 0 {
		keys := make([]string, 0, len(top))
		for k := range top {
			if k != "success" && k != "data" {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			buf.WriteByte(',')
			if err := encodeValue(enc, buf, k); err != nil {
				send(w, http.StatusInternalServerError, encodeFailure)
				return
			}
			buf.WriteByte(':')
			if err := encodeValue(enc, buf, top[k]); err != nil {
				send(w, http.StatusInternalServerError, encodeFailure)
				return
			}
		}
	}
	buf.WriteString("}\n")
	send(w, status, buf.Bytes())
}

// WriteMembers sends status and a success whose top-level members besides
// "success" are appended by appendMembers, each as `,"key":value` (a
// response profile's rendering, see package profile). The members must be
// valid JSON; appendMembers is called with {"success":true already in the
// buffer.
func WriteMembers(w http.ResponseWriter, status int, appendMembers func([]byte) []byte) {
	buf := getBuffer()
	defer putBuffer(buf)
	buf.WriteString(`{"success":true`)
	buf.Write(appendMembers(buf.AvailableBuffer()))
	buf.WriteString("}\n")
	send(w, status, buf.Bytes())
}

// body is e's wire form: internal_error when it has no code, meta when
// it has a request id or an ETag.
func (e *Error) body() errorBody {
	body := errorBody{
		Error:      e.Code,
		Detail:     e.Detail,
		Fields:     e.Fields,
		RetryAfter: max(e.RetryAfter, 0),
		Policy:     e.Policy,
	}
	if body.Error == "" {
		body.Error = errcode.InternalError
	}
	if e.RequestID != "" || e.ETag != "" {
		body.Meta = &errorMeta{RequestID: e.RequestID, ETag: e.ETag}
	}
	return body
}

// EncodeError returns the JSON of e's error object, as WriteError sends
// it but without a status or headers: for the doors that carry errors
// inside an envelope of their own (the stream socket's frames, MCP's tool
// results).
func EncodeError(e Error) (json.RawMessage, error) {
	return Marshal(e.body())
}

// Marshal is json.Marshal as every door of the relay writes JSON: without
// encoding/json's HTML escaping, so that a detail's "&", "<" and ">" reach
// the caller as written rather than as \u0026, \u003c and \u003e (the
// relay's JSON is never embedded in HTML by the relay). The doors that
// carry values in an envelope of their own (the stream socket's frames,
// MCP's tool results) encode with it. It is the tunnel's protocol.Marshal,
// so the relay and the agent encode alike.
func Marshal(v any) ([]byte, error) { return protocol.Marshal(v) }

// newEncoder is a json.Encoder writing to buf without HTML escaping.
func newEncoder(buf *bytes.Buffer) *json.Encoder {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	return enc
}

// errorBody is the wire form of an Error.
type errorBody struct {
	Success    bool         `json:"success"`
	Error      string       `json:"error"`
	Detail     string       `json:"detail,omitempty"`
	Fields     []FieldError `json:"fields,omitempty"`
	RetryAfter int          `json:"retryAfter,omitempty"`
	Policy     string       `json:"policy,omitempty"`
	Meta       *errorMeta   `json:"meta,omitempty"`
}

type errorMeta struct {
	RequestID string `json:"requestId,omitempty"`
	// ETag is the resource's current ETag (with 412 precondition_failed).
	ETag string `json:"etag,omitempty"`
}

// WriteError sends status and the error body of e, omitting empty fields.
// A status of 0 means e.Status, and 500 if that is 0 too. When e.RetryAfter
// is positive the Retry-After header is set; when e.ETag is set, the ETag
// header and meta.etag. If e cannot be encoded (a FieldError.Limit that encoding/json
// refuses), WriteError sends a 500 internal_error instead.
func WriteError(w http.ResponseWriter, status int, e Error) {
	if status == 0 {
		status = e.Status
	}
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if e.RequestID == "" {
		// The relay's middleware names every request in this header
		// before any handler runs.
		e.RequestID = w.Header().Get(RequestIDHeader)
	}
	buf := getBuffer()
	defer putBuffer(buf)
	if err := newEncoder(buf).Encode(e.body()); err != nil {
		send(w, http.StatusInternalServerError, encodeFailure)
		return
	}
	h := w.Header()
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if e.ETag != "" {
		h.Set("ETag", e.ETag)
	}
	send(w, status, buf.Bytes())
}

// WriteNoContent sends 204 No Content with the headers every response
// carries (no body, so no Content-Type).
func WriteNoContent(w http.ResponseWriter) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// NotFound sends 404 not_found.
func NotFound(w http.ResponseWriter) {
	WriteError(w, http.StatusNotFound, Error{Code: errcode.NotFound, Detail: "nothing is served at this path"})
}

// MethodNotAllowed sends 405 method_not_allowed with an Allow header listing
// allowed, the methods the path does serve.
func MethodNotAllowed(w http.ResponseWriter, allowed ...string) {
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	WriteError(w, http.StatusMethodNotAllowed, Error{Code: errcode.MethodNotAllowed, Detail: "this path does not serve the request's method; see the Allow header"})
}

// encodeValue appends the JSON encoding of v to buf without the newline
// json.Encoder adds. On error buf may hold a partial value; callers discard
// it.
func encodeValue(enc *json.Encoder, buf *bytes.Buffer, v any) error {
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1)
	return nil
}

// WriteRaw answers with a JSON body encoded earlier (an answer recorded
// to be given again), with the headers of every response.
func WriteRaw(w http.ResponseWriter, status int, body []byte) { send(w, status, body) }

// send writes the headers every response carries, then status and body.
func send(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// StatusRecorder is the relay's one ResponseWriter wrapper: it remembers
// the status its handler answered, for the middlewares that log and count
// responses, and lets Guard act just before the status is sent and when a
// handler takes the connection over. Status is 0 until the handler writes,
// then the status sent (200 for a Write or a Flush without WriteHeader).
//
// Unwrap lets http.ResponseController reach the underlying writer (read
// and write deadlines, full duplex); Hijack and FlushError are its own, so
// that a WebSocket upgrade through any number of recorders is seen by each.
type StatusRecorder struct {
	http.ResponseWriter
	Status int
	// Hijacked is true once the handler took the connection over.
	Hijacked bool
	// BeforeHeader, when set, is called once with the status, before a
	// final (non-1xx) status is sent: by WriteHeader, the first Write, or
	// a Flush. It may still change the header.
	BeforeHeader func(status int)
	// AfterHijack, when set, is called with the connection once the
	// handler took it over.
	AfterHijack func(net.Conn)

	headerDone bool
}

// WriteHeader records the first status and sends it.
func (w *StatusRecorder) WriteHeader(code int) {
	if w.Status == 0 {
		w.Status = code
	}
	w.beforeHeader(code)
	w.ResponseWriter.WriteHeader(code)
}

// Write records 200 when nothing was written before, and writes p.
func (w *StatusRecorder) Write(p []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	w.beforeHeader(http.StatusOK)
	return w.ResponseWriter.Write(p)
}

// FlushError records 200 when nothing was written before, and flushes the
// underlying writer (see http.ResponseController.Flush).
func (w *StatusRecorder) FlushError() error {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	w.beforeHeader(http.StatusOK)
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack takes the connection over from the underlying writer (see
// http.ResponseController.Hijack) and records it.
func (w *StatusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.Hijacked = true
	if w.AfterHijack != nil {
		w.AfterHijack(conn)
	}
	return conn, rw, nil
}

// beforeHeader calls BeforeHeader once, for the first final status.
func (w *StatusRecorder) beforeHeader(code int) {
	if w.headerDone || code < http.StatusOK {
		return
	}
	w.headerDone = true
	if w.BeforeHeader != nil {
		w.BeforeHeader(code)
	}
}

// Unwrap lets http.ResponseController and WebSocket upgrades reach the
// underlying writer.
func (w *StatusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// safePathRE is the form of a field path an error may name when the
// caller wrote part of it (an unknown field).
var safePathRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// SafePath returns p when it is at most 64 characters of [A-Za-z0-9_.-],
// else "": an error names a field the caller wrote (an unknown one) only
// when it cannot carry anything but a name.
func SafePath(p string) string {
	if safePathRE.MatchString(p) {
		return p
	}
	return ""
}
