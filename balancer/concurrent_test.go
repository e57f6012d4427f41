package balancer_test

import (
	"sync"
	"testing"
	"time"

	"gw/balancer"
)

// Picks, orders and state updates from many goroutines (run under -race).
// Round robin keeps its exact share under contention.
func TestConcurrent(t *testing.T) {
	c := balancer.DefaultCooldown()
	c.Enabled = true
	reg := balancer.NewRegistry()
	for _, s := range balancer.Strategies() {
		ts := weighted(1, 3, 2, 2)
		for i := range ts {
			ts[i].Cooldown = &c
		}
		g, err := balancer.NewGroup(ts, balancer.Options{Strategy: s, Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		const workers, picks = 8, 800
		var wg sync.WaitGroup
		var mu sync.Mutex
		hits := make([]int, len(ts))
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := &balancer.Request{Key: []byte{byte(w)}}
				var out []int
				local := make([]int, len(ts))
				for k := range picks {
					i := g.Pick(req)
					local[i]++
					g.Acquire(i)
					out = g.Order(req, out)
					g.Observe(i, time.Duration(k+1)*time.Microsecond)
					if k%100 == 99 {
						g.Trip(3, t0, balancer.Failure{Status: 503}) // target 3 only: the others stay usable
						req.Skip = g.MarkCooling(req.Skip[:0], t0)
					}
					g.Release(i)
				}
				mu.Lock()
				for i, n := range local {
					hits[i] += n
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
		for i := range ts {
			if n := g.State(i).InFlight(); n != 0 {
				t.Fatalf("%s: target %d: %d in flight after all Releases", s, i, n)
			}
			g.State(i).ResetCooldown()
		}
		if s == balancer.StrategyRoundRobin {
			total := 0
			for _, n := range hits {
				total += n
			}
			if total != workers*picks {
				t.Fatalf("round_robin: %d picks; want %d", total, workers*picks)
			}
		}
	}
}
