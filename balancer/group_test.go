package balancer_test

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"gw/balancer"
)

func TestTiers(t *testing.T) {
	ts := weighted(1, 1, 1, 1, 1)
	for i, p := range []int64{0, 1, -1, 1, 0} {
		ts[i].Priority = p
	}
	for _, s := range balancer.Strategies() {
		g := mustGroup(t, s, ts)
		f := func(sk balancer.Set, want ...int) {
			t.Helper()
			got := order(g, &balancer.Request{Skip: sk})
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: skip %v: got targets %v; want %v", s, sk, got, want)
			}
		}
		f(nil, 1, 3)            // priority 1 first
		f(skip(1), 3)           // still tier 1 while one is usable
		f(skip(1, 3), 0, 4)     // then priority 0
		f(skip(1, 3, 0), 4)     //
		f(skip(1, 3, 0, 4), 2)  // backup (-1) only when all others are out
		f(skip(0, 1, 2, 3, 4))  // nothing usable
		f(skip(0, 4), 1, 3)     // skipping a lower tier changes nothing
		f(skip(2), 1, 3)        //
		f(skip(1, 3, 99), 0, 4) // out-of-range skips are ignored
	}
}

func TestTags(t *testing.T) {
	f := func(name string, tags [][]string, reqTags string, want ...int) {
		t.Helper()
		ts := weighted(make([]int64, len(tags))...)
		for i := range ts {
			ts[i].Tags = tags[i]
		}
		g := mustGroup(t, balancer.StrategyFailover, ts)
		req := &balancer.Request{Tags: []byte(reqTags)}
		checkOrder(t, order(g, req), want...)
		// Eligible applies the same narrowing, without Skip or tiers.
		req.Skip = skip(want...)
		if got := g.Eligible(req, nil); !slices.Equal(got, want) && len(want)+len(got) > 0 {
			t.Fatalf("%s: Eligible: got %v; want %v", name, got, want)
		}
	}
	none := [][]string{nil, nil, nil}
	f("no target tags: no filtering", none, "x", 0, 1, 2)
	f("no target tags, untagged", none, "", 0, 1, 2)

	withDefault := [][]string{{"eu"}, {"us", "gpu"}, {"default"}, nil}
	f("tagged request keeps sharers", withDefault, "eu", 0)
	f("any shared tag", withDefault, "gpu,eu", 0, 1)
	f("spaces and empty items", withDefault, " , gpu\t,,", 1)
	f("no sharer: default targets", withDefault, "asia", 2)
	f("untagged request: default targets", withDefault, "", 2)
	f("only separators is untagged", withDefault, " , ", 2)
	f("tag default matches default", withDefault, "default", 2)
	f("case-sensitive", withDefault, "EU", 2)

	noDefault := [][]string{{"eu"}, {"us"}, nil}
	f("no sharer, no default: none", noDefault, "asia")
	f("untagged, no default: all", noDefault, "", 0, 1, 2)
	f("tagged, sharer", noDefault, "us", 1)
}

// Tags narrow before tiers: a tier with no tag-eligible target is passed over.
func TestTagsThenTiers(t *testing.T) {
	ts := weighted(1, 1, 1)
	ts[0].Priority, ts[0].Tags = 1, []string{"eu"}
	ts[1].Tags = []string{"us"}
	ts[2].Priority, ts[2].Tags = -1, []string{"us"}
	g := mustGroup(t, balancer.StrategyFailover, ts)
	checkOrder(t, order(g, &balancer.Request{Tags: []byte("us")}), 1)
	checkOrder(t, order(g, &balancer.Request{Tags: []byte("us"), Skip: skip(1)}), 2)
	checkOrder(t, order(g, &balancer.Request{Tags: []byte("eu")}), 0)
	checkOrder(t, order(g, &balancer.Request{Tags: []byte("eu"), Skip: skip(0)}))
}

func TestMaxAttemptsAndPick(t *testing.T) {
	ts := weighted(1, 2, 3, 4)
	for i := range ts {
		ts[i].Cost = float64(4 - i)
	}
	for _, s := range balancer.Strategies() {
		g, err := balancer.NewGroup(ts, balancer.Options{Strategy: s, MaxAttempts: 2})
		if err != nil {
			t.Fatal(err)
		}
		req := &balancer.Request{Key: []byte("k")}
		if got := g.Order(req, nil); len(got) != 2 {
			t.Fatalf("%s: MaxAttempts 2: got %v", s, got)
		}
		if s == balancer.StrategyRoundRobin {
			continue // each call advances the rotation
		}
		full := mustGroup(t, s, ts)
		for range 10 {
			if p, o := full.Pick(req), full.Order(req, nil); p != o[0] {
				t.Fatalf("%s: Pick %d; Order %v", s, p, o)
			}
		}
	}
	g := mustGroup(t, balancer.StrategyFailover, ts)
	if p := g.Pick(&balancer.Request{Skip: skip(0, 1, 2, 3)}); p != -1 {
		t.Fatalf("Pick with all skipped: got %d; want -1", p)
	}
}

func TestNewGroupErrors(t *testing.T) {
	f := func(ts []balancer.Target, opt balancer.Options, want error) {
		t.Helper()
		if _, err := balancer.NewGroup(ts, opt); !errors.Is(err, want) {
			t.Fatalf("got %v; want %v", err, want)
		}
	}
	f(nil, balancer.Options{}, balancer.ErrNoTargets)
	f(weighted(1), balancer.Options{Strategy: "random"}, balancer.ErrStrategy)
	f(make([]balancer.Target, balancer.MaxTargets+1), balancer.Options{}, balancer.ErrTooManyTargets)

	g := mustGroup(t, "", weighted(0, -3, math.MaxInt64))
	if g.Strategy() != balancer.StrategyFailover {
		t.Fatalf("default strategy: got %q", g.Strategy())
	}
	for i, want := range []int64{1, 1, balancer.MaxWeight} {
		if w := g.Target(i).Weight; w != want {
			t.Fatalf("target %d weight: got %d; want %d", i, w, want)
		}
	}
}

func TestFailover(t *testing.T) {
	g := mustGroup(t, balancer.StrategyFailover, weighted(5, 1, 9))
	checkOrder(t, order(g, &balancer.Request{}), 0, 1, 2)
	checkOrder(t, order(g, &balancer.Request{Skip: skip(1)}), 0, 2)
}

func TestLeastCost(t *testing.T) {
	ts := weighted(1, 1, 1, 1, 1, 1)
	for i, c := range []float64{3, 1, 2, 1, math.Inf(1), math.NaN()} {
		ts[i].Cost = c
	}
	g := mustGroup(t, balancer.StrategyLeastCost, ts)
	checkOrder(t, order(g, &balancer.Request{}), 1, 3, 2, 0, 4, 5) // ties by declared order
	checkOrder(t, order(g, &balancer.Request{Skip: skip(1, 2)}), 3, 0, 4, 5)
}

func TestLeastLatency(t *testing.T) {
	g := mustGroup(t, balancer.StrategyLeastLatency, weighted(1, 1, 1))
	req := &balancer.Request{}
	checkOrder(t, order(g, req), 0, 1, 2) // all untried: declared order
	g.Observe(0, 100*time.Millisecond)
	g.Observe(1, 50*time.Millisecond)
	checkOrder(t, order(g, req), 2, 1, 0) // untried first, then fastest
	g.Observe(2, 200*time.Millisecond)
	checkOrder(t, order(g, req), 1, 0, 2)
	if p := g.Pick(req); p != 1 {
		t.Fatalf("Pick: got %d; want 1", p)
	}
	// α = 0.3: 0.3·300ms + 0.7·50ms = 125ms, now slower than target 0.
	g.Observe(1, 300*time.Millisecond)
	if got, want := g.State(1).Latency(), 125*time.Millisecond; got != want {
		t.Fatalf("EWMA: got %s; want %s", got, want)
	}
	checkOrder(t, order(g, req), 0, 1, 2)
	// The old value decays by 0.7 per observation: after five 10ms
	// observations target 2 is below 50ms and leads.
	for range 5 {
		g.Observe(2, 10*time.Millisecond)
	}
	if l := g.State(2).Latency(); l > 50*time.Millisecond || l < 10*time.Millisecond {
		t.Fatalf("EWMA after decay: got %s", l)
	}
	checkOrder(t, order(g, req), 2, 0, 1)
}

func TestLeastBusy(t *testing.T) {
	g := mustGroup(t, balancer.StrategyLeastBusy, weighted(1, 2, 1))
	req := &balancer.Request{}
	checkOrder(t, order(g, req), 0, 1, 2) // all idle: declared order
	g.Acquire(0)
	checkOrder(t, order(g, req), 1, 2, 0) // 1/1 > 0
	g.Acquire(1)
	checkOrder(t, order(g, req), 2, 1, 0) // 1/2 beats 1/1
	g.Acquire(1)
	g.Acquire(2)
	checkOrder(t, order(g, req), 0, 1, 2) // 1/1 = 2/2 = 1/1: declared order
	if n := g.State(1).InFlight(); n != 2 {
		t.Fatalf("in flight: got %d; want 2", n)
	}
	g.Release(0)
	if p := g.Pick(req); p != 0 {
		t.Fatalf("Pick after Release: got %d; want 0", p)
	}
	g.Release(1)
	g.Release(1)
	g.Release(2)
	defer func() {
		if recover() == nil {
			t.Fatalf("Release without Acquire: no panic")
		}
	}()
	g.Release(2)
}

func TestSetOps(t *testing.T) {
	var s balancer.Set
	if s.Has(0) || s.Has(-1) || s.Len() != 0 {
		t.Fatalf("nil set: not empty")
	}
	s = s.Add(3).Add(130).Add(3)
	if !s.Has(3) || !s.Has(130) || s.Has(4) || s.Has(-1) || s.Len() != 2 {
		t.Fatalf("set %v: wrong membership", s)
	}
	s = s[:0].Add(1)
	if s.Has(3) || s.Has(130) || !s.Has(1) {
		t.Fatalf("reused set %v: stale members", s)
	}
}
