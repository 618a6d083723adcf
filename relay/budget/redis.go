package budget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.uber.org/zap"
)

// ErrUnavailable reports a Backend that did not answer; the caller decides
// in its own memory.
var ErrUnavailable = errors.New("budget: the backend does not answer")

// Defaults of RedisOptions.
const (
	DefaultRedisPrefix        = "tb:"
	DefaultRedisTimeout       = 250 * time.Millisecond
	DefaultRedisRetryInterval = time.Second
	// redisWarnEvery bounds the warnings of a Redis that does not answer.
	redisWarnEvery = 10 * time.Second
)

// RedisOptions configure a Redis backend.
type RedisOptions struct {
	// URL is the server's, redis://[user:password@]host:port/db (or
	// rediss:// for TLS). Exactly one of URL and Client is required.
	URL string
	// Client, instead of URL, is a client the caller made and closes; it
	// should respect context deadlines (ContextTimeoutEnabled) and not
	// retry commands (MaxRetries -1), or a call may outlast Timeout or
	// run a script twice. One admission's keys span hash slots, so it
	// must not be a Redis Cluster client.
	Client redis.UniversalClient
	// Prefix starts every key the backend writes. Default "tb:".
	Prefix string
	// Timeout bounds each call. Default 250 ms.
	Timeout time.Duration
	// RetryInterval is how long, after a call that failed, calls are
	// decided in memory without asking Redis; the next call then asks
	// again. Default 1 s.
	RetryInterval time.Duration
	// Logger receives a warning when Redis does not answer, at most one
	// each 10 s, and a line when it answers again. Nil means no logging.
	Logger *zap.Logger
	// Now, for tests only, is the clock in nanoseconds (at least 0) sent
	// to the scripts instead of Redis TIME, so that a memory Limiter on
	// the same clock must decide the same.
	Now func() int64
}

// Redis keeps budgets and leases in Redis, so that every relay node
// charges one budget. Budget keys are Prefix + "b:" + policy name + ":" +
// key, holding the key's theoretical arrival time; lease sets are Prefix +
// "l:" + lease key. Each admission is one script run (EVALSHA, loading the
// script when Redis does not know it) on Redis TIME.
//
// When a call fails, Redis returns an error wrapping ErrUnavailable, and
// asks Redis again only after RetryInterval, one call at a time; the
// callers meanwhile decide in their memory. It starts no goroutines.
type Redis struct {
	client  redis.UniversalClient
	own     bool
	prefix  string
	timeout time.Duration
	retry   time.Duration
	now     func() int64
	log     *zap.Logger
	node    string        // starts the lease ids made here
	seq     atomic.Uint64 // numbers them

	down    atomic.Int64 // Unix ns before which Redis is not asked; 0 while it answers
	probing atomic.Bool  // a call is asking Redis after a failure
	warned  atomic.Int64 // Unix ns of the last warning

	closeOnce sync.Once
	closeErr  error
}

var _ Backend = (*Redis)(nil)

// NewRedis returns a Redis backend. It does not connect: a Redis that does
// not answer yet makes the callers decide in memory until it does.
func NewRedis(opts RedisOptions) (*Redis, error) {
	if (opts.URL == "") == (opts.Client == nil) {
		return nil, errors.New("budget: RedisOptions needs exactly one of URL and Client")
	}
	if opts.Timeout < 0 || opts.RetryInterval < 0 {
		return nil, errors.New("budget: RedisOptions durations must not be negative")
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultRedisPrefix
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultRedisTimeout
	}
	if opts.RetryInterval == 0 {
		opts.RetryInterval = DefaultRedisRetryInterval
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	r := &Redis{client: opts.Client, prefix: opts.Prefix, timeout: opts.Timeout, retry: opts.RetryInterval,
		now: opts.Now, log: opts.Logger.Named("budget")}
	if r.client == nil {
		o, err := redis.ParseURL(opts.URL)
		if err != nil {
			// The parser's error may quote the URL, and so its password.
			return nil, errors.New("budget: RedisOptions.URL is not a redis:// or rediss:// URL")
		}
		o.DialTimeout = opts.Timeout
		o.ReadTimeout = opts.Timeout
		o.WriteTimeout = opts.Timeout
		o.PoolTimeout = opts.Timeout
		o.ContextTimeoutEnabled = true
		o.MaxRetries = -1 // a script run twice would charge twice
		o.DialerRetries = 1
		o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		r.client = redis.NewClient(o)
		r.own = true
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	r.node = hex.EncodeToString(b[:])
	return r, nil
}

// Close closes the client NewRedis made from URL (not one passed as
// Client). It is idempotent; later calls fail with ErrUnavailable, and
// their callers decide in memory.
func (r *Redis) Close() error {
	r.closeOnce.Do(func() {
		if r.own {
			r.closeErr = r.client.Close()
		}
	})
	return r.closeErr
}

// Ping reports whether Redis answers, within Timeout.
func (r *Redis) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	err := r.client.Ping(ctx).Err()
	r.end(err)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// Admit implements Backend: one run of the admission script.
func (r *Redis) Admit(ctx context.Context, lease *Lease, charges []Charge, decisions []Decision) (Result, error) {
	if len(decisions) < len(charges) {
		return Result{}, errors.New("budget: Admit needs a decision per charge")
	}
	keys := make([]string, 0, len(charges)+1)
	args := make([]any, 0, 5+3*len(charges))
	args = append(args, r.clock())
	if lease != nil {
		if lease.ID == "" {
			lease.ID = r.node + "-" + strconv.FormatUint(r.seq.Add(1), 36)
		}
		keys = append(keys, r.leaseKey(lease.Key))
		args = append(args, "1", lease.ID, lease.Limit, max(lease.TTL.Milliseconds(), 1))
	} else {
		args = append(args, "0")
	}
	for _, c := range charges {
		keys = append(keys, r.budgetKey(c.Limiter, c.Key))
		args = append(args, c.Limiter.interval, c.Limiter.window, cost(c.Cost))
	}
	v, err := r.run(ctx, admitScript, keys, args)
	if err != nil {
		return Result{}, err
	}
	if len(v) == 1 && v[0] == 0 {
		return Result{LeaseRefused: true, Refused: -1}, nil
	}
	tried := (len(v) - 1) / 4
	if len(v) == 0 || v[0] != 1 || (len(v)-1)%4 != 0 || tried > len(charges) {
		return Result{}, r.malformed()
	}
	res := Result{Refused: -1}
	for i := range tried {
		decisions[i] = decision(v[1+4*i:])
		if !decisions[i].Allowed {
			res.Refused = i
		}
	}
	if res.Refused < 0 && tried != len(charges) || res.Refused >= 0 && res.Refused != tried-1 {
		return Result{}, r.malformed()
	}
	return res, nil
}

// Peek implements Backend.
func (r *Redis) Peek(ctx context.Context, l *Limiter, key string) (Decision, error) {
	v, err := r.run(ctx, peekScript, []string{r.budgetKey(l, key)}, []any{r.clock(), l.interval, l.window})
	if err != nil {
		return Decision{}, err
	}
	if len(v) != 4 {
		return Decision{}, r.malformed()
	}
	return decision(v), nil
}

// Release implements Backend: one ZREM.
func (r *Redis) Release(ctx context.Context, lease *Lease) error {
	if !r.begin() {
		return ErrUnavailable
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
	defer cancel()
	err := r.client.ZRem(ctx, r.leaseKey(lease.Key), lease.ID).Err()
	r.end(err)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// Leases implements Backend.
func (r *Redis) Leases(ctx context.Context, key string) (int, error) {
	if !r.begin() {
		return 0, ErrUnavailable
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
	defer cancel()
	n, err := leasesScript.Run(ctx, r.client, []string{r.leaseKey(key)}, r.clock()).Int()
	r.end(err)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return n, nil
}

func (r *Redis) budgetKey(l *Limiter, key string) string {
	return r.prefix + "b:" + l.policy.Name + ":" + key
}

func (r *Redis) leaseKey(key string) string { return r.prefix + "l:" + key }

// clock is the scripts' ARGV[1].
func (r *Redis) clock() string {
	if r.now == nil {
		return ""
	}
	return strconv.FormatInt(r.now(), 10)
}

// run runs script s within Timeout. The caller's cancellation does not
// cut it short: an admission under way finishes, and its charges stay
// exact.
func (r *Redis) run(ctx context.Context, s *redis.Script, keys []string, args []any) ([]int64, error) {
	if !r.begin() {
		return nil, ErrUnavailable
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
	defer cancel()
	v, err := s.Run(ctx, r.client, keys, args...).Int64Slice()
	r.end(err)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return v, nil
}

// malformed is the error of a script's answer of the wrong shape.
func (r *Redis) malformed() error {
	err := fmt.Errorf("%w: a script answered in an unexpected shape", ErrUnavailable)
	r.end(err)
	return err
}

// begin reports whether to ask Redis: always while it answers; after a
// failure, once RetryInterval has passed, one call at a time.
func (r *Redis) begin() bool {
	until := r.down.Load()
	if until == 0 {
		return true
	}
	if time.Now().UnixNano() < until {
		return false
	}
	return r.probing.CompareAndSwap(false, true)
}

// end records a call's outcome.
func (r *Redis) end(err error) {
	if err == nil {
		if r.down.Swap(0) != 0 {
			r.probing.Store(false)
			r.log.Info("redis answers again; budgets and leases are shared again")
		}
		return
	}
	now := time.Now().UnixNano()
	r.down.Store(now + int64(r.retry))
	r.probing.Store(false)
	last := r.warned.Load()
	if now-last >= int64(redisWarnEvery) && r.warned.CompareAndSwap(last, now) {
		r.log.Warn("redis does not answer; this node enforces budgets and in-flight limits alone until it does", zap.Error(err))
	}
}

// decision reads a script's allowed, remaining, retry after and reset.
func decision(v []int64) Decision {
	return Decision{Allowed: v[0] == 1, Remaining: int(v[1]), RetryAfter: time.Duration(v[2]), Reset: time.Duration(v[3])}
}
