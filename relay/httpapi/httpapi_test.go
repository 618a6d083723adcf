package httpapi_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// requireJSONHeaders checks the headers every response carries.
func requireJSONHeaders(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
	require.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	require.Equal(t, strconv.Itoa(rec.Body.Len()), rec.Header().Get("Content-Length"))
	require.True(t, json.Valid(rec.Body.Bytes()), "body %q", rec.Body.String())
}

func TestWrite(t *testing.T) {
	tests := []struct {
		name   string
		status int
		data   any
		top    map[string]any
		want   string
	}{
		{"map", http.StatusOK, map[string]string{"status": "ok"}, nil, `{"success":true,"data":{"status":"ok"}}`},
		{"nil data", http.StatusOK, nil, nil, `{"success":true,"data":null}`},
		{"raw message", http.StatusCreated, json.RawMessage(`{"orderId":"a1","order":{"quantity":2}}`), nil,
			`{"success":true,"data":{"orderId":"a1","order":{"quantity":2}}}`},
		{"slice", http.StatusOK, []int{1, 2}, nil, `{"success":true,"data":[1,2]}`},
		{"top fields sorted", http.StatusOK, json.RawMessage(`{"orderId":"a1"}`), map[string]any{"orderId": "a1", "b": 2},
			`{"success":true,"data":{"orderId":"a1"},"b":2,"orderId":"a1"}`},
		{"top cannot override success or data", http.StatusOK, 1, map[string]any{"success": false, "data": 2, "x": nil},
			`{"success":true,"data":1,"x":null}`},
		{"top key escaped", http.StatusOK, 1, map[string]any{`a"b`: 1}, `{"success":true,"data":1,"a\"b":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			if tt.top == nil {
				httpapi.Write(rec, tt.status, tt.data)
			} else {
				httpapi.WriteWithTop(rec, tt.status, tt.data, tt.top)
			}
			require.Equal(t, tt.status, rec.Code)
			requireJSONHeaders(t, rec)
			require.JSONEq(t, tt.want, rec.Body.String())
			require.True(t, strings.HasSuffix(rec.Body.String(), "}\n"))
			require.Empty(t, rec.Header().Get("Retry-After"))
		})
	}
}

func TestWriteEncodeFailure(t *testing.T) {
	tests := []struct {
		name  string
		write func(http.ResponseWriter)
	}{
		{"data", func(w http.ResponseWriter) { httpapi.Write(w, http.StatusOK, map[string]any{"c": make(chan int)}) }},
		{"top", func(w http.ResponseWriter) {
			httpapi.WriteWithTop(w, http.StatusOK, 1, map[string]any{"f": func() {}})
		}},
		{"raw message", func(w http.ResponseWriter) { httpapi.Write(w, http.StatusOK, json.RawMessage(`{"a":`)) }},
		{"error limit", func(w http.ResponseWriter) {
			httpapi.WriteError(w, http.StatusBadRequest, httpapi.Error{Code: "invalid_field", RetryAfter: 3,
				Fields: []httpapi.FieldError{{Path: "x", Code: "too_long", Limit: make(chan int)}}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tt.write(rec)
			require.Equal(t, http.StatusInternalServerError, rec.Code)
			requireJSONHeaders(t, rec)
			var body struct {
				Success bool   `json:"success"`
				Error   string `json:"error"`
			}
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
			require.False(t, body.Success)
			require.Equal(t, errcode.InternalError, body.Error)
			require.Empty(t, rec.Header().Get("Retry-After"))
		})
	}
}

func TestWriteError(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		err        httpapi.Error
		wantStatus int
		want       string
		wantHeader map[string]string
	}{
		{
			name: "code only", status: http.StatusForbidden, err: httpapi.Error{Code: "plan_required"},
			wantStatus: http.StatusForbidden, want: `{"success":false,"error":"plan_required"}`,
		},
		{
			name: "everything", status: http.StatusTooManyRequests,
			err: httpapi.Error{Code: "rate_limited", Detail: "slow down", RetryAfter: 7, Policy: "orders-per-minute",
				RequestID: "req-1", ETag: `"v3"`,
				Fields: []httpapi.FieldError{{Path: "quantity", Code: "too_large", Limit: 100}, {Path: "tag", Code: "pattern", Pattern: "^[a-z]+$"}}},
			wantStatus: http.StatusTooManyRequests,
			want: `{"success":false,"error":"rate_limited","detail":"slow down","retryAfter":7,"policy":"orders-per-minute",
				"meta":{"requestId":"req-1","etag":"\"v3\""},
				"fields":[{"path":"quantity","code":"too_large","limit":100},{"path":"tag","code":"pattern","pattern":"^[a-z]+$"}]}`,
			wantHeader: map[string]string{"Retry-After": "7", "ETag": `"v3"`},
		},
		{
			name: "status from error", err: httpapi.Error{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large"},
			wantStatus: http.StatusRequestEntityTooLarge, want: `{"success":false,"error":"body_too_large"}`,
		},
		{
			name: "argument wins over error status", status: http.StatusConflict, err: httpapi.Error{Status: http.StatusBadRequest, Code: "x"},
			wantStatus: http.StatusConflict, want: `{"success":false,"error":"x"}`,
		},
		{
			name: "no status no code", err: httpapi.Error{}, wantStatus: http.StatusInternalServerError,
			want: `{"success":false,"error":"internal_error"}`,
		},
		{
			name: "negative retry after omitted", status: http.StatusServiceUnavailable, err: httpapi.Error{Code: "x", RetryAfter: -1},
			wantStatus: http.StatusServiceUnavailable, want: `{"success":false,"error":"x"}`,
			wantHeader: map[string]string{"Retry-After": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			httpapi.WriteError(rec, tt.status, tt.err)
			require.Equal(t, tt.wantStatus, rec.Code)
			requireJSONHeaders(t, rec)
			require.JSONEq(t, tt.want, rec.Body.String())
			for k, v := range tt.wantHeader {
				require.Equal(t, v, rec.Header().Get(k), k)
			}
		})
	}
}

func TestNotFoundAndMethodNotAllowed(t *testing.T) {
	rec := httptest.NewRecorder()
	httpapi.NotFound(rec)
	require.Equal(t, http.StatusNotFound, rec.Code)
	requireJSONHeaders(t, rec)
	require.Contains(t, rec.Body.String(), `"error":"not_found"`)

	rec = httptest.NewRecorder()
	httpapi.MethodNotAllowed(rec, http.MethodGet, http.MethodPost)
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	requireJSONHeaders(t, rec)
	require.Equal(t, "GET, POST", rec.Header().Get("Allow"))
	require.Contains(t, rec.Body.String(), `"error":"method_not_allowed"`)
}

func TestErrorIsAnError(t *testing.T) {
	f := func() error {
		return &httpapi.Error{Status: http.StatusConflict, Code: "request_in_progress", Detail: "the same request is running"}
	}
	err := f()
	var e *httpapi.Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, http.StatusConflict, e.Status)
	require.Equal(t, "request_in_progress: the same request is running", err.Error())
	require.Equal(t, "internal_error", (&httpapi.Error{}).Error())
	require.NoError(t, errors.Unwrap(err))
}

// TestPooledBuffersDoNotLeak writes a large response then a small one: the
// second must not carry bytes of the first.
func TestPooledBuffersDoNotLeak(t *testing.T) {
	for range 3 {
		rec := httptest.NewRecorder()
		httpapi.Write(rec, http.StatusOK, strings.Repeat("x", 10000))
		rec = httptest.NewRecorder()
		httpapi.Write(rec, http.StatusOK, "y")
		require.Equal(t, `{"success":true,"data":"y"}`+"\n", rec.Body.String())
	}
}

// discardWriter is a ResponseWriter that keeps nothing, so that
// BenchmarkWrite measures the package and not a recorder.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

func BenchmarkWrite(b *testing.B) {
	result := json.RawMessage(`{"orderId":"a1b2c3d4","order":{"orderId":"a1b2c3d4","account":"Sim101","instrument":"ES 03-26","action":"Buy","orderType":"Limit","quantity":2,"limitPrice":5012.25,"state":"Working","filled":0}}`)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		httpapi.Write(w, http.StatusOK, result)
	}
}
