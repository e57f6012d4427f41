package limiter

// The circuit around the shared store (limiter/circuit). Connected: every
// Reserve goes to Redis. A failed call falls back to local counting for
// that request (state Degraded). FailureThreshold consecutive failures open
// the circuit: Redis is skipped and every replica counts alone (or, with
// NoLocalFallback, requests are reported uncounted). After ProbeInterval a
// background probe (a fresh dial and a PING; the new client replaces the
// old one, whose idle connections the outage may have broken) decides:
// success closes the circuit, failure keeps it open for another interval.
// There is no permanent switch.

import (
	"strings"
	"time"

	"gw/limiter/circuit"
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

// shared is the shared store behind its circuit (limiter/circuit).
type shared struct {
	*circuit.Circuit[backend]
	noLocalFallback bool
}

func newShared(cfg *RedisConfig, log Logger, dial func() (backend, error), nowNs int64) *shared {
	meanwhile := "counting per replica until it answers"
	if cfg.NoLocalFallback {
		meanwhile = "requests are reported uncounted until it answers"
	}
	c := circuit.New(circuit.Config{
		Timing:     cfg.Timing,
		Component:  "limiter",
		Where:      cfg.where(),
		Meanwhile:  meanwhile,
		Reattached: "counters are shared again",
	}, log, circuit.Store[backend]{
		Dial:  dial,
		Ping:  func(b backend) error { return b.ping() },
		Close: func(b backend) { b.close() },
	}, nowNs)
	return &shared{Circuit: c, noLocalFallback: cfg.NoLocalFallback}
}

// usable returns the backend when the circuit is closed.
func (s *shared) usable() backend {
	be, _ := s.Usable()
	return be
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
