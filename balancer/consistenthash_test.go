package balancer_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"gw/balancer"
)

func randomKeys(n int) [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, n)
	for i := range keys {
		k := make([]byte, 16)
		for j := range k {
			k[j] = byte(r.Uint32())
		}
		keys[i] = k
	}
	return keys
}

// placement returns each key's target ID.
func placement(g *balancer.Group, keys [][]byte) []string {
	out := make([]string, len(keys))
	req := &balancer.Request{}
	for i, k := range keys {
		req.Key = k
		out[i] = g.Target(g.Pick(req)).ID
	}
	return out
}

func TestConsistentHashDistribution(t *testing.T) {
	keys := randomKeys(10000)
	g := mustGroup(t, balancer.StrategyConsistentHash, weighted(1, 3))
	hits := 0
	for _, id := range placement(g, keys) {
		if id == "m0" {
			hits++
		}
	}
	checkShare(t, "weights 1:3", hits, len(keys), 0.25, 0.03)

	g = mustGroup(t, balancer.StrategyConsistentHash, weighted(1, 1, 1, 1, 1, 1, 1, 1))
	counts := map[string]int{}
	for _, id := range placement(g, keys) {
		counts[id]++
	}
	for id, n := range counts {
		checkShare(t, "8 equal, "+id, n, len(keys), 0.125, 0.02)
	}
}

func TestConsistentHashMovement(t *testing.T) {
	keys := randomKeys(10000)
	f := func(name string, before, after []balancer.Target, maxMoved float64) {
		t.Helper()
		pa := placement(mustGroup(t, balancer.StrategyConsistentHash, before), keys)
		pb := placement(mustGroup(t, balancer.StrategyConsistentHash, after), keys)
		moved := 0
		for i := range keys {
			if pa[i] == pb[i] {
				continue
			}
			moved++
			// Adding: a moved key goes to a new target. Removing: it comes
			// from a removed one.
			if slices.ContainsFunc(before, func(t balancer.Target) bool { return t.ID == pb[i] }) &&
				slices.ContainsFunc(after, func(t balancer.Target) bool { return t.ID == pa[i] }) {
				t.Fatalf("%s: key %d moved between surviving targets %s → %s", name, i, pa[i], pb[i])
			}
		}
		if share := float64(moved) / float64(len(keys)); share > maxMoved {
			t.Fatalf("%s: %.4f of keys moved; want ≤ %.4f", name, share, maxMoved)
		}
	}
	// Adding a fifth equal target moves about 1/5 of the keys.
	f("add 5th", weighted(1, 1, 1, 1), weighted(1, 1, 1, 1, 1), 1.0/5+0.02)
	f("add 17th", weighted(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1),
		weighted(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), 1.0/17+0.02)
	// Removing the second of three moves only its own third.
	three := weighted(1, 1, 1)
	f("remove", three, []balancer.Target{three[0], three[2]}, 1.0/3+0.02)
	// Reordering moves nothing.
	f("reorder", weighted(1, 2, 3), []balancer.Target{weighted(1, 2, 3)[2], weighted(1, 2, 3)[0], weighted(1, 2, 3)[1]}, 0)
}

// A skipped target's keys go to their next-ranked target, the same one
// Order lists second, on the fast path (top four cached) and the slow one.
func TestConsistentHashSkipFollowsRanking(t *testing.T) {
	g := mustGroup(t, balancer.StrategyConsistentHash, weighted(1, 2, 1, 3, 1, 1, 2, 1))
	req := &balancer.Request{}
	for _, k := range randomKeys(500) {
		req.Key, req.Skip = k, req.Skip[:0]
		rank := order(g, req)
		if len(rank) != 8 {
			t.Fatalf("ranking: got %v; want all 8 targets", rank)
		}
		if p := g.Pick(req); p != rank[0] {
			t.Fatalf("Pick: got %d; want ranking head %d (ranking %v)", p, rank[0], rank)
		}
		for n := 1; n < 8; n++ {
			req.Skip = req.Skip.Add(rank[n-1])
			if p := g.Pick(req); p != rank[n] {
				t.Fatalf("Pick with top %d skipped: got %d; want %d (ranking %v)", n, p, rank[n], rank)
			}
			if o := g.Order(req, nil); !slices.Equal(o, rank[n:]) {
				t.Fatalf("Order with top %d skipped: got %v; want %v", n, o, rank[n:])
			}
		}
	}
}

func TestConsistentHashStickyAndKeyless(t *testing.T) {
	g := mustGroup(t, balancer.StrategyConsistentHash, weighted(1, 3))
	req := &balancer.Request{Key: []byte("user-42")}
	first := g.Pick(req)
	for range 100 {
		if p := g.Pick(req); p != first {
			t.Fatalf("same key: got %d; want %d", p, first)
		}
	}
	// Without a key, requests spread by weight.
	req.Key = nil
	hits := 0
	for range 10000 {
		if g.Pick(req) == 0 {
			hits++
		}
	}
	checkShare(t, "keyless 1:3", hits, 10000, 0.25, 0.03)
}
