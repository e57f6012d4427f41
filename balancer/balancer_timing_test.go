package balancer_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"gw/balancer"
)

// Sink keeps benchmark results alive.
var Sink atomic.Int64

var benchSizes = []int{2, 16, 256}

// benchGroup builds n targets with weights 1..4, costs and observed
// latencies varied, in one tier.
func benchGroup(b *testing.B, strategy string, n int, opt balancer.Options) *balancer.Group {
	ts := make([]balancer.Target, n)
	for i := range ts {
		ts[i] = balancer.Target{ID: fmt.Sprintf("model-%d", i), Weight: int64(i%4 + 1), Cost: float64((i * 7) % 11)}
	}
	opt.Strategy = strategy
	g, err := balancer.NewGroup(ts, opt)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		g.Observe(i, time.Duration(i%13+1)*time.Millisecond)
	}
	return g
}

// BenchmarkPick is the per-request pick (Order's first entry) for every
// strategy and tier size.
func BenchmarkPick(b *testing.B) {
	keys := randomKeys(1024)
	for _, s := range balancer.Strategies() {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/%d", s, n), func(b *testing.B) {
				g := benchGroup(b, s, n, balancer.Options{})
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					req := &balancer.Request{}
					sum, k := 0, 0
					for pb.Next() {
						req.Key = keys[k&1023]
						k++
						sum += g.Pick(req)
					}
					Sink.Add(int64(sum))
				})
			})
		}
	}
}

// BenchmarkOrder is the full attempt order (routing.max_fallbacks unset).
func BenchmarkOrder(b *testing.B) {
	keys := randomKeys(1024)
	for _, s := range balancer.Strategies() {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/%d", s, n), func(b *testing.B) {
				g := benchGroup(b, s, n, balancer.Options{})
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					req := &balancer.Request{}
					var out []int
					sum, k := 0, 0
					for pb.Next() {
						req.Key = keys[k&1023]
						k++
						out = g.Order(req, out)
						sum += out[0]
					}
					Sink.Add(int64(sum))
				})
			})
		}
	}
}

// BenchmarkPickNarrowed picks with one target skipped and a tagged request
// on a tagged group: the narrowing work and the strategies' slow paths
// (round_robin's mutex, consistent_hash's fallback when its pick is out).
func BenchmarkPickNarrowed(b *testing.B) {
	keys := randomKeys(1024)
	for _, s := range balancer.Strategies() {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/%d", s, n), func(b *testing.B) {
				ts := make([]balancer.Target, n)
				for i := range ts {
					ts[i] = balancer.Target{ID: fmt.Sprintf("model-%d", i), Weight: int64(i%4 + 1),
						Tags: []string{[]string{"eu", "us"}[i%2], "default"}}
				}
				g, err := balancer.NewGroup(ts, balancer.Options{Strategy: s})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					req := &balancer.Request{Tags: []byte("eu, gpu"), Skip: skip(0)}
					sum, k := 0, 0
					for pb.Next() {
						req.Key = keys[k&1023]
						k++
						sum += g.Pick(req)
					}
					Sink.Add(int64(sum))
				})
			})
		}
	}
}

// BenchmarkRoundRobinPath compares the lock-free precomputed sequence with
// nginx's loop under a per-tier mutex, both over the whole tier.
func BenchmarkRoundRobinPath(b *testing.B) {
	for _, path := range []string{"sequence", "mutex"} {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/%d", path, n), func(b *testing.B) {
				g := benchGroup(b, balancer.StrategyRoundRobin, n, balancer.Options{})
				if path == "mutex" {
					balancer.DisableRoundRobinSequence(g)
				}
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					req := &balancer.Request{}
					sum := 0
					for pb.Next() {
						sum += g.Pick(req)
					}
					Sink.Add(int64(sum))
				})
			})
		}
	}
}

// BenchmarkAtomicAdd is the baseline for the sequence path: one shared
// counter incremented by every core.
func BenchmarkAtomicAdd(b *testing.B) {
	var c atomic.Uint64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Add(1)
		}
	})
	Sink.Add(int64(c.Load()))
}

// byteKeySource returns preallocated values, as a request context does.
type byteKeySource struct{ apiKey []byte }

func (*byteKeySource) Header(string) []byte { return nil }
func (*byteKeySource) Cookie(string) []byte { return nil }
func (k *byteKeySource) APIKey() []byte     { return k.apiKey }
func (*byteKeySource) ClientIP() []byte     { return nil }

func BenchmarkHashKey(b *testing.B) {
	src := &byteKeySource{apiKey: []byte("3b1f0c5e9a7d4e2f8c6b0a1d9e7f5c3b")}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		n := 0
		for pb.Next() {
			n += len(balancer.HashKey(nil, src))
		}
		Sink.Add(int64(n))
	})
}

func BenchmarkMarkCooling(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c := balancer.DefaultCooldown()
			c.Enabled = true
			ts := make([]balancer.Target, n)
			for i := range ts {
				ts[i] = balancer.Target{ID: fmt.Sprint(i), Cooldown: &c}
			}
			g, _ := balancer.NewGroup(ts, balancer.Options{})
			now := time.Now()
			g.Trip(0, now, balancer.Failure{Status: 429})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var s balancer.Set
				n := 0
				for pb.Next() {
					s = g.MarkCooling(s[:0], now)
					n += len(s)
				}
				Sink.Add(int64(n))
			})
		})
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	g := benchGroup(b, balancer.StrategyLeastBusy, 16, balancer.Options{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			g.Acquire(i & 15)
			g.Release(i & 15)
			i++
		}
	})
}

func BenchmarkObserve(b *testing.B) {
	g := benchGroup(b, balancer.StrategyLeastLatency, 16, balancer.Options{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			g.Observe(i&15, time.Duration(i&1023)*time.Microsecond)
			i++
		}
	})
}
