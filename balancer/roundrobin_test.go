package balancer_test

import (
	"math/rand/v2"
	"testing"

	"gw/balancer"
)

func TestRoundRobinNginxSequence(t *testing.T) {
	// ngx_http_upstream_get_peer with weights a=5 b=1 c=1: a a b a c a a.
	want := []int{0, 0, 1, 0, 2, 0, 0}
	f := func(name string, g *balancer.Group, req *balancer.Request) {
		t.Helper()
		for round := range 3 {
			for k, w := range want {
				if got := g.Pick(req); got != w {
					t.Fatalf("%s: round %d pick %d: got %d; want %d", name, round, k, got, w)
				}
			}
		}
	}
	f("sequence", mustGroup(t, balancer.StrategyRoundRobin, weighted(5, 1, 1)), &balancer.Request{})

	g := mustGroup(t, balancer.StrategyRoundRobin, weighted(5, 1, 1))
	balancer.DisableRoundRobinSequence(g)
	f("mutex", g, &balancer.Request{})

	// Skipping d takes the mutex path over a, b, c: the same sequence.
	f("subset", mustGroup(t, balancer.StrategyRoundRobin, weighted(5, 1, 1, 9)), &balancer.Request{Skip: skip(3)})

	// Weights 10,2,2 reduce by their gcd to 5,1,1.
	f("gcd", mustGroup(t, balancer.StrategyRoundRobin, weighted(10, 2, 2)), &balancer.Request{})
}

func TestRoundRobinDistribution(t *testing.T) {
	f := func(name string, g *balancer.Group, req *balancer.Request) {
		t.Helper()
		hits := 0
		for range 10000 {
			if g.Pick(req) == 0 {
				hits++
			}
		}
		checkShare(t, name, hits, 10000, 0.25, 0.03)
	}
	f("sequence", mustGroup(t, balancer.StrategyRoundRobin, weighted(1, 3)), &balancer.Request{})
	g := mustGroup(t, balancer.StrategyRoundRobin, weighted(1, 3))
	balancer.DisableRoundRobinSequence(g)
	f("mutex", g, &balancer.Request{})
	f("subset", mustGroup(t, balancer.StrategyRoundRobin, weighted(1, 3, 4)), &balancer.Request{Skip: skip(2)})
	// Weight 0 counts as 1.
	f("zero weight", mustGroup(t, balancer.StrategyRoundRobin, weighted(0, 3)), &balancer.Request{})
}

func TestRoundRobinFailoverRotation(t *testing.T) {
	g := mustGroup(t, balancer.StrategyRoundRobin, weighted(1, 1, 1))
	req := &balancer.Request{}
	checkOrder(t, order(g, req), 0, 1, 2)
	checkOrder(t, order(g, req), 1, 2, 0)
	checkOrder(t, order(g, req), 2, 0, 1)
	req.Skip = skip(1)
	checkOrder(t, order(g, req), 0, 2)
	checkOrder(t, order(g, req), 2, 0)
}

func TestRoundRobinLargeSequenceUsesMutex(t *testing.T) {
	// 9973 and 9967 are coprime: the period is 19940 > maxSeq.
	g := mustGroup(t, balancer.StrategyRoundRobin, weighted(9973, 9967))
	req := &balancer.Request{}
	hits := 0
	for range 19940 {
		if g.Pick(req) == 0 {
			hits++
		}
	}
	if hits != 9973 {
		t.Fatalf("picks of target 0 over one period: got %d; want 9973", hits)
	}
}

func TestFastMod(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for d := uint32(1); d <= 1<<14; d++ {
		m := ^uint64(0)/uint64(d) + 1
		for _, a := range []uint32{0, 1, d - 1, d, d + 1, 1<<32 - 1, r.Uint32(), r.Uint32()} {
			if got, want := balancer.FastMod(a, m, d), a%d; got != want {
				t.Fatalf("FastMod(%d, %d): got %d; want %d", a, d, got, want)
			}
		}
	}
}
