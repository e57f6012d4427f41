// Package circuit keeps a shared store (Redis) usable across its outages,
// for the limiter's shared counters and the response cache alike.
//
// Connected: every call goes to the store. A failed call is handled by the
// caller's fallback for that request (state Degraded); the next calls still
// try. FailureThreshold consecutive failures open the circuit: the store is
// skipped, so requests stop waiting on a dead server. After ProbeInterval a
// background probe decides: it dials a fresh client and pings it, and on
// success the new client replaces the old one and the circuit closes; on
// failure the circuit stays open for another interval. A warning is
// repeated every WarnInterval while the store is not connected. There is
// no permanent switch.
//
// The probe replaces the client rather than pinging the old one because a
// Redis client pipelines over several connections: a PING tests one of
// them, and the others, broken by the outage but idle, would each fail one
// call after the circuit closed (or fail the PING, and reattaching would
// wait another interval). While the circuit is open nothing uses the old
// client but a call that loaded it just before, and that one fails as the
// caller's fallback says.
package circuit

import (
	"sync"
	"sync/atomic"
	"time"
)

// State is the store's state, for metrics and logs.
type State int32

const (
	// Connected: calls go to the store.
	Connected State = iota
	// Degraded: the last call failed; the next ones still try.
	Degraded
	// Open: the store is skipped until a probe succeeds.
	Open
)

// Logger is what the circuit logs to (*slog.Logger is one).
type Logger interface {
	Warn(msg string, args ...any)
	Info(msg string, args ...any)
}

// Timing is a store's timing: its client's bounds and its circuit's
// thresholds. The stores behind a circuit (the limiter's counters, the
// response cache) embed it in their configurations, so they share its
// fields and their defaults. Zero fields take the defaults (WithDefaults).
type Timing struct {
	// Timeout bounds each call on the request path (and each probe); a
	// call that times out counts as a failure. Default 250 ms.
	Timeout time.Duration
	// DialTimeout bounds a connection attempt. Default 2 s.
	DialTimeout time.Duration
	// FailureThreshold consecutive failures open the circuit. Default 5.
	// Calls failing together count one each: a stall longer than Timeout
	// under concurrent load opens the circuit at once, which keeps the
	// request path from waiting Timeout on every call.
	FailureThreshold int
	// ProbeInterval is how long the circuit stays open before a probe
	// decides recovery (also the redial period when the store was
	// unreachable at startup). Default 30 s.
	ProbeInterval time.Duration
	// WarnInterval repeats the warning while the store is not connected.
	// Default 5 minutes.
	WarnInterval time.Duration
}

// WithDefaults returns t with its zero (or negative) fields set to the
// defaults.
func (t Timing) WithDefaults() Timing {
	t.Timeout = durationOr(t.Timeout, 250*time.Millisecond)
	t.DialTimeout = durationOr(t.DialTimeout, 2*time.Second)
	if t.FailureThreshold <= 0 {
		t.FailureThreshold = 5
	}
	t.ProbeInterval = durationOr(t.ProbeInterval, 30*time.Second)
	t.WarnInterval = durationOr(t.WarnInterval, 5*time.Minute)
	return t
}

func durationOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Config sets the circuit's thresholds and what its log lines say.
type Config struct {
	// Timing's FailureThreshold, ProbeInterval and WarnInterval are the
	// circuit's (New applies the defaults).
	Timing

	// Component starts every log line ("limiter", "cache").
	Component string
	// Where names the store in log lines (its address).
	Where string
	// Meanwhile says what requests get while the store is away
	// ("counting per replica until it answers").
	Meanwhile string
	// Reattached says what reattaching gives back ("counters are shared
	// again").
	Reattached string
}

// Store is how the circuit makes, tests and drops clients. A probe closes
// the client it replaces unless Dial returned that same client again, so C
// is compared: an interface type must hold comparable values (pointers).
type Store[C comparable] struct {
	Dial  func() (C, error)
	Ping  func(C) error
	Close func(C)
}

type ref[C comparable] struct{ c C }

// Circuit holds the current client and the state. Safe for concurrent use.
type Circuit[C comparable] struct {
	cfg   Config
	log   Logger
	store Store[C]

	client   atomic.Pointer[ref[C]] // nil until a dial succeeds
	state    atomic.Int32
	fails    atomic.Int32
	openedAt atomic.Int64 // unix ns when the circuit opened or the last probe failed
	lastWarn atomic.Int64 // unix ns of the last warning

	probeMu sync.Mutex
}

// New dials once; an unreachable store is not an error: the circuit starts
// open and a probe reattaches it later (Poll).
func New[C comparable](cfg Config, log Logger, store Store[C], nowNs int64) *Circuit[C] {
	cfg.Timing = cfg.Timing.WithDefaults()
	c := &Circuit[C]{cfg: cfg, log: log, store: store}
	cl, err := store.Dial()
	if err != nil {
		c.state.Store(int32(Open))
		c.openedAt.Store(nowNs)
		c.lastWarn.Store(nowNs)
		log.Warn(cfg.Component+": shared store unreachable at startup; "+cfg.Meanwhile,
			"addr", cfg.Where, "error", err.Error(), "retry_in", cfg.ProbeInterval.String())
		return c
	}
	c.client.Store(&ref[C]{cl})
	return c
}

// State returns Connected, Degraded or Open.
func (c *Circuit[C]) State() State { return State(c.state.Load()) }

// Usable returns the client while the circuit is closed.
func (c *Circuit[C]) Usable() (C, bool) {
	var zero C
	if State(c.state.Load()) == Open {
		return zero, false
	}
	if r := c.client.Load(); r != nil {
		return r.c, true
	}
	return zero, false
}

// Success notes a call that reached the store.
func (c *Circuit[C]) Success() {
	// Load before Store: the common case writes nothing.
	if c.fails.Load() != 0 {
		c.fails.Store(0)
	}
	if State(c.state.Load()) == Degraded {
		c.state.CompareAndSwap(int32(Degraded), int32(Connected))
	}
}

// Failure notes a call that did not; the FailureThreshold-th in a row
// opens the circuit and warns once.
func (c *Circuit[C]) Failure(nowNs int64, err error) {
	n := c.fails.Add(1)
	c.state.CompareAndSwap(int32(Connected), int32(Degraded))
	if n < int32(c.cfg.FailureThreshold) {
		return
	}
	if State(c.state.Swap(int32(Open))) == Open {
		return
	}
	c.openedAt.Store(nowNs)
	c.lastWarn.Store(nowNs)
	c.log.Warn(c.cfg.Component+": shared store unreachable; circuit open, "+c.cfg.Meanwhile,
		"addr", c.cfg.Where, "error", err.Error(), "consecutive_failures", n, "retry_in", c.cfg.ProbeInterval.String())
}

// Poll runs the probe when due and repeats the warning while the store is
// not connected. The owner's background loop calls it.
func (c *Circuit[C]) Poll(nowNs int64) {
	c.probeMu.Lock()
	defer c.probeMu.Unlock()
	if State(c.state.Load()) == Open && nowNs-c.openedAt.Load() >= int64(c.cfg.ProbeInterval) {
		if err := c.probe(); err != nil {
			c.openedAt.Store(nowNs)
		} else {
			c.fails.Store(0)
			c.state.Store(int32(Connected))
			c.log.Info(c.cfg.Component+": shared store reattached; "+c.cfg.Reattached, "addr", c.cfg.Where)
			return
		}
	}
	if st := State(c.state.Load()); st != Connected && nowNs-c.lastWarn.Load() >= int64(c.cfg.WarnInterval) {
		c.lastWarn.Store(nowNs)
		c.log.Warn(c.cfg.Component+": shared store not connected; "+c.cfg.Meanwhile,
			"addr", c.cfg.Where, "state", st.String())
	}
}

// probe dials afresh and pings the new client; on success it replaces the
// old one (see the package comment for why).
func (c *Circuit[C]) probe() error {
	cl, err := c.store.Dial()
	if err != nil {
		return err
	}
	if err := c.store.Ping(cl); err != nil {
		c.store.Close(cl)
		return err
	}
	if old := c.client.Swap(&ref[C]{cl}); old != nil && old.c != cl {
		c.store.Close(old.c)
	}
	return nil
}

// Close closes the client and leaves the circuit open for good: calls
// after it take their fallback, and no probe dials again.
func (c *Circuit[C]) Close() {
	c.probeMu.Lock()
	defer c.probeMu.Unlock()
	c.state.Store(int32(Open))
	c.openedAt.Store(1<<63 - 1)
	if r := c.client.Swap(nil); r != nil {
		c.store.Close(r.c)
	}
}

var stateNames = [...]string{"connected", "degraded", "circuit_open"}

// String returns "connected", "degraded" or "circuit_open".
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}
