package limiter_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/puzpuzpuz/xsync/v3"

	"gw/limiter"
	"gw/limiter/redistest"
)

var (
	sinkAllowed atomic.Int64
	benchKey    = limiter.Subject{ID: "1b4e28ba-2fa1-11d2-883f-0016d3cca427"}
	benchModel  = limiter.Subject{ID: "6ba7b810-9dad-11d1-80b4-00c04fd430c8"}
)

// Baselines: one plain atomic add (not a limit at all), an exact
// check-and-increment on one word (what a window costs without lookup and
// clock), and xsync's striped counter (cheap adds, but no exact check).

func BenchmarkAtomicInt64(b *testing.B) {
	var c atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Add(1)
		}
	})
	sinkAllowed.Add(c.Load())
}

func BenchmarkAtomicInt64CheckAndAdd(b *testing.B) {
	var c atomic.Int64
	const max = 1 << 62
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for {
				v := c.Load()
				if v >= max || c.CompareAndSwap(v, v+1) {
					break
				}
			}
		}
	})
	sinkAllowed.Add(c.Load())
}

func BenchmarkXsyncCounter(b *testing.B) {
	c := xsync.NewCounter()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Inc()
		}
	})
	sinkAllowed.Add(c.Value())
}

// BenchmarkLocalReserve: Reserve on the local store (map lookup, clock,
// check-and-increment, decision), 0 allocs.
func BenchmarkLocalReserve(b *testing.B) {
	run := func(name string, c limiter.Clock, perGoroutine bool) {
		b.Run(name, func(b *testing.B) {
			l := limiter.New(limiter.Config{Clock: c})
			defer l.Close()
			var ids atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				sub := benchKey
				if perGoroutine {
					sub = limiter.Subject{ID: benchKey.ID + strconv.FormatInt(ids.Add(1), 10)}
				}
				var r limiter.Reservation
				n := int64(0)
				for pb.Next() {
					r.Reset()
					r.Add(sub, limiter.RPM, 1<<38)
					if l.Reserve(&r, 0).Allowed {
						n++
					}
				}
				sinkAllowed.Add(n)
			})
		})
	}
	run("one-window/shared-subject/system-clock", nil, false)
	run("one-window/shared-subject/fixed-clock", newClock(t0), false)
	run("one-window/subject-per-goroutine/system-clock", nil, true)
	run("one-window/subject-per-goroutine/fixed-clock", newClock(t0), true)

	// An odd window length (RPW, limit-count's time_window 7).
	b.Run("one-window/rpw-7s/fixed-clock", func(b *testing.B) {
		l := limiter.New(limiter.Config{Clock: newClock(t0)})
		defer l.Close()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var r limiter.Reservation
			n := int64(0)
			for pb.Next() {
				r.Reset()
				r.AddWindow(benchKey, 7*time.Second, 1<<38)
				if l.Reserve(&r, 0).Allowed {
					n++
				}
			}
			sinkAllowed.Add(n)
		})
	})

	// A typical chat request: key rps/rpm/tpm/tpd and model rpm/tpm, then
	// Settle with the actual usage.
	b.Run("six-windows+settle/system-clock", func(b *testing.B) {
		l := limiter.New(limiter.Config{})
		defer l.Close()
		keyLimits := limiter.Limits{RPS: 1 << 30, RPM: 1 << 30, TPM: 1 << 38, TPD: 1 << 38}
		modelLimits := limiter.Limits{RPM: 1 << 30, TPM: 1 << 38}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var r limiter.Reservation
			for pb.Next() {
				r.Reset()
				r.AddLimits(benchKey, keyLimits)
				r.AddLimits(benchModel, modelLimits)
				l.Reserve(&r, 1024)
				l.Settle(&r, 700)
			}
		})
	})

	// Refused: the read-only pre-check path under overload.
	b.Run("refused/shared-subject/system-clock", func(b *testing.B) {
		l := limiter.New(limiter.Config{})
		defer l.Close()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var r limiter.Reservation
			for pb.Next() {
				r.Reset()
				r.Add(benchKey, limiter.RPD, 1)
				l.Reserve(&r, 0)
			}
		})
	})
}

func BenchmarkAcquireRelease(b *testing.B) {
	l := limiter.New(limiter.Config{})
	defer l.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var s limiter.Slot
		for pb.Next() {
			if l.Acquire(&s, benchKey, 1<<40).Allowed {
				s.Release()
			}
		}
	})
}

func BenchmarkAppendHeaders(b *testing.B) {
	l := limiter.New(limiter.Config{Clock: newClock(t0.Add(1500 * time.Millisecond))})
	defer l.Close()
	var r limiter.Reservation
	r.AddLimits(benchKey, limiter.Limits{RPM: 600, TPM: 200_000})
	d := l.Reserve(&r, 512)
	set := func(name, value []byte) {}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 0, 128)
		for pb.Next() {
			buf = d.AppendHeaders(buf[:0], set)
		}
	})
}

// BenchmarkRedisReserve: the shared path against a local redis-server.
// Concurrent callers are auto-pipelined by rueidis onto one connection;
// ops/s is the throughput of one gw process.
func BenchmarkRedisReserve(b *testing.B) {
	srv := redistest.Start(b)
	for _, par := range []int{1, 16, 64} {
		b.Run("goroutines-per-cpu="+strconv.Itoa(par), func(b *testing.B) {
			l := limiter.New(limiter.Config{Logger: &testLogger{}, Redis: &limiter.RedisConfig{Addr: srv.Addr()}})
			defer l.Close()
			if l.State() != limiter.StateConnected {
				b.Fatalf("state %s", l.State())
			}
			var fallbacks atomic.Int64
			b.SetParallelism(par)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var r limiter.Reservation
				for pb.Next() {
					r.Reset()
					r.AddLimits(benchKey, limiter.Limits{RPM: 1 << 38, TPM: 1 << 38})
					r.AddLimits(benchModel, limiter.Limits{RPM: 1 << 38})
					l.Reserve(&r, 1024)
					if !r.Shared() {
						fallbacks.Add(1)
					}
					l.Settle(&r, 700)
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			// Calls slower than Timeout (a loaded machine) fall back to
			// local counting; report them rather than fail.
			b.ReportMetric(float64(fallbacks.Load()), "fallbacks")
		})
	}
}
