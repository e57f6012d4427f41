//go:build !race

package balancer_test

import (
	"fmt"
	"testing"
	"time"

	"gw/balancer"
)

// The request path must not allocate once a Request and the out buffer have
// grown: Pick and Order for every strategy, narrowed or not, plus the
// per-attempt bookkeeping.
func TestAllocs(t *testing.T) {
	keys := randomKeys(64)
	c := balancer.DefaultCooldown()
	c.Enabled = true
	tags := []byte("eu, us")
	for _, s := range balancer.Strategies() {
		for _, n := range []int{2, 16, 256} {
			ts := make([]balancer.Target, n)
			for i := range ts {
				ts[i] = balancer.Target{ID: fmt.Sprint(i), Weight: int64(i%3 + 1), Priority: int64(i % 2),
					Tags: []string{"eu", "default"}[i%2 : i%2+1], Cost: float64(i % 5), Cooldown: &c}
			}
			g := mustGroup(t, s, ts)
			g.Trip(1, t0, balancer.Failure{Status: 503})
			req := &balancer.Request{}
			var out []int
			k := 0
			run := func() {
				req.Key = keys[k%len(keys)]
				k++
				req.Tags = nil
				req.Skip = req.Skip[:0]
				out = g.Order(req, out)
				g.Pick(req)
				req.Tags = tags
				req.Skip = g.MarkCooling(req.Skip, t0)
				req.Skip = req.Skip.Add(n - 1)
				out = g.Order(req, out)
				i := g.Pick(req)
				g.Acquire(i)
				g.Observe(i, time.Millisecond)
				g.Release(i)
				g.Trip(i, t0, balancer.Failure{Status: 404}) // not a trigger: keeps i usable
			}
			for range 1000 { // grow the scratch, fill the hash slots in use
				run()
			}
			k = 0
			if a := testing.AllocsPerRun(200, run); a != 0 {
				t.Fatalf("%s/%d: %.1f allocs per request; want 0", s, n, a)
			}
		}
	}
	src := &byteKeySource{apiKey: []byte("caller")}
	if a := testing.AllocsPerRun(100, func() { balancer.HashKey(nil, src) }); a != 0 {
		t.Fatalf("HashKey: %.1f allocs; want 0", a)
	}
}
