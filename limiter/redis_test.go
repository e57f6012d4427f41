package limiter_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gw/limiter"
	"gw/limiter/circuit"
	"gw/limiter/redistest"
)

// newRedisLimiter is one gw process: its own Limiter and connection on a
// shared Redis.
func newRedisLimiter(t testing.TB, c limiter.Clock, addr string) (*limiter.Limiter, *testLogger) {
	t.Helper()
	log := &testLogger{}
	l := limiter.New(limiter.Config{
		Clock:  c,
		Logger: log,
		Redis: &limiter.RedisConfig{
			Addr:      addr,
			KeyPrefix: "test:",
			Timing:    circuit.Timing{Timeout: 500 * time.Millisecond, DialTimeout: time.Second, FailureThreshold: 3},
		},
	})
	t.Cleanup(l.Close)
	if l.State() != limiter.StateConnected {
		t.Fatalf("state %s; want connected to %s", l.State(), addr)
	}
	return l, log
}

// TestRedisTwoReplicasExact: two limiters on one Redis admit exactly the
// limit under concurrent load, and refused requests charge no window.
func TestRedisTwoReplicasExact(t *testing.T) {
	srv := redistest.Start(t)
	c := newClock(t0.Add(10 * time.Second))
	l1, _ := newRedisLimiter(t, c, srv.Addr())
	l2, _ := newRedisLimiter(t, c, srv.Addr())

	const limit = 500
	var admitted, local atomic.Int64
	var wg sync.WaitGroup
	for _, l := range []*limiter.Limiter{l1, l2} {
		for g := 0; g < 32; g++ {
			wg.Add(1)
			go func(l *limiter.Limiter) {
				defer wg.Done()
				var r limiter.Reservation
				for i := 0; i < 40; i++ {
					r.Reset()
					r.Add(modelM, limiter.RPM, 1_000)
					r.Add(keyA, limiter.RPM, limit)
					r.Add(keyA, limiter.RPD, 100_000)
					if l.Reserve(&r, 0).Allowed {
						admitted.Add(1)
					}
					if !r.Shared() {
						local.Add(1)
					}
				}
			}(l)
		}
	}
	wg.Wait()
	if n := local.Load(); n != 0 {
		t.Fatalf("%d reservations fell back to local counting", n)
	}
	if got := admitted.Load(); got != limit {
		t.Fatalf("admitted %d across two replicas; want exactly %d", got, limit)
	}
	// modelM was charged only by the admitted requests.
	d, _ := reserve(l2, 0, lim{modelM, limiter.RPM, 1_000})
	if d.Requests.Remaining != 1_000-limit-1 {
		t.Fatalf("modelM remaining %d; want %d (a refused request charged it)", d.Requests.Remaining, 1_000-limit-1)
	}
	if d.Requests.Reset != 50*time.Second {
		t.Fatalf("reset %s; want 50s", d.Requests.Reset)
	}
}

func TestRedisTokensAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	c := newClock(t0.Add(10 * time.Second))
	l1, _ := newRedisLimiter(t, c, srv.Addr())
	l2, _ := newRedisLimiter(t, c, srv.Addr())
	tpm := lim{keyA, limiter.TPM, 1000}

	_, r1 := reserve(l1, 600, tpm)
	if d, _ := reserve(l2, 500, tpm); d.Allowed || d.Remaining != 400 {
		t.Fatalf("got %+v; want refused with 400 remaining", d)
	}
	l1.Settle(r1, 100) // over-estimate: 500 back
	d, r2 := reserve(l2, 500, tpm)
	if !d.Allowed || d.Tokens.Remaining != 400 {
		t.Fatalf("got %+v; want admitted with 400 remaining", d)
	}
	l2.Settle(r2, 900) // under-estimate: 400 more; 1000 used
	if d, _ := reserve(l1, 0, tpm); d.Allowed {
		t.Fatal("an exhausted shared window admitted a zero estimate")
	}
	l2.Settle(r2, 0) // idempotent

	// Settled after the window ended: refunds dropped, extra tokens go to
	// the current window.
	c.Set(t0.Add(2*time.Minute - time.Second))
	_, r1 = reserve(l1, 100, tpm)
	_, r2 = reserve(l2, 100, tpm)
	c.Add(2 * time.Second)
	l1.Settle(r1, 400) // +300 into the new window
	l2.Settle(r2, 0)   // -100 from the old window: dropped
	if d, _ := reserve(l2, 701, tpm); d.Allowed {
		t.Fatal("701 admitted; want 300 spilled into the current window")
	}
	if d, _ := reserve(l2, 700, tpm); !d.Allowed {
		t.Fatal("700 refused with 700 left")
	}
}

// TestRedisKillDegradesAndReattaches: Redis dies under load; callers see no
// error and no refusal (limits are high), counting goes local per replica,
// and restarting Redis reattaches.
func TestRedisKillDegradesAndReattaches(t *testing.T) {
	srv := redistest.Start(t)
	c := newClock(t0.Add(10 * time.Second))
	l1, log1 := newRedisLimiter(t, c, srv.Addr())
	l2, _ := newRedisLimiter(t, c, srv.Addr())
	high := lim{keyA, limiter.RPM, 1 << 40 / 2}

	stop := make(chan struct{})
	var refused, shared, local atomic.Int64
	var wg sync.WaitGroup
	for _, l := range []*limiter.Limiter{l1, l2} {
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(l *limiter.Limiter) {
				defer wg.Done()
				var r limiter.Reservation
				for {
					select {
					case <-stop:
						return
					default:
					}
					r.Reset()
					r.Add(high.s, high.k, high.max)
					r.Add(keyA, limiter.TPM, 1<<39)
					if !l.Reserve(&r, 10).Allowed {
						refused.Add(1)
					}
					if r.Shared() {
						shared.Add(1)
					} else {
						local.Add(1)
					}
					l.Settle(&r, 5)
				}
			}(l)
		}
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("timed out waiting for %s (l1 %s, l2 %s)", what, l1.State(), l2.State())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("shared traffic", func() bool { return shared.Load() > 100 })
	srv.Kill()
	waitFor("open circuits", func() bool {
		return l1.State() == limiter.StateCircuitOpen && l2.State() == limiter.StateCircuitOpen
	})
	localBefore := local.Load()
	waitFor("local traffic", func() bool { return local.Load() > localBefore+100 })
	close(stop)
	wg.Wait()
	if n := refused.Load(); n != 0 {
		t.Fatalf("%d requests refused while Redis died; want none", n)
	}
	if w, _ := log1.counts(); w != 1 {
		t.Fatalf("%d warnings on l1; want 1 when the circuit opened", w)
	}

	// Degraded: each replica enforces the limit alone.
	rpm := lim{modelM, limiter.RPM, 5}
	for _, l := range []*limiter.Limiter{l1, l2} {
		n := 0
		for i := 0; i < 10; i++ {
			if d, r := reserve(l, 0, rpm); d.Allowed {
				n++
				if r.Shared() {
					t.Fatal("shared while the circuit is open")
				}
			}
		}
		if n != 5 {
			t.Fatalf("degraded replica admitted %d; want 5", n)
		}
	}

	// A probe while Redis is still down keeps the circuit open.
	c.Add(30 * time.Second)
	l1.Poll()
	if l1.State() != limiter.StateCircuitOpen {
		t.Fatalf("state %s; want circuit_open while Redis is down", l1.State())
	}

	srv.Restart()
	c.Add(30 * time.Second)
	for _, l := range []*limiter.Limiter{l1, l2} {
		l.Poll()
		if l.State() != limiter.StateConnected {
			t.Fatalf("state %s after Redis came back; want connected", l.State())
		}
	}
	if _, info := log1.counts(); info != 1 {
		t.Fatalf("%d info lines on l1; want the reattach line", info)
	}
	// Shared again: both replicas see one counter (Redis restarted empty).
	for i := 0; i < 5; i++ {
		l := []*limiter.Limiter{l1, l2}[i%2]
		if d, r := reserve(l, 0, lim{modelM, limiter.RPH, 5}); !d.Allowed || !r.Shared() {
			t.Fatalf("request %d: allowed=%v shared=%v; want a shared admission", i, d.Allowed, r.Shared())
		}
	}
	if d, _ := reserve(l2, 0, lim{modelM, limiter.RPH, 5}); d.Allowed {
		t.Fatal("the sixth request across replicas was admitted")
	}
}

// TestRedisUnreachableAtStartup: no server yet; the limiter starts
// degraded and attaches once one answers.
func TestRedisUnreachableAtStartup(t *testing.T) {
	srv := redistest.Start(t)
	addr := srv.Addr()
	srv.Kill()
	c := newClock(t0)
	log := &testLogger{}
	l := limiter.New(limiter.Config{
		Clock:  c,
		Logger: log,
		Redis:  &limiter.RedisConfig{Addr: addr, Timing: circuit.Timing{DialTimeout: 500 * time.Millisecond}},
	})
	defer l.Close()
	if l.State() != limiter.StateCircuitOpen {
		t.Fatalf("state %s; want circuit_open", l.State())
	}
	if d, r := reserve(l, 0, lim{keyA, limiter.RPM, 1}); !d.Allowed || r.Shared() {
		t.Fatal("want a local admission")
	}
	srv.Restart()
	c.Add(30 * time.Second)
	l.Poll()
	if l.State() != limiter.StateConnected {
		t.Fatalf("state %s; want connected", l.State())
	}
	if d, r := reserve(l, 0, lim{keyA, limiter.RPM, 1}); !d.Allowed || !r.Shared() {
		t.Fatal("want a shared admission after attaching")
	}
}

// TestRedisBackgroundReattach: the real background loop (system clock,
// short probe interval) reattaches on its own.
func TestRedisBackgroundReattach(t *testing.T) {
	srv := redistest.Start(t)
	l := limiter.New(limiter.Config{
		Logger: &testLogger{},
		Redis: &limiter.RedisConfig{
			Addr:   srv.Addr(),
			Timing: circuit.Timing{FailureThreshold: 1, ProbeInterval: 100 * time.Millisecond},
		},
	})
	defer l.Close()
	srv.Kill()
	reserve(l, 0, lim{keyA, limiter.RPM, 100})
	if l.State() != limiter.StateCircuitOpen {
		t.Fatalf("state %s; want circuit_open", l.State())
	}
	srv.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for l.State() != limiter.StateConnected {
		if time.Now().After(deadline) {
			t.Fatalf("state %s 10s after Redis came back; want connected", l.State())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRedisReattachUsesNoBrokenConnection: the client pipelines calls over
// several connections, chosen by the keys' slot. An outage breaks them all,
// but only those a call used notice it. A probe that PINGed the old client
// failed when its PING took a broken one (reattaching one probe interval
// late), and reattached with the others still broken, each failing a
// request afterwards. The probe's fresh client has none.
func TestRedisReattachUsesNoBrokenConnection(t *testing.T) {
	srv := redistest.Start(t)
	c := newClock(t0.Add(10 * time.Second))
	log := &testLogger{}
	l := limiter.New(limiter.Config{
		Clock:  c,
		Logger: log,
		Redis: &limiter.RedisConfig{
			Addr:   srv.Addr(),
			Timing: circuit.Timing{Timeout: 500 * time.Millisecond, DialTimeout: time.Second, FailureThreshold: 1},
		},
	})
	defer l.Close()
	subjects := make([]limiter.Subject, 16)
	for i := range subjects {
		subjects[i] = limiter.Subject{ID: "key-" + string(rune('a'+i))}
		if d, r := reserve(l, 0, lim{subjects[i], limiter.RPM, 100}); !d.Allowed || !r.Shared() {
			t.Fatalf("subject %d before the outage: allowed=%v shared=%v", i, d.Allowed, r.Shared())
		}
	}
	srv.Kill()
	if _, r := reserve(l, 0, lim{subjects[0], limiter.RPM, 100}); r.Shared() {
		t.Fatal("shared with Redis down")
	}
	if l.State() != limiter.StateCircuitOpen {
		t.Fatalf("state %s; want circuit_open after one failure", l.State())
	}
	srv.Restart()
	c.Add(30 * time.Second)
	l.Poll()
	if l.State() != limiter.StateConnected {
		t.Fatalf("state %s after Redis came back; want connected", l.State())
	}
	for i, s := range subjects {
		if d, r := reserve(l, 0, lim{s, limiter.RPM, 100}); !d.Allowed || !r.Shared() {
			t.Fatalf("subject %d after reattaching: allowed=%v shared=%v (state %s); want shared", i, d.Allowed, r.Shared(), l.State())
		}
	}
}
