package limiter_test

import (
	"sync/atomic"
	"testing"
	"time"

	"gw/limiter"
	"gw/limiter/circuit"
)

func newShared(t *testing.T, c *fakeClock, fb *limiter.FakeBackend, dialDown *atomic.Bool) (*limiter.Limiter, *testLogger) {
	t.Helper()
	log := &testLogger{}
	cfg := limiter.WithFake(limiter.Config{
		Clock:  c,
		Logger: log,
		Redis:  &limiter.RedisConfig{Addr: "fake", Timing: circuit.Timing{FailureThreshold: 3}},
	}, fb, dialDown)
	l := limiter.New(cfg)
	t.Cleanup(l.Close)
	return l, log
}

func TestSharedStateNames(t *testing.T) {
	f := func(s limiter.State, want string) {
		t.Helper()
		if s.String() != want {
			t.Fatalf("got %q; want %q", s.String(), want)
		}
	}
	f(limiter.StateLocal, "local")
	f(limiter.StateConnected, "connected")
	f(limiter.StateDegraded, "degraded")
	f(limiter.StateCircuitOpen, "circuit_open")
	if got := newLimiter(t, newClock(t0)).State(); got != limiter.StateLocal {
		t.Fatalf("state %s without Redis; want local", got)
	}
}

func TestSharedCircuit(t *testing.T) {
	c := newClock(t0)
	fb := &limiter.FakeBackend{}
	l, log := newShared(t, c, fb, nil)
	rpm := lim{keyA, limiter.RPM, 1000}
	state := func(want limiter.State) {
		t.Helper()
		if got := l.State(); got != want {
			t.Fatalf("state %s; want %s", got, want)
		}
	}
	state(limiter.StateConnected)
	if d, r := reserve(l, 0, rpm); !d.Allowed || !r.Shared() {
		t.Fatal("a connected limiter did not count in the shared store")
	}

	// Failures below the threshold: degraded, counted locally, no error.
	fb.Down.Store(true)
	for i := 0; i < 2; i++ {
		if d, r := reserve(l, 0, rpm); !d.Allowed || r.Shared() {
			t.Fatalf("failure %d: got allowed=%v shared=%v; want a local admission", i, d.Allowed, r.Shared())
		}
		state(limiter.StateDegraded)
	}
	// A success in between resets the streak.
	fb.Down.Store(false)
	reserve(l, 0, rpm)
	state(limiter.StateConnected)
	fb.Down.Store(true)
	reserve(l, 0, rpm)
	reserve(l, 0, rpm)
	state(limiter.StateDegraded)
	if w, _ := log.counts(); w != 0 {
		t.Fatalf("%d warnings before the circuit opened; want 0", w)
	}
	reserve(l, 0, rpm) // third consecutive failure
	state(limiter.StateCircuitOpen)
	if w, _ := log.counts(); w != 1 {
		t.Fatalf("%d warnings when the circuit opened; want 1", w)
	}

	// Open: the store is skipped even once it answers again.
	fb.Down.Store(false)
	before := fb.Reserves.Load()
	if d, r := reserve(l, 0, rpm); !d.Allowed || r.Shared() || fb.Reserves.Load() != before {
		t.Fatal("an open circuit still called the store")
	}

	// No probe before 30 s.
	fb.Down.Store(true)
	c.Add(29 * time.Second)
	l.Poll()
	if fb.Pings.Load() != 0 {
		t.Fatal("probed before 30s")
	}
	// A failed probe keeps it open for another 30 s.
	c.Add(time.Second)
	l.Poll()
	if fb.Pings.Load() != 1 {
		t.Fatalf("pings %d; want 1", fb.Pings.Load())
	}
	state(limiter.StateCircuitOpen)
	c.Add(29 * time.Second)
	l.Poll()
	if fb.Pings.Load() != 1 {
		t.Fatal("probed again before another 30s")
	}
	// A successful probe closes the circuit.
	fb.Down.Store(false)
	c.Add(time.Second)
	l.Poll()
	state(limiter.StateConnected)
	if _, info := log.counts(); info != 1 {
		t.Fatalf("%d info lines; want the reattach line", info)
	}
	if d, r := reserve(l, 0, rpm); !d.Allowed || !r.Shared() {
		t.Fatal("not shared after reattaching")
	}
}

func TestSharedWarningRepeatsEveryFiveMinutes(t *testing.T) {
	c := newClock(t0)
	fb := &limiter.FakeBackend{}
	l, log := newShared(t, c, fb, nil)
	fb.Down.Store(true)
	for i := 0; i < 3; i++ {
		reserve(l, 0, lim{keyA, limiter.RPM, 10})
	}
	if w, _ := log.counts(); w != 1 {
		t.Fatalf("%d warnings; want 1", w)
	}
	// Poll every 10 s for 14m59s: probes fail, warnings at 5 and 10 min.
	for i := 0; i < 89; i++ {
		c.Add(10 * time.Second)
		l.Poll()
	}
	if w, _ := log.counts(); w != 3 {
		t.Fatalf("%d warnings after 14m50s; want 3", w)
	}
	c.Add(10 * time.Second)
	l.Poll()
	if w, _ := log.counts(); w != 4 {
		t.Fatalf("%d warnings after 15m; want 4", w)
	}
	if l.State() != limiter.StateCircuitOpen {
		t.Fatal("the circuit closed while the store was down")
	}
}

func TestSharedUnreachableAtStartup(t *testing.T) {
	c := newClock(t0)
	fb := &limiter.FakeBackend{}
	var dialDown atomic.Bool
	dialDown.Store(true)
	l, log := newShared(t, c, fb, &dialDown)
	if l.State() != limiter.StateCircuitOpen {
		t.Fatalf("state %s; want circuit_open after a failed startup dial", l.State())
	}
	if w, _ := log.counts(); w != 1 {
		t.Fatalf("%d warnings; want the startup warning", w)
	}
	// Local counting meanwhile: the limit holds per replica.
	rpm := lim{keyA, limiter.RPM, 2}
	reserve(l, 0, rpm)
	reserve(l, 0, rpm)
	if d, _ := reserve(l, 0, rpm); d.Allowed {
		t.Fatal("degraded counting did not enforce the limit")
	}
	c.Add(30 * time.Second)
	l.Poll() // redial fails
	if l.State() != limiter.StateCircuitOpen {
		t.Fatal("reattached without a store")
	}
	dialDown.Store(false)
	c.Add(30 * time.Second)
	l.Poll()
	if l.State() != limiter.StateConnected {
		t.Fatalf("state %s; want connected after the store answered", l.State())
	}
	if d, r := reserve(l, 0, lim{keyA, limiter.RPM, 2}); !d.Allowed || !r.Shared() {
		t.Fatal("not counting in the shared store after reattaching")
	}
}

func TestSharedSettle(t *testing.T) {
	c := newClock(t0)
	fb := &limiter.FakeBackend{}
	l, _ := newShared(t, c, fb, nil)
	tpm := lim{keyA, limiter.TPM, 1000}
	_, r := reserve(l, 800, tpm)
	l.Settle(r, 100)
	if d, _ := reserve(l, 900, tpm); !d.Allowed {
		t.Fatal("the shared refund was not applied")
	}
	// A settlement that fails counts as a store failure and is dropped.
	_, r = reserve(l, 0, lim{modelM, limiter.TPM, 1000})
	fb.Down.Store(true)
	l.Settle(r, 500)
	if l.State() != limiter.StateDegraded {
		t.Fatalf("state %s; want degraded after a failed settle", l.State())
	}
	// A reservation counted locally (store down) settles locally.
	d, r := reserve(l, 300, tpm)
	if !d.Allowed || r.Shared() {
		t.Fatal("want a local admission while the store is down")
	}
	l.Settle(r, 0)
	if d, _ := reserve(l, 1000, tpm); !d.Allowed {
		t.Fatal("the local refund was not applied")
	}
}

func TestCloseStopsProbing(t *testing.T) {
	c := newClock(t0)
	fb := &limiter.FakeBackend{}
	l, _ := newShared(t, c, fb, nil)
	l.Close()
	l.Close()
	c.Add(time.Hour)
	l.Poll()
	if fb.Pings.Load() != 0 {
		t.Fatal("probed after Close")
	}
	if d, r := reserve(l, 0, lim{keyA, limiter.RPM, 1}); !d.Allowed || r.Shared() {
		t.Fatal("want local counting after Close")
	}
}
