package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"tradebridge/relay/errcode"
)

// Defaults of ReadOptions.
const (
	DefaultMaxBytes = 64 << 10
	DefaultTimeout  = 10 * time.Second
)

// Sentinels that causes of ReadJSON's and RejectBody's *Error match with
// errors.Is, besides those of Validate.
var (
	// ErrUnsupportedContentType is the cause of a 415: the body is not
	// declared as uncompressed application/json in UTF-8.
	ErrUnsupportedContentType = errors.New("unsupported content type")
	// ErrUnexpectedBody is the cause of a 400 unexpected_body.
	ErrUnexpectedBody = errors.New("unexpected request body")
)

// ReadOptions bound what ReadJSON accepts. The zero value means the
// defaults.
type ReadOptions struct {
	// MaxBytes is the largest body accepted. Default DefaultMaxBytes.
	MaxBytes int64
	// MaxDepth is the deepest nesting of arrays and objects accepted; the
	// top-level object counts as 1. Default DefaultMaxDepth.
	MaxDepth int
	// Timeout bounds the time to receive the whole body, counted from the
	// call to ReadJSON. It is enforced with http.ResponseController's
	// SetReadDeadline; when the ResponseWriter does not support read
	// deadlines, only the server's own timeouts apply. Default
	// DefaultTimeout.
	Timeout time.Duration
	// AnyValue accepts any JSON value at the top level, not only an
	// object, for handlers that answer a valid value of the wrong type
	// themselves (the Management API's 422).
	AnyValue bool
}

// ReadJSON reads the body of r, checks it and decodes it into dst with
// encoding/json. It returns nil on success, else an *Error ready for
// WriteError(w, e.Status, *e):
//
//   - 415 unsupported_content_type: Content-Type is missing, several, not
//     application/json, or has a parameter other than charset=utf-8 (matched
//     without regard to case); or Content-Encoding is other than identity;
//   - 413 body_too_large: the body is larger than opts.MaxBytes;
//   - 408 body_timeout: the body did not arrive within opts.Timeout;
//   - 400 invalid_json: the body is empty, is not strictly valid JSON (see
//     Validate, with opts.MaxDepth), or is not an object (unless
//     opts.AnyValue);
//   - 400 invalid_field: a value does not fit the type of its field in dst;
//     Fields holds one FieldError whose Path is the dotted path of the field
//     built from dst's JSON names, with code wrong_type, and the detail
//     says what the field wants, from its Go type (Shape);
//   - 500 internal_error: dst is not a non-nil pointer.
//
// Unknown fields are not refused: callers validate what they decoded.
// Details are fixed sentences that never contain the caller's bytes; the
// cause, for logs, is available through errors.Unwrap, errors.Is and
// errors.As (ErrUnsupportedContentType, *http.MaxBytesError,
// os.ErrDeadlineExceeded, *SyntaxError, *json.UnmarshalTypeError).
//
// ReadJSON does not close the body; the server does. dst must not keep
// references into the JSON it is given (encoding/json's Unmarshaler
// contract), since the buffer holding the body is reused.
func ReadJSON(w http.ResponseWriter, r *http.Request, dst any, opts ReadOptions) *Error {
	if e := checkContentHeaders(r.Header); e != nil {
		return e
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = DefaultMaxDepth
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if r.ContentLength > opts.MaxBytes {
		return tooLarge(&http.MaxBytesError{Limit: opts.MaxBytes})
	}

	buf := getBuffer()
	defer putBuffer(buf)
	if r.Body != nil && r.Body != http.NoBody {
		rc := http.NewResponseController(w)
		deadline := rc.SetReadDeadline(time.Now().Add(opts.Timeout)) == nil
		if r.ContentLength > 0 {
			buf.Grow(int(r.ContentLength))
		}
		if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, opts.MaxBytes)); err != nil {
			// The deadline stays: the server, before it answers, tries to
			// discard what is left of the body, and must not wait for a
			// caller that stalled.
			return readFailure(err)
		}
		if deadline {
			// The whole body is in: lift the deadline so that it cannot fire
			// on later reads of the connection while the handler goes on
			// (net/http's HTTP/1 server also does so itself at the body's
			// end; other servers need not).
			_ = rc.SetReadDeadline(time.Time{})
		}
	}

	data := buf.Bytes()
	start := skipSpace(data, 0)
	if start == len(data) {
		return &Error{Status: http.StatusBadRequest, Code: errcode.InvalidJSON, Detail: "a JSON body is required",
			cause: &SyntaxError{Offset: int64(start), Reason: reasonEnd}}
	}
	if err := Validate(data, opts.MaxDepth); err != nil {
		return invalidJSON(err, opts.MaxDepth)
	}
	if data[start] != '{' && !opts.AnyValue {
		return &Error{Status: http.StatusBadRequest, Code: errcode.InvalidJSON, Detail: "the body must be a JSON object",
			cause: &SyntaxError{Offset: int64(start), Reason: "the top-level value is not an object"}}
	}
	if err := json.Unmarshal(data, dst); err != nil {
		return decodeFailure(err)
	}
	return nil
}

// RejectBody refuses a body on requests that take none (GET, DELETE): it
// returns 400 unexpected_body when Content-Length is positive or, for a body
// of unknown length, when the body holds at least one byte or cannot be
// read to its (empty) end: a chunked body that sends nothing until the
// read deadline (the server's: see Guard) or is malformed. Otherwise it
// returns nil. It reads at most one byte.
func RejectBody(r *http.Request) *Error {
	if r.ContentLength > 0 {
		return unexpectedBody(nil)
	}
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil
	}
	var b [1]byte
	n, err := io.ReadFull(r.Body, b[:])
	switch {
	case n > 0:
		return unexpectedBody(nil)
	case err != nil && err != io.EOF:
		// Taking a read that failed for "no body" would let a request
		// that announced a body and sent none through.
		return unexpectedBody(err)
	}
	return nil
}

// unexpectedBody is the 400 unexpected_body error; err, when not nil, is
// the read failure behind it.
func unexpectedBody(err error) *Error {
	cause := ErrUnexpectedBody
	if err != nil {
		cause = fmt.Errorf("%w: %w", ErrUnexpectedBody, err)
	}
	return &Error{Status: http.StatusBadRequest, Code: errcode.UnexpectedBody,
		Detail: "this request takes no body; send it without one", cause: cause}
}

// checkContentHeaders accepts only uncompressed application/json in UTF-8.
func checkContentHeaders(h http.Header) *Error {
	for _, v := range h.Values("Content-Encoding") {
		for part := range strings.SplitSeq(v, ",") {
			if p := strings.TrimSpace(part); p != "" && !strings.EqualFold(p, "identity") {
				return unsupported("compressed bodies are not accepted; send the body without Content-Encoding")
			}
		}
	}
	const wantType = "the body must be sent with Content-Type: application/json"
	cts := h.Values("Content-Type")
	if len(cts) != 1 {
		return unsupported(wantType)
	}
	if strings.EqualFold(cts[0], "application/json") {
		return nil
	}
	mt, params, err := mime.ParseMediaType(cts[0])
	if err != nil || mt != "application/json" {
		return unsupported(wantType)
	}
	for k, v := range params {
		if k != "charset" {
			return unsupported("the only Content-Type parameter accepted is charset=utf-8")
		}
		if !strings.EqualFold(v, "utf-8") {
			return unsupported("the only charset accepted is utf-8")
		}
	}
	return nil
}

func unsupported(detail string) *Error {
	return &Error{Status: http.StatusUnsupportedMediaType, Code: errcode.UnsupportedContentType, Detail: detail, cause: ErrUnsupportedContentType}
}

func tooLarge(err *http.MaxBytesError) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Code: errcode.BodyTooLarge,
		Detail: fmt.Sprintf("the body is larger than the limit of %d bytes", err.Limit), cause: err}
}

// readFailure maps an error reading the body.
func readFailure(err error) *Error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge(mbe)
	}
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &Error{Status: http.StatusRequestTimeout, Code: errcode.BodyTimeout, Detail: "the body was not received in time", cause: err}
	}
	// The caller went away or sent a malformed chunked body; the answer
	// will most likely not be read.
	return &Error{Status: http.StatusBadRequest, Code: errcode.InvalidJSON, Detail: "the body could not be read to its end", cause: err}
}

// invalidJSON maps an error of Validate.
func invalidJSON(err error, maxDepth int) *Error {
	e := &Error{Status: http.StatusBadRequest, Code: errcode.InvalidJSON, cause: err}
	var se *SyntaxError
	switch {
	case errors.Is(err, ErrTooDeep):
		e.Detail = fmt.Sprintf("the body nests arrays and objects deeper than %d levels", maxDepth)
	case errors.As(err, &se):
		e.Detail = fmt.Sprintf("the body is not valid JSON: %s at byte %d", se.Reason, se.Offset)
	default:
		e.Detail = "the body is not valid JSON"
	}
	return e
}

// decodeFailure maps an error of json.Unmarshal on a valid document.
func decodeFailure(err error) *Error {
	var te *json.UnmarshalTypeError
	var ie *json.InvalidUnmarshalError
	switch {
	case errors.As(err, &te):
		// te.Field is built by encoding/json from the destination's JSON
		// field names, never from the caller's keys; te.Value describes the
		// caller's value and is not used.
		// te.Type is the Go type of the destination: what the field
		// wants is said from it.
		e := &Error{Status: http.StatusBadRequest, Code: errcode.InvalidField, cause: err,
			Detail: "a field has a value of the wrong type"}
		if te.Field != "" {
			e.Fields = []FieldError{{Path: te.Field, Code: errcode.FieldCodeWrongType}}
			if s := Shape(te.Type); s != "" {
				e.Detail += ": " + te.Field + " wants " + s
			}
		} else {
			e.Detail = "the body does not have the expected shape"
			if s := Shape(te.Type); s != "" {
				e.Detail += ": it wants " + s
			}
		}
		return e
	case errors.As(err, &ie):
		return &Error{Status: http.StatusInternalServerError, Code: errcode.InternalError, Detail: "the relay failed to decode the request", cause: err}
	default:
		// A field's own UnmarshalJSON refused its value; its message may
		// quote the value, so it is not shown.
		return &Error{Status: http.StatusBadRequest, Code: errcode.InvalidField, Detail: "a field has an invalid value", cause: err}
	}
}
