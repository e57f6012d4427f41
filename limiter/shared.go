package limiter

// The circuit around the shared store. Connected: every Reserve goes to
// Redis. A failed call falls back to local counting for that request
// (state Degraded). FailureThreshold consecutive failures open the circuit:
// Redis is skipped and every replica counts alone. After ProbeInterval a
// background probe (a fresh dial and a PING; the new client replaces the
// old one, whose idle connections the outage may have broken) decides:
// success closes the circuit, failure keeps it open for another interval.
// There is no permanent switch.

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// State is the shared store's state, for metrics and /status.
type State int32

const (
	// StateLocal: no shared store is configured; counters are per process.
	StateLocal State = iota
	// StateConnected: counters live in the shared store.
	StateConnected
	// StateDegraded: the last shared call failed; that request was counted
	// locally, and the next ones still try the store.
	StateDegraded
	// StateCircuitOpen: the store is skipped and counting is per replica
	// until a background probe succeeds.
	StateCircuitOpen
)

var stateNames = [...]string{"local", "connected", "degraded", "circuit_open"}

// String returns "local", "connected", "degraded" or "circuit_open".
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

type beRef struct{ backend }

type shared struct {
	cfg  RedisConfig
	log  Logger
	dial func() (backend, error)

	be       atomic.Pointer[beRef] // nil until a dial succeeds
	state    atomic.Int32
	fails    atomic.Int32
	openedAt atomic.Int64 // unix ns when the circuit opened or the last probe failed
	lastWarn atomic.Int64 // unix ns of the last warning

	probeMu sync.Mutex
}

// start dials once; an unreachable store at startup opens the circuit.
func (s *shared) start(nowNs int64) {
	be, err := s.dial()
	if err != nil {
		s.state.Store(int32(StateCircuitOpen))
		s.openedAt.Store(nowNs)
		s.lastWarn.Store(nowNs)
		s.log.Warn("limiter: shared store unreachable at startup; "+s.meanwhile(),
			"addr", s.cfg.where(), "error", err, "retry_in", s.cfg.ProbeInterval)
		return
	}
	s.be.Store(&beRef{be})
	s.state.Store(int32(StateConnected))
}

// usable returns the backend when the circuit is closed.
func (s *shared) usable() backend {
	if State(s.state.Load()) == StateCircuitOpen {
		return nil
	}
	if ref := s.be.Load(); ref != nil {
		return ref.backend
	}
	return nil
}

func (s *shared) success() {
	// Load before Store: the common case writes nothing.
	if s.fails.Load() != 0 {
		s.fails.Store(0)
	}
	if State(s.state.Load()) == StateDegraded {
		s.state.CompareAndSwap(int32(StateDegraded), int32(StateConnected))
	}
}

func (s *shared) failure(nowNs int64, err error) {
	n := s.fails.Add(1)
	s.state.CompareAndSwap(int32(StateConnected), int32(StateDegraded))
	if n < int32(s.cfg.FailureThreshold) {
		return
	}
	if State(s.state.Swap(int32(StateCircuitOpen))) == StateCircuitOpen {
		return
	}
	s.openedAt.Store(nowNs)
	s.lastWarn.Store(nowNs)
	s.log.Warn("limiter: shared store unreachable; circuit open, "+s.meanwhile(),
		"addr", s.cfg.where(), "error", err, "consecutive_failures", n, "retry_in", s.cfg.ProbeInterval)
}

// poll runs the probe when due and repeats the warning while the store is
// not connected. Called by the background loop (and tests).
func (s *shared) poll(nowNs int64) {
	s.probeMu.Lock()
	defer s.probeMu.Unlock()
	if State(s.state.Load()) == StateCircuitOpen && nowNs-s.openedAt.Load() >= int64(s.cfg.ProbeInterval) {
		if err := s.probe(); err != nil {
			s.openedAt.Store(nowNs)
		} else {
			s.fails.Store(0)
			s.state.Store(int32(StateConnected))
			s.log.Info("limiter: shared store reattached; counters are shared again", "addr", s.cfg.where())
			return
		}
	}
	if State(s.state.Load()) != StateConnected && nowNs-s.lastWarn.Load() >= int64(s.cfg.WarnInterval) {
		s.lastWarn.Store(nowNs)
		s.log.Warn("limiter: shared store not connected; "+s.meanwhile(),
			"addr", s.cfg.where(), "state", State(s.state.Load()).String())
	}
}

// meanwhile says what happens to requests while the store is away.
func (s *shared) meanwhile() string {
	if s.cfg.NoLocalFallback {
		return "requests are reported uncounted until it answers"
	}
	return "counting per replica until it answers"
}

// probe dials afresh and PINGs the new client; on success it replaces the
// old one. A PING on the old client would test one of its connections: the
// others, broken by the outage but idle, would each fail one request after
// the circuit closed (uncounted, or a 500 for callers without a fallback).
// The circuit is open while this runs, so no request holds the old client
// but one that loaded it just before the circuit opened, and that one fails
// as the store's fallback says.
func (s *shared) probe() error {
	be, err := s.dial()
	if err != nil {
		return err
	}
	if err := be.ping(); err != nil {
		be.close()
		return err
	}
	if old := s.be.Swap(&beRef{be}); old != nil && old.backend != be {
		old.close()
	}
	return nil
}

func (s *shared) close() {
	if ref := s.be.Load(); ref != nil {
		ref.close()
	}
}

// durationOr returns d, or def when d <= 0.
func durationOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// where names the store in logs: its address, or its cluster seeds.
func (c *RedisConfig) where() string {
	w := c.Addr
	if len(c.ClusterNodes) > 0 {
		w = "cluster " + strings.Join(c.ClusterNodes, ",")
	}
	if c.Name != "" {
		w = c.Name + " (" + w + ")"
	}
	return w
}
