package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"tradebridge/relay/auth"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/store"
)

// Error codes of idempotent writes.
const (
	// CodeIdempotencyKeyReused: the key was used for a different request.
	CodeIdempotencyKeyReused = "idempotency_key_reused"
)

// IdempotencyKeyHeader names a write for exactly-once execution.
const IdempotencyKeyHeader = "Idempotency-Key"

// idempotencyKey returns the write's key: the Idempotency-Key header, or
// the body's orderId on routes that place one order. Empty means none.
func idempotencyKey(r *http.Request, ep *endpoint, args map[string]any) (string, *httpapi.Error) {
	vals := r.Header.Values(IdempotencyKeyHeader)
	switch {
	case len(vals) > 1:
		return "", argsError(CodeInvalidArgument, "send one Idempotency-Key header")
	case len(vals) == 1:
		if !validKey(vals[0]) {
			return "", argsError(CodeInvalidArgument, "the Idempotency-Key header must be 1 to 255 visible ASCII characters")
		}
		return "key:" + vals[0], nil
	}
	if ep.OrderIDKey {
		if id, ok := args["orderId"].(string); ok && id != "" {
			return "order:" + id, nil
		}
	}
	return "", nil
}

func validKey(k string) bool {
	if k == "" || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// idempotentCall runs a write under its key: the first request runs it and
// records its response durably; a repeat gets that response (status and
// body) and runs nothing; a repeat with another body is 422; a repeat while
// the first runs is 409. A write whose outcome the relay could not learn
// (the tunnel dropped after it was sent, the agent was absent) is recorded
// as unknown: its retry runs it again under the same request id, and the
// agent, which remembers outcomes by request id, answers the first outcome
// instead of placing twice.
func (a *API) idempotentCall(w http.ResponseWriter, r *http.Request, p auth.Principal, ep *endpoint, fn, key string, args json.RawMessage) {
	now := a.opts.Now()
	sum := sha256.New()
	sum.Write([]byte(ep.Method + " " + ep.Path + "\x00" + fn + "\x00"))
	sum.Write(args)
	rec := store.Idempotent{UserID: p.UserID, Key: key, Fingerprint: hex.EncodeToString(sum.Sum(nil)), CreatedAt: now}
	// A record left running longer than a call can last belongs to a relay
	// that went away mid-call.
	stale := now.Add(-(a.opts.CallTimeout + 30*time.Second))
	got, claimed, err := a.opts.Idempotency.ClaimIdempotent(r.Context(), rec, stale, now.Add(-IdempotencyTTL))
	if err != nil {
		a.log.Error("claiming idempotency key", zap.String("user", p.UserID), zap.Error(err))
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: CodeStorageUnavailable,
			Detail: "the relay cannot record the request right now; nothing was sent; retry shortly", RetryAfter: 2})
		return
	}
	if !claimed {
		switch {
		case got.Fingerprint != rec.Fingerprint:
			httpapi.WriteError(w, http.StatusUnprocessableEntity, httpapi.Error{Code: CodeIdempotencyKeyReused,
				Detail: "this idempotency key or orderId was already used for a different request in the last 24 hours"})
		case got.State == store.IdemDone:
			replay(w, got)
		default:
			httpapi.WriteError(w, http.StatusConflict, httpapi.Error{Code: CodeRequestInProgress,
				Detail: "a request with this idempotency key or orderId is still running", RetryAfter: 1})
		}
		return
	}

	rw := &recorder{header: make(http.Header)}
	a.call(rw, r, p, fn, "idem:"+key, args, ep.Top)
	rec.UpdatedAt = a.opts.Now()
	rec.State = store.IdemDone
	rec.Status = rw.status
	rec.Body = rw.body.Bytes()
	if rw.status == 0 || rw.unknownOutcome() {
		rec.State, rec.Status, rec.Body = store.IdemUnknown, 0, nil
	}
	// The outcome is recorded before the caller hears it, so that a retry
	// after this answer gets the same one.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	if err := a.opts.Idempotency.FinishIdempotent(ctx, rec); err != nil {
		// The agent still remembers the outcome by request id, so a
		// retry learns it; the record stays running until it is stale.
		a.log.Error("recording write outcome", zap.String("user", p.UserID), zap.String("fn", fn), zap.Error(err))
	}
	rw.copyTo(w)
}

// replay answers with a recorded response.
func replay(w http.ResponseWriter, rec store.Idempotent) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Idempotent-Replayed", "true")
	h.Set("Content-Length", strconv.Itoa(len(rec.Body)))
	w.WriteHeader(rec.Status)
	_, _ = w.Write(rec.Body)
}

// recorder captures a response so that it can be recorded before it is
// sent.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// unknownOutcome reports a response that says nothing about whether the
// write ran: the relay's own 503 outcome_unknown and 408 addon_disconnected.
func (r *recorder) unknownOutcome() bool {
	if r.status != http.StatusServiceUnavailable && r.status != http.StatusRequestTimeout {
		return false
	}
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(r.body.Bytes(), &e)
	return e.Error == CodeOutcomeUnknown || e.Error == CodeAddonDisconnected
}

func (r *recorder) copyTo(w http.ResponseWriter) {
	if r.status == 0 {
		return // the caller went away; nothing was written
	}
	h := w.Header()
	for k, v := range r.header {
		h[k] = v
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body.Bytes())
}
