package budget

import "github.com/redis/go-redis/v9"

// The Redis scripts. Each runs atomically on the server, so one admission
// is one round trip that no other admission interleaves with. Times are
// nanoseconds since the Unix epoch, written in decimal; Lua numbers are
// float64, exact for a time's seconds and its nanoseconds apart but not
// for the whole, so times are split in two and only differences (at most
// MaxSharedWindow) are computed whole.
//
// ARGV[1] of every script is the clock: "" for Redis TIME, the clock of
// every node; or a time, from RedisOptions.Now, which tests alone set so
// that memory and Redis run on one clock. Keys written on a test clock
// outlive their budget by an hour, since Redis expires them on its own.

// scriptPrelude holds the functions the scripts share.
const scriptPrelude = `
local function split(v)
  local n = #v
  if n <= 9 then return 0, tonumber(v) end
  return tonumber(string.sub(v, 1, n - 9)), tonumber(string.sub(v, n - 8))
end

local function quot(a, b)
  if a < 0 then return -quot(-a, b) end
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end

local function clock(arg)
  if arg == '' then
    local t = redis.call('TIME')
    return tonumber(t[1]), tonumber(t[2]) * 1000, 0
  end
  local s, ns = split(arg)
  return s, ns, 3600000
end

local function ahead(key, s, ns)
  local v = redis.call('GET', key)
  if not v then return 0 end
  local ts, tns = split(v)
  local d = (ts - s) * 1e9 + (tns - ns)
  if d < 0 then return 0 end
  return d
end
`

// admitScript takes a lease, when asked, then charges budgets in order.
//
// KEYS: the lease set when ARGV[2] is "1", then one key per budget.
// ARGV[2]: "1" when a lease is asked, then ARGV[3] its id, ARGV[4] the
// most leases held at once, ARGV[5] its TTL in ms; "0" otherwise. Then,
// per budget: its interval and window in ns, and the cost.
//
// The lease set is a sorted set of lease ids scored by when each lapses,
// in ms; lapsed ones are pruned first. A budget key holds the budget's
// theoretical arrival time (TAT) and expires when the budget is full
// again.
//
// It returns {0} when the lease is refused, and otherwise 1 followed, for
// each budget tried, by: allowed (1 or 0), remaining, retry after (ns),
// reset (ns). It stops at the first refused budget, which is not charged,
// and then gives the lease back.
var admitScript = redis.NewScript(scriptPrelude + `
local s, ns, slack = clock(ARGV[1])
local first, a = 1, 3
local lease
if ARGV[2] == '1' then
  lease = KEYS[1]
  local nowms = s * 1000 + math.floor(ns / 1000000)
  local ttl = tonumber(ARGV[5])
  redis.call('ZREMRANGEBYSCORE', lease, '-inf', nowms)
  if redis.call('ZCARD', lease) >= tonumber(ARGV[4]) then return {0} end
  redis.call('ZADD', lease, nowms + ttl, ARGV[3])
  if redis.call('PTTL', lease) < ttl + slack then redis.call('PEXPIRE', lease, ttl + slack) end
  first, a = 2, 6
end
local out = {1}
for i = first, #KEYS do
  local interval, window = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  local d = ahead(KEYS[i], s, ns)
  local nxt = d + interval * tonumber(ARGV[a + 2])
  a = a + 3
  if nxt > window then
    if lease then redis.call('ZREM', lease, ARGV[3]) end
    out[#out + 1] = 0
    out[#out + 1] = quot(window - d, interval)
    out[#out + 1] = nxt - window
    out[#out + 1] = d
    return out
  end
  local t = ns + nxt
  redis.call('SET', KEYS[i], string.format('%d%09d', s + math.floor(t / 1e9), t % 1e9), 'PX', math.ceil(nxt / 1e6) + slack)
  out[#out + 1] = 1
  out[#out + 1] = quot(window - nxt, interval)
  out[#out + 1] = 0
  out[#out + 1] = nxt
end
return out
`)

// peekScript reports a budget without charging it.
//
// KEYS[1]: the budget key. ARGV[2], ARGV[3]: its interval and window in
// ns. It returns allowed, remaining, 0, reset (ns).
var peekScript = redis.NewScript(scriptPrelude + `
local s, ns = clock(ARGV[1])
local interval, window = tonumber(ARGV[2]), tonumber(ARGV[3])
local d = ahead(KEYS[1], s, ns)
local ok = 0
if d + interval <= window then ok = 1 end
return {ok, quot(window - d, interval), 0, d}
`)

// leasesScript counts the leases of a set that have not lapsed.
//
// KEYS[1]: the lease set.
var leasesScript = redis.NewScript(scriptPrelude + `
local s, ns = clock(ARGV[1])
return redis.call('ZCOUNT', KEYS[1], '(' .. string.format('%d', s * 1000 + math.floor(ns / 1000000)), '+inf')
`)
