package balancer

import (
	"cmp"
	"math"
	"slices"
)

// Strategy orders the usable targets of one tier. One value is built per
// Group at compile time (it may precompute per tier) and is called
// concurrently.
type Strategy interface {
	// Order appends to out up to c.Limit members of c.Set, best first, and
	// returns out. c.Set is non-empty; the result must be non-empty, hold
	// no duplicates and only members of c.Set. Order must not allocate
	// once out and req's scratch have grown, and must not keep c.Set, out
	// or req.
	Order(req *Request, c Candidates, out []int) []int
}

// Candidates is the narrowed set a Strategy orders.
type Candidates struct {
	Set   Set  // usable targets, all in tier Tier; valid only during Order
	Tier  int  // index of the tier, highest priority first
	Full  bool // Set is the whole tier (fast paths may apply)
	Limit int  // at most this many results, ≥ 1
}

// Strategy names (routing.strategy).
const (
	StrategyRoundRobin     = "round_robin"
	StrategyConsistentHash = "consistent_hash"
	StrategyFailover       = "failover"
	StrategyLeastCost      = "least_cost"
	StrategyLeastLatency   = "least_latency"
	StrategyLeastBusy      = "least_busy"
)

// strategies is the registration table: name → constructor over a compiled
// group (targets, tiers and states are set; strat is not).
var strategies = map[string]func(*Group) Strategy{
	StrategyRoundRobin:     newRoundRobin,
	StrategyConsistentHash: newConsistentHash,
	StrategyFailover:       func(*Group) Strategy { return failover{} },
	StrategyLeastCost:      newLeastCost,
	StrategyLeastLatency:   func(g *Group) Strategy { return leastLatency{g} },
	StrategyLeastBusy:      func(g *Group) Strategy { return leastBusy{g} },
}

// Strategies returns the registered strategy names, sorted.
func Strategies() []string {
	names := make([]string, 0, len(strategies))
	for name := range strategies {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Interface guards.
var (
	_ Strategy = failover{}
	_ Strategy = (*leastCost)(nil)
	_ Strategy = (*roundRobin)(nil)
	_ Strategy = (*consistentHash)(nil)
	_ Strategy = leastLatency{}
	_ Strategy = leastBusy{}
)

// failover is the declared order.
type failover struct{}

func (failover) Order(_ *Request, c Candidates, out []int) []int {
	return c.Set.appendMembers(out, c.Limit)
}

// leastCost orders by ascending cost, ties by declared order.
type leastCost struct {
	byCost [][]int // per tier: members sorted by (cost, index)
}

func newLeastCost(g *Group) Strategy {
	s := &leastCost{byCost: make([][]int, len(g.tiers))}
	for ti := range g.tiers {
		m := slices.Clone(g.tiers[ti].members)
		slices.SortStableFunc(m, func(a, b int) int { return cmp.Compare(g.targets[a].Cost, g.targets[b].Cost) })
		s.byCost[ti] = m
	}
	return s
}

func (s *leastCost) Order(_ *Request, c Candidates, out []int) []int {
	for _, i := range s.byCost[c.Tier] {
		if c.Set.Has(i) {
			out = append(out, i)
			if len(out) == c.Limit {
				break
			}
		}
	}
	return out
}

// leastLatency orders by latency EWMA ascending; untried targets (no
// observation) first, ties by declared order.
type leastLatency struct{ g *Group }

func (s leastLatency) Order(req *Request, c Candidates, out []int) []int {
	states := s.g.states
	return orderByRank(req, c, out, func(i int) uint64 { return rankAsc(states[i].latencyKey(), i) })
}

// leastBusy orders by in-flight attempts / weight ascending, ties by
// declared order. Equal ratios compare equal exactly (IEEE division rounds
// equal rationals alike), so ties fall to declared order.
type leastBusy struct{ g *Group }

func (s leastBusy) Order(req *Request, c Candidates, out []int) []int {
	states, ts := s.g.states, s.g.targets
	return orderByRank(req, c, out, func(i int) uint64 {
		return rankAsc(float64(states[i].inflight.Load())/float64(ts[i].Weight), i)
	})
}

// orderByRank appends up to c.Limit members of c.Set by ascending rank.
// Each rank is read once: the keys move under concurrent updates, and a
// comparator reading them live could see an inconsistent order.
func orderByRank(req *Request, c Candidates, out []int, rank func(i int) uint64) []int {
	if c.Limit == 1 {
		// Fast path - argmin, no scratch.
		best := ^uint64(0)
		for i := c.Set.next(0); i >= 0; i = c.Set.next(i + 1) {
			best = min(best, rank(i))
		}
		return append(out, rankIndex(best))
	}
	r := req.ranks[:0]
	for i := c.Set.next(0); i >= 0; i = c.Set.next(i + 1) {
		r = append(r, rank(i))
	}
	req.ranks = r
	slices.Sort(r)
	for _, k := range r[:min(len(r), c.Limit)] {
		out = append(out, rankIndex(k))
	}
	return out
}

// A rank packs a non-negative float key and a target index (< 2^16, see
// MaxTargets) into one uint64 that orders by key, then by index, so sorting
// is a plain integer sort and ties go to declared order. The key keeps its
// top 48 bits: keys within a relative 2^-36 of each other tie.
const rankIndexBits = 16

func rankAsc(k float64, i int) uint64 {
	return math.Float64bits(k)>>rankIndexBits<<rankIndexBits | uint64(i)
}

// rankDesc orders by key descending, then by index ascending.
func rankDesc(k float64, i int) uint64 {
	return (^math.Float64bits(k))>>rankIndexBits<<rankIndexBits | uint64(i)
}

func rankIndex(r uint64) int { return int(r & (1<<rankIndexBits - 1)) }
