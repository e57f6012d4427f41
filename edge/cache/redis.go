package cache

// The shared store on Redis (rueidis), for replicas that should answer
// from one cache. Its failure mode is the spec's degraded state: a lookup
// that cannot reach Redis is an Error (served as a miss; the request goes
// upstream and never fails for it), FailureThreshold consecutive failures
// open the circuit so lookups stop waiting on a dead server, a background
// probe every ProbeInterval reattaches when Redis answers, and a warning is
// repeated every WarnInterval while it does not. There is no permanent
// switch. This is the limiter's circuit (limiter/shared.go) for a cache:
// the cache has no local fallback to count into, so it just misses.
//
// Writes leave the request path: Set queues the entry (bounded; a full
// queue drops it) and writer goroutines send it.
//
// Value layout: check (8 bytes, little-endian) | status (2) | content-type
// length (1) | content type | body. Keys are "<prefix><namespace>:<32 hex>".

import (
	"context"
	"encoding/binary"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// RedisConfig configures the shared store.
type RedisConfig struct {
	Addr               string
	Username, Password string
	DB                 int
	// KeyPrefix is put before every key. Default "gw:cache:".
	KeyPrefix string
	// Timeout bounds each lookup and write. Default 250 ms.
	Timeout time.Duration
	// DialTimeout bounds a connection attempt. Default 2 s.
	DialTimeout time.Duration
	// FailureThreshold consecutive failures open the circuit. Default 5.
	FailureThreshold int
	// ProbeInterval: how long the circuit stays open before a probe
	// decides recovery. Default 30 s.
	ProbeInterval time.Duration
	// WarnInterval repeats the warning while not connected. Default 5 min.
	WarnInterval time.Duration
	// QueueSize bounds the writes waiting to be sent. Default 1024.
	QueueSize int
}

func (c RedisConfig) withDefaults() RedisConfig {
	if c.KeyPrefix == "" {
		c.KeyPrefix = "gw:cache:"
	}
	c.Timeout = durationOr(c.Timeout, 250*time.Millisecond)
	c.DialTimeout = durationOr(c.DialTimeout, 2*time.Second)
	if c.FailureThreshold <= 0 {
		c.FailureThreshold = 5
	}
	c.ProbeInterval = durationOr(c.ProbeInterval, 30*time.Second)
	c.WarnInterval = durationOr(c.WarnInterval, 5*time.Minute)
	if c.QueueSize <= 0 {
		c.QueueSize = 1024
	}
	return c
}

func durationOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Redis states, for metrics and logs.
const (
	RedisConnected   int32 = iota // lookups go to Redis
	RedisDegraded                 // the last call failed; the next ones still try
	RedisCircuitOpen              // Redis is skipped until a probe succeeds
)

type clientRef struct{ rueidis.Client }

// Redis is the shared store. Close it when done.
type Redis struct {
	cfg RedisConfig
	log *slog.Logger

	client   atomic.Pointer[clientRef] // nil until a dial succeeds
	state    atomic.Int32
	fails    atomic.Int32
	openedAt atomic.Int64
	lastWarn atomic.Int64
	dropped  atomic.Int64

	writes chan write
	stop   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

type write struct {
	key []byte
	val []byte
	ttl time.Duration
	// A semantic write also pushes item onto buckets (semredis.go).
	item    []byte
	buckets [lshTables][]byte
}

// NewRedis dials Redis once; an unreachable server is not an error: the
// store starts with its circuit open and reattaches in the background.
func NewRedis(cfg RedisConfig, log *slog.Logger) *Redis {
	if log == nil {
		log = slog.Default()
	}
	r := &Redis{cfg: cfg.withDefaults(), log: log, stop: make(chan struct{})}
	r.writes = make(chan write, r.cfg.QueueSize)
	now := time.Now().UnixNano()
	if c, err := r.dial(); err == nil {
		r.client.Store(&clientRef{c})
	} else {
		r.state.Store(RedisCircuitOpen)
		r.openedAt.Store(now)
		r.lastWarn.Store(now)
		r.log.Warn("cache: shared store unreachable at startup; redis cache policies miss until it answers",
			"addr", r.cfg.Addr, "error", err.Error(), "retry_in", r.cfg.ProbeInterval.String())
	}
	r.wg.Add(3)
	go r.loop()
	go r.writer()
	go r.writer()
	return r
}

func (r *Redis) dial() (rueidis.Client, error) {
	return rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{r.cfg.Addr},
		Username:          r.cfg.Username,
		Password:          r.cfg.Password,
		SelectDB:          r.cfg.DB,
		ClientName:        "gw-cache",
		Dialer:            net.Dialer{Timeout: r.cfg.DialTimeout},
		ConnWriteTimeout:  3 * time.Second,
		DisableCache:      true,
		DisableRetry:      true, // a failed lookup is a miss; a retry only adds latency
		ForceSingleClient: true,
	})
}

// State returns RedisConnected, RedisDegraded or RedisCircuitOpen.
func (r *Redis) State() int32 { return r.state.Load() }

// Dropped returns how many writes a full queue dropped.
func (r *Redis) Dropped() int64 { return r.dropped.Load() }

func (r *Redis) usable() rueidis.Client {
	if r.state.Load() == RedisCircuitOpen {
		return nil
	}
	if ref := r.client.Load(); ref != nil {
		return ref.Client
	}
	return nil
}

func (r *Redis) key(k *Key) string {
	b := make([]byte, 0, len(r.cfg.KeyPrefix)+len(k.Namespace)+33)
	b = append(b, r.cfg.KeyPrefix...)
	b = append(b, k.Namespace...)
	b = append(b, ':')
	b = k.AppendHex(b)
	return rueidis.BinaryString(b)
}

// Get looks k up in Redis.
func (r *Redis) Get(k *Key) (Entry, Status) {
	c := r.usable()
	if c == nil {
		return Entry{}, Error
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	val, err := c.Do(ctx, c.B().Get().Key(r.key(k)).Build()).AsBytes()
	cancel()
	if rueidis.IsRedisNil(err) {
		r.success()
		return Entry{}, Miss
	}
	if err != nil {
		r.failure(err)
		return Entry{}, Error
	}
	r.success()
	e, check, ok := ParseValue(val)
	if !ok || check != k.Check {
		return Entry{}, Miss // a foreign or colliding value is no answer
	}
	return e, Hit
}

// Set queues e for writing under k; it never waits on Redis.
func (r *Redis) Set(k *Key, e Entry, ttl time.Duration) {
	if ttl <= 0 || r.usable() == nil {
		return
	}
	w := write{key: []byte(r.key(k)), val: AppendValue(nil, k.Check, e), ttl: ttl}
	select {
	case r.writes <- w:
	default:
		r.dropped.Add(1)
	}
}

func (r *Redis) writer() {
	defer r.wg.Done()
	for {
		select {
		case <-r.stop:
			return
		case w := <-r.writes:
			c := r.usable()
			if c == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
			var err error
			if w.item == nil {
				err = c.Do(ctx, c.B().Set().Key(rueidis.BinaryString(w.key)).Value(rueidis.BinaryString(w.val)).
					Px(w.ttl).Build()).Error()
			} else {
				for _, res := range c.DoMulti(ctx, r.semCommands(c, &w)...) {
					if err = res.Error(); err != nil {
						break
					}
				}
			}
			cancel()
			if err != nil {
				r.failure(err)
			} else {
				r.success()
			}
		}
	}
}

func (r *Redis) success() {
	if r.fails.Load() != 0 {
		r.fails.Store(0)
	}
	if r.state.Load() == RedisDegraded {
		r.state.CompareAndSwap(RedisDegraded, RedisConnected)
	}
}

func (r *Redis) failure(err error) {
	n := r.fails.Add(1)
	r.state.CompareAndSwap(RedisConnected, RedisDegraded)
	if n < int32(r.cfg.FailureThreshold) {
		return
	}
	if r.state.Swap(RedisCircuitOpen) == RedisCircuitOpen {
		return
	}
	now := time.Now().UnixNano()
	r.openedAt.Store(now)
	r.lastWarn.Store(now)
	r.log.Warn("cache: shared store unreachable; circuit open, redis cache policies miss until it answers",
		"addr", r.cfg.Addr, "error", err.Error(), "consecutive_failures", n, "retry_in", r.cfg.ProbeInterval.String())
}

func (r *Redis) loop() {
	defer r.wg.Done()
	tick := time.NewTicker(min(r.cfg.ProbeInterval/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-tick.C:
			r.poll(now.UnixNano())
		}
	}
}

// poll probes when the circuit has been open for ProbeInterval and repeats
// the warning while not connected.
func (r *Redis) poll(now int64) {
	if r.state.Load() == RedisCircuitOpen && now-r.openedAt.Load() >= int64(r.cfg.ProbeInterval) {
		if err := r.probe(); err != nil {
			r.openedAt.Store(now)
		} else {
			r.fails.Store(0)
			r.state.Store(RedisConnected)
			r.log.Info("cache: shared store reattached; redis cache policies answer again", "addr", r.cfg.Addr)
			return
		}
	}
	if r.state.Load() != RedisConnected && now-r.lastWarn.Load() >= int64(r.cfg.WarnInterval) {
		r.lastWarn.Store(now)
		r.log.Warn("cache: shared store not connected; redis cache policies miss", "addr", r.cfg.Addr)
	}
}

// probe dials a fresh client and PINGs it; on success it replaces the old
// one. A PING on the old client would test one of its pipelined
// connections: the others, broken by the outage but idle, would fail a
// lookup each after reattaching (or fail the PING, and the reattachment
// would wait another interval). With the circuit open nothing uses the old
// client but a call that loaded it just before, which fails as a miss.
func (r *Redis) probe() error {
	c, err := r.dial()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	defer cancel()
	if err := c.Do(ctx, c.B().Ping().Build()).Error(); err != nil {
		c.Close()
		return err
	}
	if old := r.client.Swap(&clientRef{c}); old != nil {
		old.Close()
	}
	return nil
}

// Close stops the background goroutines and the client; queued writes are
// dropped.
func (r *Redis) Close() {
	r.once.Do(func() {
		close(r.stop)
		r.wg.Wait()
		if ref := r.client.Load(); ref != nil {
			ref.Close()
		}
	})
}

// AppendValue appends the Redis value of e with check hash check.
func AppendValue(dst []byte, check uint64, e Entry) []byte {
	ct := e.ContentType
	if len(ct) > 255 {
		ct = ct[:0] // no real content type is this long; the caller gets JSON's
	}
	dst = binary.LittleEndian.AppendUint64(dst, check)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(e.StatusCode))
	dst = append(dst, byte(len(ct)))
	dst = append(dst, ct...)
	return append(dst, e.Body...)
}

// ParseValue reads a Redis value written by AppendValue; ok is false for
// anything else (a foreign or truncated value, a non-2xx status). The
// entry's slices point into v.
func ParseValue(v []byte) (Entry, uint64, bool) {
	if len(v) < 11 {
		return Entry{}, 0, false
	}
	check := binary.LittleEndian.Uint64(v)
	st := int(binary.LittleEndian.Uint16(v[8:]))
	n := int(v[10])
	if len(v) < 11+n || st < 200 || st > 299 {
		return Entry{}, 0, false
	}
	return Entry{StatusCode: st, ContentType: v[11 : 11+n : 11+n], Body: v[11+n:]}, check, true
}
