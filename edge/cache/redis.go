package cache

// The shared store on Redis (rueidis), for replicas that should answer
// from one cache. Its failure mode is the spec's degraded state: a lookup
// that cannot reach Redis is an Error (served as a miss; the request goes
// upstream and never fails for it), and the limiter's circuit
// (limiter/circuit) stops lookups from waiting on a dead server and
// reattaches when Redis answers again. The cache has no local fallback to
// count into, so it just misses meanwhile.
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

	"gw/limiter/circuit"
)

// RedisConfig configures the shared store.
type RedisConfig struct {
	Addr               string
	Username, Password string
	DB                 int
	// KeyPrefix is put before every key. Default "gw:cache:".
	KeyPrefix string
	// Timing bounds each lookup and write and sets the circuit
	// (limiter/circuit).
	circuit.Timing
	// QueueSize bounds the writes waiting to be sent. Default 1024.
	QueueSize int
}

func (c RedisConfig) withDefaults() RedisConfig {
	if c.KeyPrefix == "" {
		c.KeyPrefix = "gw:cache:"
	}
	c.Timing = c.Timing.WithDefaults()
	if c.QueueSize <= 0 {
		c.QueueSize = 1024
	}
	return c
}

// Redis states, for metrics and logs.
const (
	RedisConnected   = int32(circuit.Connected) // lookups go to Redis
	RedisDegraded    = int32(circuit.Degraded)  // the last call failed; the next ones still try
	RedisCircuitOpen = int32(circuit.Open)      // Redis is skipped until a probe succeeds
)

// Redis is the shared store. Close it when done.
type Redis struct {
	cfg     RedisConfig
	circuit *circuit.Circuit[rueidis.Client]
	dropped atomic.Int64

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
	r := &Redis{cfg: cfg.withDefaults(), stop: make(chan struct{})}
	r.writes = make(chan write, r.cfg.QueueSize)
	r.circuit = circuit.New(circuit.Config{
		Timing:     r.cfg.Timing,
		Component:  "cache",
		Where:      r.cfg.Addr,
		Meanwhile:  "redis cache policies miss until it answers",
		Reattached: "redis cache policies answer again",
	}, log, circuit.Store[rueidis.Client]{
		Dial:  r.dial,
		Ping:  r.ping,
		Close: func(c rueidis.Client) { c.Close() },
	}, time.Now().UnixNano())
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

// ping is the probe's test of a fresh client.
func (r *Redis) ping(c rueidis.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	defer cancel()
	return c.Do(ctx, c.B().Ping().Build()).Error()
}

// State returns RedisConnected, RedisDegraded or RedisCircuitOpen.
func (r *Redis) State() int32 { return int32(r.circuit.State()) }

// Dropped returns how many writes a full queue dropped.
func (r *Redis) Dropped() int64 { return r.dropped.Load() }

func (r *Redis) usable() rueidis.Client {
	c, _ := r.circuit.Usable()
	return c
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

func (r *Redis) success() { r.circuit.Success() }

func (r *Redis) failure(err error) { r.circuit.Failure(time.Now().UnixNano(), err) }

func (r *Redis) loop() {
	defer r.wg.Done()
	tick := time.NewTicker(min(r.cfg.ProbeInterval/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-tick.C:
			r.circuit.Poll(now.UnixNano())
		}
	}
}

// Close stops the background goroutines and the client; queued writes are
// dropped.
func (r *Redis) Close() {
	r.once.Do(func() {
		close(r.stop)
		r.wg.Wait()
		r.circuit.Close()
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
