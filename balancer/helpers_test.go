package balancer_test

import (
	"fmt"
	"slices"
	"testing"

	"gw/balancer"
)

// weighted returns targets m0, m1, ... with the given weights.
func weighted(weights ...int64) []balancer.Target {
	ts := make([]balancer.Target, len(weights))
	for i, w := range weights {
		ts[i] = balancer.Target{ID: fmt.Sprintf("m%d", i), Weight: w}
	}
	return ts
}

func mustGroup(tb testing.TB, strategy string, ts []balancer.Target) *balancer.Group {
	tb.Helper()
	g, err := balancer.NewGroup(ts, balancer.Options{Strategy: strategy})
	if err != nil {
		tb.Fatalf("cannot build group: %s", err)
	}
	return g
}

func order(g *balancer.Group, req *balancer.Request) []int {
	return slices.Clone(g.Order(req, nil))
}

func skip(idx ...int) balancer.Set {
	var s balancer.Set
	for _, i := range idx {
		s = s.Add(i)
	}
	return s
}

func checkOrder(tb testing.TB, got []int, want ...int) {
	tb.Helper()
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		tb.Fatalf("got order %v; want %v", got, want)
	}
}

func checkShare(tb testing.TB, name string, hits, total int, want, tol float64) {
	tb.Helper()
	share := float64(hits) / float64(total)
	if share < want-tol || share > want+tol {
		tb.Fatalf("%s: share %.4f (%d of %d); want %.2f ± %.2f", name, share, hits, total, want, tol)
	}
}
