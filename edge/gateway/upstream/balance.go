package upstream

import (
	"math"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// picker chooses among nodes that are up, weighted and untried; Pool.Pick
// has checked that one exists.
type picker interface {
	pick(nodes []*Node, key []byte, tried *Tried) int
}

func usable(n *Node, i int, tried *Tried) bool {
	return n.Weight > 0 && !n.down.Load() && !tried.has(i)
}

// roundRobin is nginx's smooth weighted round robin: each pick adds every
// usable node's weight to its current value, takes the largest and
// subtracts the total from it, so weights 5:1:1 give a a b a c a a rather
// than a burst of five.
type roundRobin struct {
	mu  sync.Mutex
	cur []int
}

func newRoundRobin(nodes []*Node) *roundRobin { return &roundRobin{cur: make([]int, len(nodes))} }

func (r *roundRobin) pick(nodes []*Node, _ []byte, tried *Tried) int {
	r.mu.Lock()
	best, total := -1, 0
	for i, n := range nodes {
		if !usable(n, i, tried) {
			continue
		}
		r.cur[i] += n.Weight
		total += n.Weight
		if best < 0 || r.cur[i] > r.cur[best] {
			best = i
		}
	}
	r.cur[best] -= total
	r.mu.Unlock()
	return best
}

// cHash is weighted rendezvous hashing: the node with the highest
// -w/ln(u) for u = hash(key, node) wins, so a key stays on its node while
// that node is usable, and removing a node moves only its own keys. A
// retry takes the next-highest node for the same key.
type cHash struct {
	seeds []uint64
	rr    roundRobin
}

func newCHash(nodes []*Node) *cHash {
	c := &cHash{seeds: make([]uint64, len(nodes)), rr: roundRobin{cur: make([]int, len(nodes))}}
	for i, n := range nodes {
		c.seeds[i] = xxhash.Sum64String(n.Addr)
	}
	return c
}

func (c *cHash) pick(nodes []*Node, key []byte, tried *Tried) int {
	if len(key) == 0 {
		return c.rr.pick(nodes, nil, tried)
	}
	h := xxhash.Sum64(key)
	best, bestScore := -1, 0.0
	for i, n := range nodes {
		if !usable(n, i, tried) {
			continue
		}
		u := float64(mix64(h^c.seeds[i])>>11+1) / (1 << 53)
		s := -float64(n.Weight) / math.Log(u)
		if best < 0 || s > bestScore {
			best, bestScore = i, s
		}
	}
	return best
}

// mix64 is SplitMix64's finaliser.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// leastConn takes the node with the fewest requests in flight per unit of
// weight (declared order breaks ties).
type leastConn struct{}

func (leastConn) pick(nodes []*Node, _ []byte, tried *Tried) int {
	best, bestScore := -1, 0.0
	for i, n := range nodes {
		if !usable(n, i, tried) {
			continue
		}
		s := float64(n.inflight.Load()+1) / float64(n.Weight)
		if best < 0 || s < bestScore {
			best, bestScore = i, s
		}
	}
	return best
}

// ewma takes the node with the lowest decayed response time times its
// load ((in flight + 1) / weight); a node not measured yet scores 0 and is
// tried first.
type ewma struct{}

func (ewma) pick(nodes []*Node, _ []byte, tried *Tried) int {
	best, bestScore := -1, 0.0
	for i, n := range nodes {
		if !usable(n, i, tried) {
			continue
		}
		s := math.Float64frombits(n.ewma.Load()) * float64(n.inflight.Load()+1) / float64(n.Weight)
		if best < 0 || s < bestScore {
			best, bestScore = i, s
		}
	}
	return best
}
