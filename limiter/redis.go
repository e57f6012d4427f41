package limiter

// The shared store on Redis (rueidis). One script call per Reserve checks
// and charges every window of the request atomically, so a request refused
// by one window leaves no trace in the others, across all replicas.
// Concurrent calls from many goroutines share a connection and are
// pipelined by rueidis (auto-pipelining): one write and one read syscall
// carry a batch of requests under load.

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// reserveLua: KEYS[i] is a window counter; ARGV[3i-2] its limit, ARGV[3i-1]
// the cost, ARGV[3i] the TTL in ms for a new counter. Returns
// {refused (0/1), count_1, ..., count_n}: counts after the charge, or the
// counts that refused it (nothing is charged then). need = max(cost, 1): an
// exhausted window refuses even a zero estimate.
const reserveLua = `
local n = #KEYS
local out = {0}
for i = 1, n do
  local c = tonumber(redis.call('GET', KEYS[i])) or 0
  local need = tonumber(ARGV[3*i-1])
  if need < 1 then need = 1 end
  if c + need > tonumber(ARGV[3*i-2]) then out[1] = 1 end
  out[i+1] = c
end
if out[1] == 0 then
  for i = 1, n do
    local cost = tonumber(ARGV[3*i-1])
    if cost > 0 then
      local v = redis.call('INCRBY', KEYS[i], cost)
      if v == cost then redis.call('PEXPIRE', KEYS[i], ARGV[3*i]) end
      out[i+1] = v
    end
  end
end
return out
`

// settleLua: KEYS[i] is a token window counter; ARGV[2i-1] the delta,
// ARGV[2i] the TTL in ms for a new counter. Extra tokens are added (creating
// the counter if it expired or Redis lost it); refunds apply to an existing
// counter only and clamp at zero.
const settleLua = `
for i = 1, #KEYS do
  local d = tonumber(ARGV[2*i-1])
  if d > 0 then
    local v = redis.call('INCRBY', KEYS[i], d)
    if v == d then redis.call('PEXPIRE', KEYS[i], ARGV[2*i]) end
  elseif d < 0 then
    local c = tonumber(redis.call('GET', KEYS[i]))
    if c and c > 0 then
      if c + d < 0 then d = -c end
      redis.call('INCRBY', KEYS[i], d)
    end
  end
end
return 0
`

var (
	reserveScript = rueidis.NewLuaScript(reserveLua)
	settleScript  = rueidis.NewLuaScript(settleLua)
)

// keyGrace keeps a counter past its window end, so a replica whose clock
// lags a little still charges the same counter.
const keyGrace = 5 * time.Second

var errBadReply = errors.New("limiter: unexpected reply from the shared store")

// backend is the shared store seen by the circuit: Redis, or a fake in
// tests. reserve fills the counts and windows of r's entries.
type backend interface {
	reserve(r *Reservation, nowNs int64) (allowed bool, err error)
	settle(r *Reservation, delta, nowNs int64) error
	ping() error
	close()
}

type redisStore struct {
	client  rueidis.Client
	prefix  string
	timeout time.Duration
	cluster bool // keys of one call must share a slot
}

// errCrossSlot: a reservation whose keys fall in different Redis Cluster
// slots cannot be one atomic script call. Not a store failure: the request
// is counted as the store's fallback says, the circuit is untouched.
var errCrossSlot = errors.New("limiter: a Redis Cluster reservation must keep its keys in one slot")

func dialRedis(c *RedisConfig) (backend, error) {
	opt := rueidis.ClientOption{
		InitAddress: []string{c.Addr},
		Username:    c.Username,
		Password:    c.Password,
		SelectDB:    c.DB,
		ClientName:  "gw-limiter",
		TLSConfig:   c.TLS,
		Dialer:      net.Dialer{Timeout: c.DialTimeout},
		// Detects an unresponsive server on a busy connection; callers are
		// bounded by Timeout anyway.
		ConnWriteTimeout: 3 * time.Second,
		// Counters need no client-side cache (and RESP2 servers lack it).
		DisableCache: true,
		// A failed call falls back to local counting; a silent retry would
		// only add latency.
		DisableRetry: true,
		// Multi-key scripts need one node: a standalone Redis or a
		// Sentinel-managed primary. Cluster is asked for explicitly.
		ForceSingleClient: true,
	}
	if len(c.ClusterNodes) > 0 {
		// The cluster client learns the slot map from the first seed that
		// answers CLUSTER SLOTS and routes each script call by its keys'
		// slot, following MOVED/ASK within Timeout.
		opt.InitAddress = append([]string(nil), c.ClusterNodes...)
		opt.ForceSingleClient = false
		opt.SelectDB = 0
		opt.ClusterOption.ShardsRefreshInterval = time.Minute
	}
	client, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, err
	}
	return &redisStore{client: client, prefix: c.KeyPrefix, timeout: c.Timeout, cluster: len(c.ClusterNodes) > 0}, nil
}

// scratch holds the keys and arguments of one script call. The strings
// point into buf (no copies); a scratch goes back to the pool only after a
// call that completed, since a timed-out command may still be written.
type scratch struct {
	buf        []byte
	keys, args []string
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{buf: make([]byte, 0, 1024), keys: make([]string, 0, 8), args: make([]string, 0, 24)}
}}

func (s *scratch) reset() {
	s.buf, s.keys, s.args = s.buf[:0], s.keys[:0], s.args[:0]
}

// str returns buf[start:] as a string without copying.
func (s *scratch) str(start int) string { return rueidis.BinaryString(s.buf[start:]) }

// key appends "<prefix><subject>/<kind>/<window start>" ("rpw<seconds>"
// for RPW, so windows of different lengths never share a counter).
func (s *scratch) key(prefix string, e *entry, win int64) {
	start := len(s.buf)
	s.buf = append(s.buf, prefix...)
	s.buf = e.sub.AppendKey(s.buf)
	s.buf = append(s.buf, '/')
	s.buf = append(s.buf, kindNames[e.kind]...)
	if e.kind == RPW {
		s.buf = strconv.AppendInt(s.buf, e.secs, 10)
	}
	s.buf = append(s.buf, '/')
	s.buf = strconv.AppendInt(s.buf, win*e.secs, 10)
	s.keys = append(s.keys, s.str(start))
}

// oneSlot reports whether every key of s hashes to one cluster slot.
func (s *scratch) oneSlot() bool {
	for i := 1; i < len(s.keys); i++ {
		if keySlot(s.keys[i]) != keySlot(s.keys[0]) {
			return false
		}
	}
	return true
}

func (s *scratch) arg(v int64) {
	start := len(s.buf)
	s.buf = strconv.AppendInt(s.buf, v, 10)
	s.args = append(s.args, s.str(start))
}

// ttlMs is the lifetime of a counter of window win (length secs) created
// at nowNs: to the window's end plus keyGrace.
func ttlMs(secs, win, nowNs int64) int64 {
	return max((windowEnd(secs, win)-nowNs+int64(keyGrace))/int64(time.Millisecond), 1)
}

func (rs *redisStore) reserve(r *Reservation, nowNs int64) (bool, error) {
	sc := scratchPool.Get().(*scratch)
	sc.reset()
	n := r.Len()
	for i := 0; i < n; i++ {
		e := r.at(i)
		e.win = windowOf(e.secs, nowNs)
		sc.key(rs.prefix, e, e.win)
		sc.arg(e.max)
		sc.arg(e.cost)
		sc.arg(ttlMs(e.secs, e.win, nowNs))
	}
	if rs.cluster && n > 1 && !sc.oneSlot() {
		scratchPool.Put(sc)
		return false, errCrossSlot
	}
	ctx, cancel := context.WithTimeout(context.Background(), rs.timeout)
	res := reserveScript.Exec(ctx, rs.client, sc.keys, sc.args)
	cancel()
	arr, err := res.ToArray()
	if err != nil {
		return false, err
	}
	scratchPool.Put(sc)
	if len(arr) != n+1 {
		return false, errBadReply
	}
	refused, err := arr[0].AsInt64()
	if err != nil {
		return false, err
	}
	for i := 0; i < n; i++ {
		c, err := arr[i+1].AsInt64()
		if err != nil {
			return false, err
		}
		r.at(i).count = c
	}
	return refused == 0, nil
}

func (rs *redisStore) settle(r *Reservation, delta, nowNs int64) error {
	sc := scratchPool.Get().(*scratch)
	sc.reset()
	for i, n := 0, r.Len(); i < n; i++ {
		e := r.at(i)
		if !e.kind.Tokens() {
			continue
		}
		win := e.win
		if cur := windowOf(e.secs, nowNs); cur > win {
			if delta < 0 {
				continue // the reserved window is over: nothing to refund
			}
			win = cur
		}
		sc.key(rs.prefix, e, win)
		sc.arg(delta)
		sc.arg(ttlMs(e.secs, win, nowNs))
	}
	if len(sc.keys) == 0 {
		scratchPool.Put(sc)
		return nil
	}
	if rs.cluster && !sc.oneSlot() {
		scratchPool.Put(sc)
		return errCrossSlot
	}
	ctx, cancel := context.WithTimeout(context.Background(), rs.timeout)
	err := settleScript.Exec(ctx, rs.client, sc.keys, sc.args).Error()
	cancel()
	if err == nil {
		scratchPool.Put(sc)
	}
	return err
}

func (rs *redisStore) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), rs.timeout)
	defer cancel()
	// On a cluster PING goes to one node: slots still unreachable fail
	// their calls and open the circuit again.
	return rs.client.Do(ctx, rs.client.B().Ping().Build()).Error()
}

func (rs *redisStore) close() { rs.client.Close() }
