package httpapi_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/relay/httpapi"
)

// marker is put in every refused body: no response may repeat it.
const marker = "ZZMARKER"

type orderArgs struct {
	Action       string   `json:"action"`
	Quantity     int      `json:"quantity"`
	LimitPrice   *float64 `json:"limitPrice,omitempty"`
	SmartOptions struct {
		X int `json:"x"`
	} `json:"smartOptions"`
	Legs []struct {
		Qty int `json:"qty"`
	} `json:"legs"`
	Tags    map[string]int `json:"tags"`
	Expires time.Time      `json:"expires"`
}

// readRequest is one request to ReadJSON.
type readRequest struct {
	contentType     []string // nil: application/json; empty: none
	contentEncoding string
	body            string
	chunked         bool // hide the length, as a chunked body does
}

func (rr readRequest) build() *http.Request {
	var body io.Reader = strings.NewReader(rr.body)
	if rr.chunked {
		body = struct{ io.Reader }{body}
	}
	r := httptest.NewRequest(http.MethodPost, "/v1/api/accounts/Sim101/orders/place", body)
	if rr.chunked {
		r.ContentLength = -1
	}
	ct := rr.contentType
	if ct == nil {
		ct = []string{"application/json"}
	}
	for _, v := range ct {
		r.Header.Add("Content-Type", v)
	}
	if rr.contentEncoding != "" {
		r.Header.Set("Content-Encoding", rr.contentEncoding)
	}
	return r
}

// validOfSize returns a JSON object of exactly n bytes holding the marker.
func validOfSize(n int) string {
	prefix := `{"action":"` + marker
	suffix := `"}`
	return prefix + strings.Repeat("a", n-len(prefix)-len(suffix)) + suffix
}

func TestReadJSON(t *testing.T) {
	atLimit := `{"action":"Buy","quantity":2,"smartOptions":{"x":3},"pad":"` + strings.Repeat(" ", 64) + `"}`
	tests := []struct {
		name       string
		req        readRequest
		opts       httpapi.ReadOptions
		wantStatus int // 0: success
		wantCode   string
		wantDetail string // checked when set
		wantFields []httpapi.FieldError
		wantCause  error // checked with errors.Is when set
	}{
		{name: "ok", req: readRequest{body: `{"action":"Buy","quantity":2,"smartOptions":{"x":3},"unknown":[1]}`}},
		{name: "ok charset any case", req: readRequest{contentType: []string{"Application/JSON; Charset=UTF-8"}, body: `{"action":"Buy","quantity":2,"smartOptions":{"x":3}}`}},
		{name: "ok identity encoding", req: readRequest{contentEncoding: "identity", body: `{"action":"Buy","quantity":2,"smartOptions":{"x":3}}`}},
		{name: "ok chunked", req: readRequest{chunked: true, body: `{"action":"Buy","quantity":2,"smartOptions":{"x":3}}`}},
		{name: "ok exactly at the size limit", req: readRequest{body: atLimit}, opts: httpapi.ReadOptions{MaxBytes: int64(len(atLimit))}},
		{name: "ok chunked exactly at the size limit", req: readRequest{chunked: true, body: atLimit}, opts: httpapi.ReadOptions{MaxBytes: int64(len(atLimit))}},

		{name: "no content type", req: readRequest{contentType: []string{}, body: `{"a":"` + marker + `"}`},
			wantStatus: 415, wantCode: "unsupported_content_type", wantCause: httpapi.ErrUnsupportedContentType},
		{name: "text/plain", req: readRequest{contentType: []string{"text/plain"}, body: `{"a":"` + marker + `"}`},
			wantStatus: 415, wantCode: "unsupported_content_type", wantCause: httpapi.ErrUnsupportedContentType},
		{name: "latin1 charset", req: readRequest{contentType: []string{"application/json; charset=latin1"}, body: `{"a":"` + marker + `"}`},
			wantStatus: 415, wantCode: "unsupported_content_type", wantDetail: "the only charset accepted is utf-8"},
		{name: "other parameter", req: readRequest{contentType: []string{"application/json; " + strings.ToLower(marker) + "=1"}, body: `{}`},
			wantStatus: 415, wantCode: "unsupported_content_type"},
		{name: "malformed content type", req: readRequest{contentType: []string{"application/json; charset"}, body: `{}`},
			wantStatus: 415, wantCode: "unsupported_content_type"},
		{name: "json suffix type", req: readRequest{contentType: []string{"application/vnd.api+json"}, body: `{}`},
			wantStatus: 415, wantCode: "unsupported_content_type"},
		{name: "two content types", req: readRequest{contentType: []string{"application/json", "application/json"}, body: `{}`},
			wantStatus: 415, wantCode: "unsupported_content_type"},
		{name: "gzip", req: readRequest{contentEncoding: "gzip", body: `{"a":"` + marker + `"}`},
			wantStatus: 415, wantCode: "unsupported_content_type", wantCause: httpapi.ErrUnsupportedContentType},
		{name: "identity then gzip", req: readRequest{contentEncoding: "identity, gzip", body: `{}`},
			wantStatus: 415, wantCode: "unsupported_content_type"},

		{name: "65 KiB", req: readRequest{body: validOfSize(65 << 10)},
			wantStatus: 413, wantCode: "body_too_large", wantDetail: "the body is larger than the limit of 65536 bytes"},
		{name: "65 KiB chunked", req: readRequest{chunked: true, body: validOfSize(65 << 10)},
			wantStatus: 413, wantCode: "body_too_large"},
		{name: "one byte over a set limit", req: readRequest{body: validOfSize(101)}, opts: httpapi.ReadOptions{MaxBytes: 100},
			wantStatus: 413, wantCode: "body_too_large", wantDetail: "the body is larger than the limit of 100 bytes"},

		{name: "empty", req: readRequest{body: ``},
			wantStatus: 400, wantCode: "invalid_json", wantDetail: "a JSON body is required", wantCause: httpapi.ErrInvalidJSON},
		{name: "empty chunked", req: readRequest{chunked: true, body: ``},
			wantStatus: 400, wantCode: "invalid_json", wantDetail: "a JSON body is required"},
		{name: "whitespace only", req: readRequest{body: " \r\n\t"},
			wantStatus: 400, wantCode: "invalid_json", wantDetail: "a JSON body is required"},
		{name: "array", req: readRequest{body: `["` + marker + `"]`},
			wantStatus: 400, wantCode: "invalid_json", wantDetail: "the body must be a JSON object"},
		{name: "null", req: readRequest{body: `null`},
			wantStatus: 400, wantCode: "invalid_json", wantDetail: "the body must be a JSON object"},
		{name: "string", req: readRequest{body: ` "` + marker + `" `},
			wantStatus: 400, wantCode: "invalid_json", wantDetail: "the body must be a JSON object"},
		{name: "duplicate key", req: readRequest{body: `{"action":"Buy","action":"` + marker + `"}`},
			wantStatus: 400, wantCode: "invalid_json", wantCause: httpapi.ErrDuplicateKey,
			wantDetail: "the body is not valid JSON: duplicate object key at byte 16"},
		{name: "duplicate key nested", req: readRequest{body: `{"smartOptions":{"x":1,"` + marker + `":2,"\u005a` + marker[1:] + `":3}}`},
			wantStatus: 400, wantCode: "invalid_json", wantCause: httpapi.ErrDuplicateKey},
		{name: "NaN", req: readRequest{body: `{"quantity":NaN,"a":"` + marker + `"}`},
			wantStatus: 400, wantCode: "invalid_json", wantDetail: "the body is not valid JSON: NaN and Infinity are not JSON numbers at byte 12"},
		{name: "trailing data", req: readRequest{body: `{"action":"Buy"}` + marker},
			wantStatus: 400, wantCode: "invalid_json", wantDetail: "the body is not valid JSON: data after the top-level value at byte 16"},
		{name: "two objects", req: readRequest{body: `{} {"a":"` + marker + `"}`},
			wantStatus: 400, wantCode: "invalid_json"},
		{name: "invalid utf8", req: readRequest{body: "{\"action\":\"" + marker + "\xff\"}"},
			wantStatus: 400, wantCode: "invalid_json", wantDetail: "the body is not valid JSON: invalid UTF-8 at byte 19"},
		{name: "lone surrogate", req: readRequest{body: `{"action":"` + marker + `\ud800"}`},
			wantStatus: 400, wantCode: "invalid_json"},
		{name: "too deep", req: readRequest{body: `{"a":` + strings.Repeat("[", 32) + strings.Repeat("]", 32) + `}`},
			wantStatus: 400, wantCode: "invalid_json", wantCause: httpapi.ErrTooDeep,
			wantDetail: "the body nests arrays and objects deeper than 32 levels"},
		{name: "deep within a set limit", req: readRequest{body: `{"a":[[[]]]}`}, opts: httpapi.ReadOptions{MaxDepth: 3},
			wantStatus: 400, wantCode: "invalid_json", wantCause: httpapi.ErrTooDeep},
		{name: "truncated", req: readRequest{body: `{"action":"` + marker},
			wantStatus: 400, wantCode: "invalid_json"},

		{name: "wrong type", req: readRequest{body: `{"quantity":"` + marker + `"}`},
			wantStatus: 400, wantCode: "invalid_field", wantDetail: "a field has a value of the wrong type: quantity wants a whole number", wantFields: []httpapi.FieldError{{Path: "quantity", Code: "wrong_type"}}},
		{name: "wrong type nested", req: readRequest{body: `{"smartOptions":{"x":"` + marker + `"}}`},
			wantStatus: 400, wantCode: "invalid_field", wantFields: []httpapi.FieldError{{Path: "smartOptions.x", Code: "wrong_type"}}},
		{name: "wrong type in array", req: readRequest{body: `{"legs":[{"qty":1},{"qty":"` + marker + `"}]}`},
			wantStatus: 400, wantCode: "invalid_field", wantDetail: "a field has a value of the wrong type: legs.qty wants a whole number", wantFields: []httpapi.FieldError{{Path: "legs.qty", Code: "wrong_type"}}},
		{name: "wrong type under a caller's map key", req: readRequest{body: `{"tags":{"` + marker + `":"x"}}`},
			wantStatus: 400, wantCode: "invalid_field", wantDetail: "a field has a value of the wrong type: tags wants a whole number", wantFields: []httpapi.FieldError{{Path: "tags", Code: "wrong_type"}}},
		{name: "a list for a string", req: readRequest{body: `{"action":["` + marker + `"]}`},
			wantStatus: 400, wantCode: "invalid_field", wantDetail: "a field has a value of the wrong type: action wants a string",
			wantFields: []httpapi.FieldError{{Path: "action", Code: "wrong_type"}}},
		{name: "a string for a list of objects", req: readRequest{body: `{"legs":"` + marker + `"}`},
			wantStatus: 400, wantCode: "invalid_field", wantDetail: "a field has a value of the wrong type: legs wants a list of {qty} objects",
			wantFields: []httpapi.FieldError{{Path: "legs", Code: "wrong_type"}}},
		{name: "a number for an object", req: readRequest{body: `{"smartOptions":5}`},
			wantStatus: 400, wantCode: "invalid_field", wantDetail: "a field has a value of the wrong type: smartOptions wants a {x} object",
			wantFields: []httpapi.FieldError{{Path: "smartOptions", Code: "wrong_type"}}},
		{name: "number out of range", req: readRequest{body: `{"quantity":1e400}`},
			wantStatus: 400, wantCode: "invalid_field", wantFields: []httpapi.FieldError{{Path: "quantity", Code: "wrong_type"}}},
		{name: "fraction for an integer", req: readRequest{body: `{"quantity":1.5}`},
			wantStatus: 400, wantCode: "invalid_field", wantFields: []httpapi.FieldError{{Path: "quantity", Code: "wrong_type"}}},
		{name: "case-folded key", req: readRequest{body: `{"QUANTITY":"` + marker + `"}`},
			wantStatus: 400, wantCode: "invalid_field", wantFields: []httpapi.FieldError{{Path: "quantity", Code: "wrong_type"}}},
		{name: "field's own unmarshaler refuses", req: readRequest{body: `{"expires":"` + marker + `"}`},
			wantStatus: 400, wantCode: "invalid_field", wantDetail: "a field has an invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dst orderArgs
			rec := httptest.NewRecorder()
			e := httpapi.ReadJSON(rec, tt.req.build(), &dst, tt.opts)
			if tt.wantStatus == 0 {
				require.Nil(t, e)
				require.Equal(t, "Buy", dst.Action)
				require.Equal(t, 2, dst.Quantity)
				require.Equal(t, 3, dst.SmartOptions.X)
				return
			}
			require.NotNil(t, e)
			require.Equal(t, tt.wantStatus, e.Status)
			require.Equal(t, tt.wantCode, e.Code)
			require.NotEmpty(t, e.Detail)
			if tt.wantDetail != "" {
				require.Equal(t, tt.wantDetail, e.Detail)
			}
			require.Equal(t, tt.wantFields, e.Fields)
			if tt.wantCause != nil {
				require.ErrorIs(t, e, tt.wantCause)
			}

			httpapi.WriteError(rec, e.Status, *e)
			require.Equal(t, tt.wantStatus, rec.Code)
			body := rec.Body.String()
			require.NotContains(t, body, marker, "responses never echo the caller's bytes")
			require.NotContains(t, strings.ToLower(body), strings.ToLower(marker))
			require.NotContains(t, e.Error(), marker)
			var got struct {
				Success bool   `json:"success"`
				Error   string `json:"error"`
			}
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
			require.Equal(t, tt.wantCode, got.Error)
		})
	}
}

func TestReadJSONCauses(t *testing.T) {
	var dst orderArgs
	e := httpapi.ReadJSON(httptest.NewRecorder(), readRequest{chunked: true, body: validOfSize(65 << 10)}.build(), &dst, httpapi.ReadOptions{})
	var mbe *http.MaxBytesError
	require.ErrorAs(t, e, &mbe)
	require.Equal(t, int64(64<<10), mbe.Limit)

	e = httpapi.ReadJSON(httptest.NewRecorder(), readRequest{body: `{"a":1,"a":2}`}.build(), &dst, httpapi.ReadOptions{})
	var se *httpapi.SyntaxError
	require.ErrorAs(t, e, &se)
	require.Equal(t, int64(7), se.Offset)

	e = httpapi.ReadJSON(httptest.NewRecorder(), readRequest{body: `{"quantity":"x"}`}.build(), &dst, httpapi.ReadOptions{})
	var te *json.UnmarshalTypeError
	require.ErrorAs(t, e, &te)
}

func TestReadJSONBadDestination(t *testing.T) {
	var dst orderArgs
	e := httpapi.ReadJSON(httptest.NewRecorder(), readRequest{body: `{}`}.build(), dst, httpapi.ReadOptions{})
	require.NotNil(t, e)
	require.Equal(t, http.StatusInternalServerError, e.Status)
	require.Equal(t, "internal_error", e.Code)
}

// TestReadJSONBodyTimeout sends half a body over a real connection and
// stalls.
func TestReadJSONBodyTimeout(t *testing.T) {
	causes := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var dst orderArgs
		e := httpapi.ReadJSON(w, r, &dst, httpapi.ReadOptions{Timeout: 100 * time.Millisecond})
		if e == nil {
			httpapi.Write(w, http.StatusOK, nil)
			causes <- nil
			return
		}
		causes <- errors.Unwrap(e)
		httpapi.WriteError(w, e.Status, *e)
	}))
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST / HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"+`{"action":"`+marker)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(testkit.Medium)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	require.Contains(t, string(body), `"error":"body_timeout"`)
	require.NotContains(t, string(body), marker)
	require.ErrorIs(t, <-causes, os.ErrDeadlineExceeded)
}

// TestReadJSONDeadlineLifted checks that the body's read deadline does not
// outlive the read: a handler that runs past it keeps a live context.
func TestReadJSONDeadlineLifted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var dst orderArgs
		if e := httpapi.ReadJSON(w, r, &dst, httpapi.ReadOptions{Timeout: 50 * time.Millisecond}); e != nil {
			httpapi.WriteError(w, e.Status, *e)
			return
		}
		time.Sleep(200 * time.Millisecond)
		if r.Context().Err() != nil {
			httpapi.WriteError(w, http.StatusInternalServerError, httpapi.Error{Code: "context_cancelled"})
			return
		}
		httpapi.Write(w, http.StatusOK, dst.Action)
	}))
	defer srv.Close()

	client := srv.Client()
	for range 2 { // the second request reuses the connection
		resp, err := client.Post(srv.URL, "application/json", strings.NewReader(`{"action":"Buy"}`))
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		require.JSONEq(t, `{"success":true,"data":"Buy"}`, string(body))
	}
	client.CloseIdleConnections()
}

func TestRejectBody(t *testing.T) {
	tests := []struct {
		name    string
		body    io.Reader
		length  int64 // -1: unknown, as with a chunked body
		wantErr bool
	}{
		{name: "no body", body: nil, length: 0},
		{name: "NoBody", body: http.NoBody, length: 0},
		{name: "content length", body: strings.NewReader(`{"a":1}`), length: 7, wantErr: true},
		{name: "content length without bytes", body: strings.NewReader(``), length: 5, wantErr: true},
		{name: "chunked with bytes", body: strings.NewReader(`x`), length: -1, wantErr: true},
		{name: "chunked empty", body: strings.NewReader(``), length: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/v1/api/accounts", nil)
			if tt.body != nil {
				r.Body = io.NopCloser(tt.body)
			}
			r.ContentLength = tt.length
			e := httpapi.RejectBody(r)
			if !tt.wantErr {
				require.Nil(t, e)
				return
			}
			require.NotNil(t, e)
			require.Equal(t, http.StatusBadRequest, e.Status)
			require.Equal(t, "unexpected_body", e.Code)
			require.ErrorIs(t, e, httpapi.ErrUnexpectedBody)
		})
	}
}

// A body of unknown length that sends nothing until the read deadline is
// not taken for no body: it was announced, so it is unexpected.
func TestRejectBodyTimeout(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/v1/api/accounts", nil)
	r.Body = io.NopCloser(iotest.ErrReader(os.ErrDeadlineExceeded))
	r.ContentLength = -1
	e := httpapi.RejectBody(r)
	require.NotNil(t, e)
	require.Equal(t, http.StatusBadRequest, e.Status)
	require.Equal(t, "unexpected_body", e.Code)
	require.ErrorIs(t, e, httpapi.ErrUnexpectedBody)
	require.ErrorIs(t, e, os.ErrDeadlineExceeded)
}

// With AnyValue every valid JSON value is accepted at the top level;
// what is not JSON is still invalid_json.
func TestReadJSONAnyValue(t *testing.T) {
	t.Parallel()
	for body, ok := range map[string]bool{`[1,2]`: true, `null`: true, ` "s" `: true, `{"a":1}`: true, `[1,]`: false, `{"a":1,"a":2}`: false} {
		var raw json.RawMessage
		e := httpapi.ReadJSON(httptest.NewRecorder(), readRequest{body: body}.build(), &raw, httpapi.ReadOptions{AnyValue: true})
		if ok {
			require.Nil(t, e, body)
			require.JSONEq(t, body, string(raw))
		} else {
			require.NotNil(t, e, body)
			require.Equal(t, "invalid_json", e.Code, body)
		}
	}
}
