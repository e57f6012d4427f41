package balancer_test

import (
	"fmt"
	"time"

	"gw/balancer"
)

// The attempt loop of one request: pick, try, and on failure skip the target
// and pick again, which walks the top tier first and reaches the backup tier
// only when the tiers above are used up.
func Example() {
	reg := balancer.NewRegistry() // process-wide: outlives snapshots
	cd := balancer.DefaultCooldown()
	cd.Enabled = true
	g, err := balancer.NewGroup([]balancer.Target{
		{ID: "mdl_fast", Priority: 1, Cooldown: &cd},
		{ID: "mdl_cheap", Priority: 1, Cooldown: &cd},
		{ID: "mdl_backup", Priority: -1, Cooldown: &cd},
	}, balancer.Options{Strategy: balancer.StrategyFailover, Registry: reg})
	if err != nil {
		panic(err)
	}

	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	// An earlier request got a 429 from mdl_fast.
	g.Trip(0, now, balancer.Failure{Status: 429, RetryAfter: "20"})

	var req balancer.Request // pooled with the request context in the gateway
	req.Skip = g.MarkCooling(req.Skip[:0], now.Add(time.Second))
	for {
		i := g.Pick(&req)
		if i < 0 {
			fmt.Println("503: no usable target")
			return
		}
		g.Acquire(i)
		ok := g.Target(i).ID == "mdl_backup" // pretend only the backup answers
		g.Release(i)
		fmt.Println("tried", g.Target(i).ID, ok)
		if ok {
			g.Observe(i, 300*time.Millisecond)
			return
		}
		g.Trip(i, now, balancer.Failure{Status: 503})
		req.Skip = req.Skip.Add(i)
	}
	// Output:
	// tried mdl_cheap false
	// tried mdl_backup true
}
