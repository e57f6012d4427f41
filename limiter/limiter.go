package limiter

import (
	"crypto/tls"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"gw/limiter/circuit"
)

// Clock tells the time. Windows are numbered from Now (unix time), so
// replicas sharing Redis must keep their clocks in sync (NTP).
type Clock interface {
	Now() time.Time
}

// systemClock is the default Clock: wall time derived from the monotonic
// clock since a base that the background loop refreshes every tick (at
// most 1 s), so a step of the wall clock (NTP) is followed within a tick.
// time.Since reads one clock; time.Now reads two (about 20 vs 40 ns on the
// VMs measured; see BenchmarkLocalReserve system-clock vs fixed-clock).
type systemClock struct {
	base atomic.Pointer[clockBase]
}

type clockBase struct {
	wallNs int64     // unix ns at mono
	mono   time.Time // carries the monotonic reading
}

func newSystemClock() *systemClock {
	c := &systemClock{}
	c.rebase()
	return c
}

func (c *systemClock) rebase() {
	t := time.Now()
	c.base.Store(&clockBase{wallNs: t.UnixNano(), mono: t})
}

func (c *systemClock) nowNs() int64 {
	b := c.base.Load()
	return b.wallNs + int64(time.Since(b.mono))
}

func (c *systemClock) Now() time.Time { return time.Unix(0, c.nowNs()) }

// Logger receives the shared store's warnings and recoveries; *slog.Logger
// satisfies it.
type Logger interface {
	Warn(msg string, args ...any)
	Info(msg string, args ...any)
}

// Config configures a Limiter. The zero value is a local-only limiter on
// the system clock logging to slog.Default().
type Config struct {
	Clock  Clock  // nil: the system clock
	Logger Logger // nil: slog.Default()

	// Redis, when set with an Addr, shares window counters between replicas.
	// Concurrency semaphores stay per process in any case.
	Redis *RedisConfig

	// SweepInterval is how often the state of idle subjects is dropped.
	// Default 1 minute.
	SweepInterval time.Duration

	// ConcurrencyRetryAfter is the Retry-After of a Concurrency refusal (a
	// semaphore has no reset time). Default 1 second.
	ConcurrencyRetryAfter time.Duration

	// dial replaces the Redis dialer in tests.
	dial func() (backend, error)
}

// RedisConfig is the shared store. Zero fields take the defaults.
type RedisConfig struct {
	Addr               string
	Username, Password string
	DB                 int

	// ClusterNodes, when set, makes the store a Redis Cluster seeded with
	// these host:port nodes (Addr and DB unused): each script call goes to
	// the primary of its keys' slot. A reservation must keep its keys in
	// one slot (one window does); one spanning slots is counted as the
	// store's fallback says and logged nowhere (see errCrossSlot).
	ClusterNodes []string
	// TLS, when set, dials every node over TLS with this configuration.
	TLS *tls.Config
	// Name labels the store in logs (limit-count's redis_cluster_name).
	Name string

	// NoLocalFallback: when the store cannot be used (a failed call, an
	// open circuit), Reserve counts nothing and returns a Decision with
	// Unavailable set, for the caller to refuse or admit (limit-count's
	// allow_degradation). Default: count locally, per replica.
	NoLocalFallback bool

	// KeyPrefix is put before every counter key. Default "gw:rl:".
	KeyPrefix string

	// Timing bounds each call and sets the circuit (limiter/circuit).
	circuit.Timing
}

func (c RedisConfig) withDefaults() RedisConfig {
	if c.KeyPrefix == "" {
		c.KeyPrefix = "gw:rl:"
	}
	c.Timing = c.Timing.WithDefaults()
	return c
}

// Limiter enforces fixed-window request and token limits and concurrency
// semaphores. It outlives config snapshots: counters are keyed by Subject,
// so a reload that keeps derived IDs keeps the counts. Safe for concurrent
// use.
type Limiter struct {
	clock     Clock
	sys       *systemClock // the default clock, or nil
	local     *local
	shared    *shared // nil: local only
	concRetry time.Duration

	sweepEvery time.Duration
	pollMu     sync.Mutex
	lastSweep  int64

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// New returns a running Limiter. With a shared store it dials once (up to
// DialTimeout); an unreachable store is not an error: the Limiter starts
// degraded, counts per replica and reattaches in the background. Call
// Close to stop the background loop.
func New(cfg Config) *Limiter {
	l := &Limiter{
		clock:      cfg.Clock,
		local:      newLocal(),
		concRetry:  durationOr(cfg.ConcurrencyRetryAfter, time.Second),
		sweepEvery: durationOr(cfg.SweepInterval, time.Minute),
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
	}
	if l.clock == nil {
		l.sys = newSystemClock()
		l.clock = l.sys
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	l.lastSweep = l.now()
	tick := l.sweepEvery
	if cfg.Redis != nil && (cfg.Redis.Addr != "" || len(cfg.Redis.ClusterNodes) > 0 || cfg.dial != nil) {
		rc := cfg.Redis.withDefaults()
		dial := cfg.dial
		if dial == nil {
			dial = func() (backend, error) { return dialRedis(&rc) }
		}
		l.shared = newShared(&rc, log, dial, l.now())
		tick = min(tick, rc.ProbeInterval)
	}
	go l.run(min(max(tick/4, 10*time.Millisecond), time.Second))
	return l
}

// Close stops the background loop and closes the shared store. Calls
// after Close still work, counting locally without sweeping.
func (l *Limiter) Close() {
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		if l.shared != nil {
			l.shared.Close() // leaves the circuit open: no probe dials again
		}
	})
}

// State reports the shared store's state (StateLocal without one).
func (l *Limiter) State() State {
	if l.shared == nil {
		return StateLocal
	}
	return State(l.shared.State()) + StateConnected
}

func (l *Limiter) now() int64 {
	if l.sys != nil {
		return l.sys.nowNs()
	}
	return l.clock.Now().UnixNano()
}

func (l *Limiter) run(tick time.Duration) {
	defer close(l.done)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.poll()
		}
	}
}

// poll does the background work that is due: probe, warning, sweep.
func (l *Limiter) poll() {
	l.pollMu.Lock()
	defer l.pollMu.Unlock()
	if l.sys != nil {
		l.sys.rebase()
	}
	now := l.now()
	if l.shared != nil {
		l.shared.Poll(now)
	}
	if now-l.lastSweep >= int64(l.sweepEvery) {
		l.lastSweep = now
		l.local.sweep(now)
	}
}

// Reserve admits a request against every window of r, all or nothing: it
// charges 1 to each request window and tokens (the estimate) to each token
// window, or charges nothing and returns the refusal. On the shared store
// one script call does this atomically across replicas; if the store fails
// the request is counted locally instead, never refused for it.
//
// Estimate contract: tokens is an upper bound of what the request may
// consume: prompt tokens (an estimate from the body size is fine) plus
// max_tokens / max_completion_tokens, or the model's output cap when the
// request sets neither. With an upper bound a token limit is never
// exceeded; an under-estimate is charged in full by Settle and the window
// may end above its limit, refusing further requests until it resets. A
// window already at its limit refuses even tokens == 0. An estimate above
// the limit is always refused (Decision.Limit < r.Tokens()).
//
// Every admitted reservation must be settled (Settle, with 0 on failures).
// Reserve panics on a reservation already reserved and not Reset.
func (l *Limiter) Reserve(r *Reservation, tokens int64) (d Decision) {
	if r.state != resOpen {
		panic("BUG: limiter: Reserve on a used Reservation; call Reset first")
	}
	r.prepare(tokens)
	if r.n == 0 {
		r.state = resHeld
		d.Allowed = true
		return d
	}
	nowNs := l.now()
	if s := l.shared; s != nil {
		if be := s.usable(); be != nil {
			ok, err := be.reserve(r, nowNs)
			if err == nil {
				s.Success()
				r.shared = true
				r.finish(&d, nowNs, ok)
				return d
			}
			nowNs = l.now()
			if err != errCrossSlot {
				s.Failure(nowNs, err)
			}
			r.prepare(tokens)
		}
		if s.noLocalFallback {
			r.state = resDone
			d.Unavailable = true
			return d
		}
	}
	ok := l.local.reserve(r, nowNs)
	r.finish(&d, nowNs, ok)
	return d
}

// Settle finishes an admitted reservation with the tokens actually used
// (0 when the request failed before using any): token windows are adjusted
// by actual - estimate. A refund applies to the reserved window while it is
// current (once it ended, the refund has no one to serve). Extra tokens of
// an under-estimate go to the reserved window, or to the current window
// once the reserved one ended, so no spent token is lost. Request windows
// are never adjusted: a request counts once admitted.
//
// Settle is idempotent and does nothing on a refused reservation. A
// reservation charged to the shared store is settled there; while its
// circuit is open the adjustment is dropped.
func (l *Limiter) Settle(r *Reservation, actual int64) {
	if r.state != resHeld {
		return
	}
	r.state = resDone
	if actual < 0 {
		actual = 0
	} else if actual > countMax {
		actual = countMax
	}
	delta := actual - r.tokens
	if delta == 0 {
		return
	}
	nowNs := l.now()
	if r.shared {
		s := l.shared
		if be := s.usable(); be != nil {
			if err := be.settle(r, delta, nowNs); err != nil && err != errCrossSlot {
				s.Failure(nowNs, err)
			} else {
				s.Success()
			}
		}
		return
	}
	l.local.settle(r, delta, nowNs)
}

// Acquire takes one of max concurrency slots of subject sub into slot.
// max <= 0 means unlimited: the decision allows and slot stays empty. The
// caller defers slot.Release() right after a successful Acquire (Release is
// idempotent and a no-op on an empty slot, so deferring it unconditionally
// is fine too). Semaphores are per process, also with a shared store.
//
// Acquire panics when slot is already held.
func (l *Limiter) Acquire(slot *Slot, sub Subject, max int64) Decision {
	if max <= 0 {
		return Decision{Allowed: true}
	}
	if slot.Held() {
		panic("BUG: limiter: Acquire into a held Slot")
	}
	st := l.local.get(sub)
	for {
		n, ok, dead := st.acquire(max)
		if dead {
			st = l.local.regain(sub, st)
			continue
		}
		if ok {
			slot.st.Store(st)
			return Decision{Allowed: true, Kind: Concurrency, Subject: sub, Limit: max, Remaining: max - n}
		}
		return Decision{Kind: Concurrency, Subject: sub, Limit: max, RetryAfter: l.concRetry}
	}
}

// InFlight returns the number of concurrency slots of sub held in this
// process.
func (l *Limiter) InFlight(sub Subject) int64 {
	if st, ok := l.local.subjects.Load(sub); ok {
		if n := st.inflight.Load(); n > 0 {
			return n
		}
	}
	return 0
}
