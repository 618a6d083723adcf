package tradecall

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/store"
)

// IdempotencyStore keeps the outcomes of writes by idempotency key;
// *store.SQLite implements it.
type IdempotencyStore interface {
	ClaimIdempotent(ctx context.Context, rec store.Idempotent, staleBefore, expiredBefore time.Time) (store.Idempotent, bool, error)
	FinishIdempotent(ctx context.Context, rec store.Idempotent) error
}

// ValidKey reports whether k may be an idempotency key: 1 to 255 visible
// ASCII characters.
func ValidKey(k string) bool {
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

// ---- Keyed writes: one rule for every door ----

// KeyedWrites runs writes that carry an idempotency key, for the HTTP
// routes (package api) and the WebSocket form of RPC (package stream) alike, so that a
// key means the same on either door:
//
//   - The key space is one per user and family of routes (Namespace):
//     "key:<Idempotency-Key or idempotencyKey>" or "order:<orderId>",
//     whichever door spelt it.
//   - The first request claims the key in the store, calls the agent under
//     request id "idem:"+key, and records the Outcome durably before the
//     caller hears it. A repeat within IdempotencyTTL gets that Outcome
//     (Replayed) and runs nothing.
//   - The request is fingerprinted by function and canonical typed
//     arguments, never by route or transport: the same write sent over
//     HTTP and over the socket is the same request. Another request under
//     the same key is 422 idempotency_key_reused; a repeat while the first
//     runs is 409 request_in_progress, with retryAfter 1 while it runs in
//     this process, else the seconds until its record goes stale
//     (StaleAfter: a relay killed mid-call leaves it running), when a
//     repeat takes it over.
//   - An outcome the relay could not learn (outcome_unknown,
//     addon_disconnected, the agent's request_in_progress, the caller gone,
//     the relay shutting down under the call, a relay failure) is recorded
//     as unknown, with a context the caller's end does not cancel: a retry
//     runs again under the same request id, and the agent, which remembers
//     outcomes by request id, answers with the first one. A call cut short
//     by a shutdown (its context ended with httpapi.ErrShuttingDown) is
//     answered 503 outcome_unknown: its caller is still there.
//
// Each door renders the Outcome itself, in the caller's response profile.
type KeyedWrites struct {
	store   IdempotencyStore
	caller  Caller
	timeout time.Duration
	now     func() time.Time
	log     *zap.Logger
	// prefix is "<Namespace>:", or empty.
	prefix string
}

// KeyedOptions configure KeyedWrites.
type KeyedOptions struct {
	// Store keeps the outcomes. Required.
	Store IdempotencyStore
	// Caller reaches the agents. Required.
	Caller Caller
	// CallTimeout bounds the agent's answer. Default 30 s. A record left
	// running longer than CallTimeout plus 30 s is taken over by a retry,
	// so doors sharing a store should share the timeout.
	CallTimeout time.Duration
	// Now is the clock of the records; nil means time.Now.
	Now    func() time.Time
	Logger *zap.Logger
	// Namespace keeps the keys of one family of routes apart from
	// another's in the one store: the stored key and the request id of
	// a keyed write carry it ("tv:key:<key>", request id
	// "idem:tv:key:<key>"), so the same Idempotency-Key or orderId sent
	// to two families runs two writes. Empty is the desktop family's
	// key space, whose keys and request ids are those of before
	// namespaces ("key:<key>", "idem:key:<key>"), so its stored records
	// stay valid. 1 to 16 lowercase ASCII letters and digits.
	Namespace string
}

// NewKeyedWrites returns the runner of keyed writes.
func NewKeyedWrites(o KeyedOptions) (*KeyedWrites, error) {
	if o.Store == nil || o.Caller == nil {
		return nil, errors.New("tradecall: KeyedOptions.Store and KeyedOptions.Caller are required")
	}
	if o.Namespace != "" && !validNamespace(o.Namespace) {
		return nil, errors.New("tradecall: KeyedOptions.Namespace must be 1 to 16 lowercase ASCII letters and digits")
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	k := &KeyedWrites{store: o.Store, caller: o.Caller, timeout: o.CallTimeout, now: o.Now, log: o.Logger.Named("idempotency")}
	if o.Namespace != "" {
		k.prefix = o.Namespace + ":"
	}
	return k, nil
}

// validNamespace reports whether ns is 1 to 16 lowercase ASCII letters and
// digits.
func validNamespace(ns string) bool {
	if ns == "" || len(ns) > 16 {
		return false
	}
	for i := 0; i < len(ns); i++ {
		if c := ns[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Outcome is what a keyed write came to, independent of the door it came
// in by. Exactly one of three holds: Gone (nobody to answer), Err != nil
// (a failure, with the HTTP status the HTTP API answers in Err.Status),
// or a success: Fn ran and the agent answered Result, its raw record, for
// the door to render in the caller's response profile.
type Outcome struct {
	Fn     string
	Result json.RawMessage
	Err    *httpapi.Error
	// Replayed is true when the outcome is a recorded one, answered again
	// without running anything.
	Replayed bool
	// Gone is true when the caller's context ended before the outcome was
	// known: there is nobody to answer.
	Gone bool
	// Ref names the run of a claimed key for the activity log
	// (Activity.Record): the same for every run of one claim (a rerun of
	// an unknown outcome keeps it), another once the key expired and was
	// claimed afresh. "" when nothing ran: a replay, or a request refused
	// before the call (the key reused or still running, the store
	// failing).
	Ref string
}

// Run runs fn with args under key for userID, or answers with the recorded
// outcome of the same request. key is "key:…" or "order:…" as the doors
// spell it (see SocketCall.Key); args are the canonical typed arguments the
// agent receives. ctx is the caller's: when it ends the call is abandoned
// and its outcome recorded as unknown.
func (k *KeyedWrites) Run(ctx context.Context, userID, fn, key string, args json.RawMessage) Outcome {
	key = k.prefix + key
	now := k.now()
	rec := store.Idempotent{UserID: userID, Key: key, Fingerprint: fingerprint(fn, args), CreatedAt: now}
	// A record left running longer than a call can last belongs to a relay
	// that went away mid-call.
	stale := now.Add(-k.StaleAfter())
	expired := now.Add(-IdempotencyTTL)
	got, claimed, err := k.store.ClaimIdempotent(ctx, rec, stale, expired)
	if err != nil {
		if stopping(ctx) {
			// Nothing was claimed, so nothing was sent.
			return failed(http.StatusServiceUnavailable, errcode.StorageUnavailable,
				"the relay is shutting down; nothing was sent; retry shortly", 1)
		}
		if ctx.Err() != nil {
			return Outcome{Gone: true}
		}
		k.log.Error("claiming idempotency key", zap.String("user", userID), zap.Error(err))
		return failed(http.StatusServiceUnavailable, errcode.StorageUnavailable,
			"the relay cannot record the request right now; nothing was sent; retry shortly", 2)
	}
	if !claimed {
		switch {
		case got.Fingerprint != rec.Fingerprint:
			return failed(http.StatusUnprocessableEntity, errcode.IdempotencyKeyReused,
				"this idempotency key or orderId was already used for a different request in the last 24 hours", 0)
		case got.State == store.IdemDone:
			o, err := decodeRecord(got)
			if err != nil {
				// Never run the write again: it ran.
				k.log.Error("reading a recorded write outcome", zap.String("user", userID), zap.String("fn", fn), zap.Error(err))
				o = failed(http.StatusInternalServerError, errcode.InternalError, "the relay cannot read the recorded outcome of this request", 0)
			}
			o.Replayed = true
			return o
		default:
			return k.inProgress(userID, key, got, now)
		}
	}

	ref := outcomeRef(key, got.CreatedAt)
	o := k.call(ctx, &rec, userID, fn, key, args)
	o.Ref = ref
	return o
}

// StaleAfter is how long a record may stay running before a repeat takes
// it over: the call's timeout plus 30 s (60 s by default). A record that
// old belongs to a relay that stopped mid-call (killed, crashed): its
// outcome is unknown, and the repeat runs the write again under the same
// request id, which the agent answers from its memory.
func (k *KeyedWrites) StaleAfter() time.Duration { return k.timeout + 30*time.Second }

// inProgress answers a repeat of a keyed write whose record got is
// running: 409 request_in_progress, with retryAfter the seconds until the
// repeat can be resolved. While the write runs in this relay process, it
// ends within its call's timeout, usually at once: 1. Otherwise it runs on
// another relay node, or its relay stopped mid-call and the record waits
// to go stale: the seconds until it does (rounded up, at least 1), when a
// repeat takes it over.
func (k *KeyedWrites) inProgress(userID, key string, got store.Idempotent, now time.Time) Outcome {
	retry := 1
	if _, here := runningHere.Load(runningKey{userID, key}); !here {
		left := got.UpdatedAt.Add(k.StaleAfter()).Sub(now)
		retry = max(1, int((left+time.Second-1)/time.Second))
	}
	return failed(http.StatusConflict, errcode.RequestInProgress,
		"a request with this idempotency key or orderId is still running, or its relay stopped mid-call; retry after retryAfter seconds", retry)
}

// runningHere holds the keyed writes this process is calling now, across
// every door and KeyedWrites (they share the store's key space), so that
// a repeat of one is told to retry at once rather than when a stopped
// relay's record would go stale.
var runningHere sync.Map // runningKey → struct{}

type runningKey struct{ user, key string }

// call runs a claimed write and records its outcome (rec, claimed).
func (k *KeyedWrites) call(ctx context.Context, rec *store.Idempotent, userID, fn, key string, args json.RawMessage) Outcome {
	rk := runningKey{userID, key}
	runningHere.Store(rk, struct{}{})
	defer runningHere.Delete(rk)
	cctx, cancel := context.WithTimeout(ctx, k.timeout)
	result, err := k.caller.Call(cctx, userID, fn, "idem:"+key, args)
	cancel()
	var o Outcome
	rec.State = store.IdemDone
	if err == nil {
		if cerr := CheckWriteResult(fn, result); cerr != nil {
			k.log.Error("agent answered a write with a malformed result; not recorded as the answer",
				zap.String("user", userID), zap.String("fn", fn), zap.Error(cerr))
			err = cerr
		}
	}
	switch {
	case err == nil:
		o = Outcome{Fn: fn, Result: result}
		rec.Status = http.StatusOK
	case errors.Is(err, ErrMalformedResult):
		// The write may have run: a retry under the same request id asks
		// the agent again, which answers from its memory.
		o = Outcome{Err: malformedResult(true)}
		rec.State = store.IdemUnknown
	default:
		// A keyed call is a write: an interrupted one has an unknown
		// outcome.
		if e, ok := CallError(err, true); ok {
			o = Outcome{Err: &e}
			rec.Status = e.Status
			if unknownOutcome(e.Code) || passedUnavailable(err) {
				rec.State = store.IdemUnknown
			}
			break
		}
		rec.State = store.IdemUnknown
		if stopping(ctx) {
			// The relay stops under the call, which may have run; the
			// caller is still there.
			k.log.Warn("keyed write cut short by the shutdown; recorded as unknown", zap.String("user", userID), zap.String("fn", fn))
			o = failed(http.StatusServiceUnavailable, errcode.OutcomeUnknown,
				"the relay shut down before the add-on confirmed the outcome; retry with the same Idempotency-Key or orderId to learn it", 0)
			break
		}
		if ctx.Err() != nil {
			// The caller went away; the call may have run.
			k.log.Debug("caller left before the answer", zap.String("user", userID), zap.String("fn", fn))
			o = Outcome{Gone: true}
			break
		}
		k.log.Error("call failed", zap.String("user", userID), zap.String("fn", fn), zap.Error(err))
		o = failed(http.StatusInternalServerError, errcode.InternalError, "the relay failed to complete the call", 0)
	}
	if rec.State == store.IdemDone {
		body, err := encodeRecord(o)
		if err != nil {
			// Only a result that is not JSON fails to encode; no door
			// could have rendered it either.
			k.log.Error("agent answered with a result that is not JSON", zap.String("user", userID), zap.String("fn", fn), zap.Error(err))
			o = failed(http.StatusInternalServerError, errcode.InternalError, "the add-on answered with a result the relay cannot read", 0)
			body, _ = encodeRecord(o)
			rec.Status = http.StatusInternalServerError
		}
		rec.Body = body
	} else {
		rec.Status, rec.Body = 0, nil
	}
	rec.UpdatedAt = k.now()
	// The outcome is recorded before the caller hears it, so that a retry
	// after this answer gets the same one.
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer fcancel()
	if err := k.store.FinishIdempotent(fctx, *rec); err != nil {
		// The agent still remembers the outcome by request id, so a
		// retry learns it; the record stays running until it is stale.
		k.log.Error("recording write outcome", zap.String("user", userID), zap.String("fn", fn), zap.Error(err))
	}
	return o
}

// stopping reports a context the server ended because it is shutting down
// (httpapi.ErrShuttingDown) rather than because the caller left: the
// caller still waits for an answer.
func stopping(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), httpapi.ErrShuttingDown)
}

// unknownOutcome reports the errors that say nothing about whether the
// write ran: the relay's own outcome_unknown and addon_disconnected, and
// the agent's request_in_progress (the first try of the same request id
// still runs there). Recording one of them as the answer would hide the
// true outcome for 24 hours; a retry asks the agent, which answers from
// its memory of request ids.
func unknownOutcome(code string) bool {
	return code == errcode.OutcomeUnknown || code == errcode.AddonDisconnected || code == errcode.RequestInProgress
}

// passedUnavailable reports an *httpapi.Error of the Caller (see
// CallError) that says the write's target is unavailable for now (408 or
// 503: a broker that cannot be reached, a session the broker refused):
// like addon_disconnected, it is recorded as unknown, so that a retry
// runs again under the same request id instead of hearing the refusal
// for 24 hours.
func passedUnavailable(err error) bool {
	var he *httpapi.Error
	return errors.As(err, &he) && (he.Status == http.StatusRequestTimeout || he.Status == http.StatusServiceUnavailable)
}

func failed(status int, code, detail string, retryAfter int) Outcome {
	return Outcome{Err: &httpapi.Error{Status: status, Code: code, Detail: detail, RetryAfter: retryAfter}}
}

// fingerprint names a request by what it asks the agent to do, whichever
// door it came in by: "v2:" and the hex SHA-256 of the function and its
// arguments in canonical JSON (sorted keys, no insignificant space).
func fingerprint(fn string, args json.RawMessage) string {
	sum := sha256.New()
	sum.Write([]byte(fn))
	sum.Write([]byte{0})
	sum.Write(canonicalJSON(args))
	return fingerprintPrefix + hex.EncodeToString(sum.Sum(nil))
}

const fingerprintPrefix = "v2:"

// canonicalJSON re-encodes b with sorted keys and without space; numbers
// keep their text. b is returned as is when it is not JSON.
func canonicalJSON(b json.RawMessage) []byte {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// outcomeVersion is the "v" of every record.
const outcomeVersion = 2

// outcomeRecord is an Outcome as the store keeps it (store.Idempotent's
// Body; Status holds the HTTP status as well, for operators): a success is
// {"v":2,"fn":…,"result":<the agent's record>}, a failure
// {"v":2,"error":{"status":…,"code":…,"detail":…,"fields":…,"retryAfter":…}}.
type outcomeRecord struct {
	V      int             `json:"v"`
	Fn     string          `json:"fn,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *recordedError  `json:"error,omitempty"`
}

type recordedError struct {
	Status     int                  `json:"status"`
	Code       string               `json:"code"`
	Detail     string               `json:"detail,omitempty"`
	Fields     []httpapi.FieldError `json:"fields,omitempty"`
	RetryAfter int                  `json:"retryAfter,omitempty"`
}

func encodeRecord(o Outcome) ([]byte, error) {
	r := outcomeRecord{V: outcomeVersion, Fn: o.Fn, Result: o.Result}
	if e := o.Err; e != nil {
		r = outcomeRecord{V: outcomeVersion, Error: &recordedError{Status: e.Status, Code: e.Code, Detail: e.Detail, Fields: e.Fields, RetryAfter: e.RetryAfter}}
	}
	return httpapi.Marshal(r)
}

// decodeRecord reads a done record.
func decodeRecord(rec store.Idempotent) (Outcome, error) {
	var r outcomeRecord
	if json.Unmarshal(rec.Body, &r) != nil || r.V != outcomeVersion {
		return Outcome{}, errors.New("tradecall: an idempotency record of an unknown format")
	}
	switch {
	case r.Error != nil:
		e := r.Error
		return Outcome{Err: &httpapi.Error{Status: e.Status, Code: e.Code, Detail: e.Detail, Fields: e.Fields, RetryAfter: e.RetryAfter}}, nil
	case r.Fn == "":
		return Outcome{}, errors.New("tradecall: an idempotency record without a function")
	}
	return Outcome{Fn: r.Fn, Result: r.Result}, nil
}
