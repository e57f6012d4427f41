package balancer

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/puzpuzpuz/xsync/v3"
)

// Registry holds the State of every direct model, keyed by the model's
// derived ID. It is owned by the process and outlives snapshots, so
// cooldowns, latency averages and in-flight counts survive reloads. Safe for
// concurrent use.
type Registry struct {
	m *xsync.MapOf[string, *State]
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{m: xsync.NewMapOf[string, *State]()}
}

// State returns the state for id, creating it on first use. Call it at
// snapshot compile, not per request.
func (r *Registry) State(id string) *State {
	s, _ := r.m.LoadOrCompute(id, func() *State { return new(State) })
	return s
}

// Len returns the number of states.
func (r *Registry) Len() int { return r.m.Size() }

// Prune drops the states whose id keep rejects (models gone from the config)
// and returns how many it dropped. Call it after a snapshot swap with the
// live IDs; a request still on the old snapshot keeps its pointers and
// updates orphaned states harmlessly.
func (r *Registry) Prune(keep func(id string) bool) int {
	n := 0
	r.m.Range(func(id string, _ *State) bool {
		if !keep(id) {
			r.m.Delete(id)
			n++
		}
		return true
	})
	return n
}

// State is the per-model runtime state shared by every group that dispatches
// to the model: in-flight count (least_busy), latency EWMA (least_latency)
// and cooldown deadline. Every field is one atomic word; readers never lock.
// A State must not be copied (its atomics make go vet flag copies).
type State struct {
	inflight atomic.Int64
	ewma     atomic.Uint64 // float64 bits of nanoseconds; 0 = no observation yet
	until    atomic.Int64  // cooldown deadline in Unix nanoseconds; 0 = none
	// Pad to two cache lines so hot counters of different models never share
	// one (128 rather than 64 bytes because adjacent-line prefetch pairs lines).
	_ [128 - 24]byte
}

// EWMAAlpha is the weight of a new latency observation:
// ewma = α·x + (1-α)·ewma, so an observation's influence halves every
// ln(0.5)/ln(1-α) ≈ 1.94 later observations. See the package comment.
const EWMAAlpha = 0.3

// Acquire counts one attempt in flight; the caller must call Release exactly
// once when the attempt ends (response fully relayed or failed).
func (s *State) Acquire() { s.inflight.Add(1) }

// Release ends an attempt counted by Acquire.
func (s *State) Release() {
	if s.inflight.Add(-1) < 0 {
		panic("BUG: balancer: Release without Acquire")
	}
}

// InFlight returns the attempts in flight.
func (s *State) InFlight() int64 { return s.inflight.Load() }

// Observe folds a successful attempt's latency into the EWMA: time to the
// first byte of the response, so that long streams do not count as slow.
// Failed attempts are not observed (cooldown handles them): a fast error
// would make a broken target look fast. The first observation seeds the
// average. Lock-free (CAS loop).
func (s *State) Observe(d time.Duration) {
	x := float64(max(d, 1)) // 0 means "untried"
	for {
		old := s.ewma.Load()
		v := x
		if old != 0 {
			v = EWMAAlpha*x + (1-EWMAAlpha)*math.Float64frombits(old)
		}
		if s.ewma.CompareAndSwap(old, math.Float64bits(v)) {
			return
		}
	}
}

// Latency returns the latency EWMA, 0 before the first observation.
func (s *State) Latency() time.Duration {
	return time.Duration(math.Float64frombits(s.ewma.Load()))
}

// latencyKey is the least_latency sort key: 0 for untried, so untried
// targets sort first.
func (s *State) latencyKey() float64 { return math.Float64frombits(s.ewma.Load()) }
