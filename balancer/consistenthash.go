package balancer

import (
	"math"
	"sync/atomic"
)

// chBits sets the number of hash slots per tier (2^14 = 16,384): the key
// space is cut into slots by the top bits of the key hash, and each slot is
// placed by weighted rendezvous hashing. More slots balance large tiers
// better (a target of 256 equal ones holds 64 slots, about ±12%) at 128 KiB
// of cache per tier.
const chBits = 14

// consistentHash is weighted rendezvous (HRW) hashing over key slots.
//
// A request's key is hashed with XXH64 (sum64) and its top chBits bits pick
// a slot. Each target scores a slot with w / -ln(u), u uniform in (0,1)
// from mix64(slotHash ^ seed), seed = XXH64(target ID); the highest score
// wins (Schindelhauer and Schomaker's weighted HRW). A target therefore
// owns a weight-proportional share of the slots, and adding a target moves
// only the slots it now wins, its share (1/n for equal weights), all to it;
// removing one moves only its own. Placement depends on IDs and weights
// only, not on declared order, so reordering targets moves nothing and every
// gateway replica agrees.
//
// Fast path - each slot caches its top four targets (packed index+1, 16 bits
// each), computed on first use; a pick is a hash, an atomic load and up to
// four bit tests, O(1) in tier size. Slow path - when those four are all
// skipped or tag-narrowed away, the argmax over the usable set, O(n) with a
// logarithm each. Failover candidates (Limit > 1) are the usable set by
// descending score: the key's HRW ranking, so the second choice is stable
// too. A tie (two equal IDs) goes to the lower index.
//
// A request without a key takes the slot of a rotating counter, spreading
// keyless traffic by weight rather than piling it on one target.
type consistentHash struct {
	seeds   []uint64
	weights []float64
	tiers   []chTier
	spread  atomic.Uint64
}

type chTier struct {
	members []int
	slots   []atomic.Uint64 // nil for a one-target tier
}

func newConsistentHash(g *Group) Strategy {
	n := len(g.targets)
	s := &consistentHash{seeds: make([]uint64, n), weights: make([]float64, n), tiers: make([]chTier, len(g.tiers))}
	for i, t := range g.targets {
		s.seeds[i] = sum64([]byte(t.ID))
		s.weights[i] = float64(t.Weight)
	}
	for ti := range g.tiers {
		tr := &s.tiers[ti]
		tr.members = g.tiers[ti].members
		if len(tr.members) > 1 {
			tr.slots = make([]atomic.Uint64, 1<<chBits)
		}
	}
	return s
}

// slotHash gives each slot an independent 64-bit value. Changing it, chBits,
// mix64 or rank moves keys between targets.
func slotHash(slot uint64) uint64 { return mix64(slot*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019) }

// rank is target i's weighted rendezvous score for a slot as a rankDesc:
// the lowest rank is the highest score.
func (s *consistentHash) rank(i int, sh uint64) uint64 {
	h := mix64(sh ^ s.seeds[i])
	u := (float64(h>>11) + 0.5) * 0x1p-53 // in (0,1)
	return rankDesc(s.weights[i]/-math.Log(u), i)
}

func (s *consistentHash) Order(req *Request, c Candidates, out []int) []int {
	tr := &s.tiers[c.Tier]
	if len(tr.members) == 1 {
		return append(out, tr.members[0])
	}
	var kh uint64
	if len(req.Key) > 0 {
		kh = sum64(req.Key)
	} else {
		kh = mix64(s.spread.Add(1))
	}
	slot := kh >> (64 - chBits)
	sh := slotHash(slot)
	if c.Limit == 1 {
		e := tr.slots[slot].Load()
		if e == 0 {
			e = s.top4(tr.members, sh)
			tr.slots[slot].Store(e) // racing fillers store the same value
		}
		for ; e != 0; e >>= 16 {
			if i := int(e&0xffff) - 1; c.Set.Has(i) {
				return append(out, i)
			}
		}
	}
	// Slow path - the cached top four are all unusable (argmin), or the
	// whole ranking is wanted.
	return orderByRank(req, c, out, func(i int) uint64 { return s.rank(i, sh) })
}

// top4 ranks members for a slot and packs the best four as index+1, best in
// the low 16 bits.
func (s *consistentHash) top4(members []int, sh uint64) uint64 {
	var top [4]uint64 // ranks, ascending
	n := 0
	for _, i := range members {
		r := s.rank(i, sh)
		k := n
		for k > 0 && r < top[k-1] {
			k--
		}
		if k == len(top) {
			continue
		}
		if n < len(top) {
			n++
		}
		copy(top[k+1:n], top[k:n-1])
		top[k] = r
	}
	var e uint64
	for k := n - 1; k >= 0; k-- {
		e = e<<16 | uint64(rankIndex(top[k])+1)
	}
	return e
}
