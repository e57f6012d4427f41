package limiter_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gw/limiter"
)

// t0 is the start of a day (so of every window kind): 2026-01-01 UTC.
var t0 = time.Unix(1_767_225_600, 0)

type fakeClock struct{ ns atomic.Int64 }

func newClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.Set(t)
	return c
}

func (c *fakeClock) Now() time.Time        { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Set(t time.Time)       { c.ns.Store(t.UnixNano()) }
func (c *fakeClock) Add(d time.Duration)   { c.ns.Add(int64(d)) }
func (c *fakeClock) Since0() time.Duration { return time.Duration(c.ns.Load() - t0.UnixNano()) }

type testLogger struct {
	mu          sync.Mutex
	warns, info []string
}

func (l *testLogger) Warn(msg string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.warns = append(l.warns, msg)
}

func (l *testLogger) Info(msg string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.info = append(l.info, msg)
}

func (l *testLogger) counts() (warns, info int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.warns), len(l.info)
}

func newLimiter(t testing.TB, c limiter.Clock) *limiter.Limiter {
	t.Helper()
	l := limiter.New(limiter.Config{Clock: c, Logger: &testLogger{}})
	t.Cleanup(l.Close)
	return l
}

type lim struct {
	s   limiter.Subject
	k   limiter.Kind
	max int64
}

// reserve reserves tokens against the given windows with a fresh
// Reservation and returns both.
func reserve(l *limiter.Limiter, tokens int64, ls ...lim) (limiter.Decision, *limiter.Reservation) {
	r := &limiter.Reservation{}
	for _, x := range ls {
		r.Add(x.s, x.k, x.max)
	}
	return l.Reserve(r, tokens), r
}

var (
	keyA   = limiter.Subject{ID: "key-a"}
	modelM = limiter.Subject{ID: "model-m"}
)

func TestWindowBoundaries(t *testing.T) {
	f := func(k limiter.Kind) {
		t.Helper()
		c := newClock(t0)
		l := newLimiter(t, c)
		w := k.Window()
		cost := int64(1)
		if k.Tokens() {
			cost = 10
		}
		x := lim{keyA, k, 2 * cost}

		// The last millisecond of window 0.
		c.Set(t0.Add(w - time.Millisecond))
		for i := 0; i < 2; i++ {
			if d, _ := reserve(l, cost, x); !d.Allowed {
				t.Fatalf("%s: request %d refused at the window end", k, i)
			}
		}
		d, _ := reserve(l, cost, x)
		if d.Allowed || d.Kind != k || d.Subject != keyA || d.Limit != 2*cost || d.Remaining != 0 {
			t.Fatalf("%s: third request: got %+v; want refused by %s, remaining 0", k, d, k)
		}
		if d.RetryAfter != time.Millisecond || d.Reset != time.Millisecond {
			t.Fatalf("%s: retry after %s, reset %s; want 1ms", k, d.RetryAfter, d.Reset)
		}
		// Exactly at the boundary: a fresh window.
		c.Add(time.Millisecond)
		d, _ = reserve(l, cost, x)
		if !d.Allowed {
			t.Fatalf("%s: refused at the start of window 1", k)
		}
		q := d.Requests
		if k.Tokens() {
			q = d.Tokens
		}
		if q.Limit != 2*cost || q.Remaining != cost || q.Reset != w {
			t.Fatalf("%s: quota %+v; want limit %d remaining %d reset %s", k, q, 2*cost, cost, w)
		}
		// The last nanosecond of window 1 still counts in window 1.
		c.Set(t0.Add(2*w - 1))
		if d, _ = reserve(l, cost, x); !d.Allowed {
			t.Fatalf("%s: refused in the last ns of window 1", k)
		}
		if d, _ = reserve(l, cost, x); d.Allowed || d.RetryAfter != 1 || d.RetryAfterSeconds() != 1 {
			t.Fatalf("%s: got %+v; want refused with 1ns to go (retry-after 1s)", k, d)
		}
	}
	for k := limiter.RPS; k <= limiter.TPD; k++ {
		f(k)
	}
}

func TestWindowsAlignedToEpoch(t *testing.T) {
	c := newClock(t0.Add(59*time.Second + 500*time.Millisecond))
	l := newLimiter(t, c)
	d, _ := reserve(l, 0, lim{keyA, limiter.RPM, 10}, lim{keyA, limiter.RPD, 1000})
	// rpm (remaining 9) is the tightest request window; it ends at t0+60s.
	if d.Requests.Limit != 10 || d.Requests.Remaining != 9 || d.Requests.Reset != 500*time.Millisecond {
		t.Fatalf("requests quota %+v; want 10/9/500ms", d.Requests)
	}
	if d.Tokens.Limit != 0 {
		t.Fatalf("tokens quota %+v; want none", d.Tokens)
	}
}

func TestWindowKind(t *testing.T) {
	f := func(w time.Duration, tokens bool, want limiter.Kind, ok bool) {
		t.Helper()
		got, gotOK := limiter.WindowKind(w, tokens)
		if got != want || gotOK != ok {
			t.Fatalf("WindowKind(%s, %v): got %s %v; want %s %v", w, tokens, got, gotOK, want, ok)
		}
	}
	f(time.Second, false, limiter.RPS, true)
	f(time.Minute, true, limiter.TPM, true)
	f(time.Hour, true, limiter.TPH, true)
	f(24*time.Hour, false, limiter.RPD, true)
	f(2*time.Minute, false, 0, false)
	if limiter.TPD.String() != "tpd" || limiter.Concurrency.Window() != 0 || !limiter.RPH.Requests() || limiter.RPH.Tokens() {
		t.Fatal("kind names or families are wrong")
	}
}

func TestLimitsMatchesRateLimitFields(t *testing.T) {
	// admin/resources.RateLimit has the same fields in the same order;
	// a struct of that shape converts to Limits.
	type rateLimit struct {
		RPS, RPM, RPH, RPD int64
		TPM, TPD           int64
		Concurrency        int64
	}
	l := limiter.Limits(rateLimit{RPM: 5, TPD: 7, Concurrency: 2})
	var r limiter.Reservation
	r.AddLimits(keyA, l)
	if r.Len() != 2 {
		t.Fatalf("AddLimits added %d windows; want 2 (rpm, tpd)", r.Len())
	}
}

func TestAllOrNothing(t *testing.T) {
	c := newClock(t0)
	l := newLimiter(t, c)
	rpm := lim{keyA, limiter.RPM, 10}
	rps := lim{modelM, limiter.RPS, 1}
	if d, _ := reserve(l, 0, rpm, rps); !d.Allowed {
		t.Fatal("first request refused")
	}
	d, r := reserve(l, 0, rpm, rps)
	if d.Allowed || d.Kind != limiter.RPS || d.Subject != modelM {
		t.Fatalf("second request: got %+v; want refused by model rps", d)
	}
	l.Settle(r, 0) // no-op on a refusal
	// The refused request left key rpm untouched: this one is its second.
	d, _ = reserve(l, 0, rpm)
	if !d.Allowed || d.Requests.Remaining != 8 {
		t.Fatalf("got %+v; want allowed with 8 remaining", d)
	}
}

func TestRetryAfterCoversEveryRefusingWindow(t *testing.T) {
	c := newClock(t0.Add(30 * time.Second))
	l := newLimiter(t, c)
	rps := lim{keyA, limiter.RPS, 1}
	rpm := lim{keyA, limiter.RPM, 1}
	reserve(l, 0, rps, rpm)
	d, _ := reserve(l, 0, rps, rpm)
	if d.Allowed || d.Kind != limiter.RPM || d.RetryAfter != 30*time.Second {
		t.Fatalf("got %+v; want refused by rpm, retry after 30s", d)
	}
	if d.Requests.Limit != 1 || d.Requests.Remaining != 0 || d.Requests.Reset != 30*time.Second {
		t.Fatalf("requests quota %+v; want the tripped rpm window", d.Requests)
	}
}

func TestAddKeepsSmallerLimitOfOneCounter(t *testing.T) {
	c := newClock(t0)
	l := newLimiter(t, c)
	var r limiter.Reservation
	r.Add(keyA, limiter.RPM, 10)
	r.Add(keyA, limiter.RPM, 1)
	r.Add(keyA, limiter.RPM, 5)
	r.Add(keyA, limiter.RPM, 0)     // unlimited: ignored
	r.Add(keyA, limiter.TPD, 1<<62) // beyond the counters' range: ignored
	if r.Len() != 1 {
		t.Fatalf("len %d; want 1", r.Len())
	}
	if d := l.Reserve(&r, 0); !d.Allowed || d.Requests.Limit != 1 {
		t.Fatalf("got %+v; want allowed with limit 1", d)
	}
	if d, _ := reserve(l, 0, lim{keyA, limiter.RPM, 1}); d.Allowed {
		t.Fatal("the counter was charged twice or not at all")
	}
}

func TestScopesSeparateCounters(t *testing.T) {
	l := newLimiter(t, newClock(t0))
	p1 := limiter.Subject{Scope: "policy-1", ID: "team-t"}
	p2 := limiter.Subject{Scope: "policy-2", ID: "team-t"}
	bare := limiter.Subject{ID: "team-t"}
	for _, s := range []limiter.Subject{p1, p2, bare} {
		if d, _ := reserve(l, 0, lim{s, limiter.RPM, 1}); !d.Allowed {
			t.Fatalf("%+v: refused; scopes must not share counters", s)
		}
	}
	if got := string(p1.AppendKey(nil)); got != "policy-1:team-t" {
		t.Fatalf("key %q; want policy-1:team-t", got)
	}
}

func TestEmptyReservation(t *testing.T) {
	l := newLimiter(t, newClock(t0))
	var r limiter.Reservation
	d := l.Reserve(&r, 500)
	if !d.Allowed || d.Requests.Limit != 0 || d.Tokens.Limit != 0 {
		t.Fatalf("got %+v; want allowed without quotas", d)
	}
	l.Settle(&r, 10)
}

func TestReservationMisuse(t *testing.T) {
	l := newLimiter(t, newClock(t0))
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if p := recover(); p == nil || !strings.HasPrefix(fmt.Sprint(p), "BUG: ") {
				t.Fatalf("%s: got panic %v; want a BUG panic", name, p)
			}
		}()
		f()
	}
	var r limiter.Reservation
	r.Add(keyA, limiter.RPM, 5)
	l.Reserve(&r, 0)
	mustPanic("Reserve twice", func() { l.Reserve(&r, 0) })
	mustPanic("Add after Reserve", func() { r.Add(keyA, limiter.RPS, 1) })
	mustPanic("Add Concurrency", func() {
		var r2 limiter.Reservation
		r2.Add(keyA, limiter.Concurrency, 1)
	})
	r.Reset()
	if r.Len() != 0 {
		t.Fatal("Reset kept entries")
	}
	r.Add(keyA, limiter.RPS, 1)
	if d := l.Reserve(&r, 0); !d.Allowed {
		t.Fatal("a reset reservation was refused")
	}
}

func TestManyWindowsSpill(t *testing.T) {
	l := newLimiter(t, newClock(t0))
	var r limiter.Reservation
	for i := 0; i < 40; i++ {
		r.Add(limiter.Subject{ID: fmt.Sprint("s", i)}, limiter.RPM, int64(i+1))
	}
	if d := l.Reserve(&r, 0); !d.Allowed || d.Requests.Remaining != 0 {
		t.Fatalf("got %+v; want allowed with the s0 window exhausted", d)
	}
	r.Reset()
	for i := 0; i < 40; i++ {
		r.Add(limiter.Subject{ID: fmt.Sprint("s", i)}, limiter.RPM, int64(i+1))
	}
	if d := l.Reserve(&r, 0); d.Allowed || d.Subject.ID != "s0" {
		t.Fatalf("got %+v; want refused by s0", d)
	}
	// Nothing was charged: s1 (limit 2) still has one left.
	if d, _ := reserve(l, 0, lim{limiter.Subject{ID: "s1"}, limiter.RPM, 2}); !d.Allowed {
		t.Fatal("a refused reservation charged s1")
	}
}

func TestTokensOverEstimate(t *testing.T) {
	c := newClock(t0)
	l := newLimiter(t, c)
	tpm := lim{keyA, limiter.TPM, 1000}
	d, r := reserve(l, 600, tpm)
	if !d.Allowed || d.Tokens.Remaining != 400 {
		t.Fatalf("got %+v; want allowed with 400 left", d)
	}
	if d, _ := reserve(l, 500, tpm); d.Allowed || d.Kind != limiter.TPM || d.Remaining != 400 {
		t.Fatalf("got %+v; want refused with 400 remaining", d)
	}
	l.Settle(r, 100) // 500 come back
	if d, _ := reserve(l, 900, tpm); !d.Allowed || d.Tokens.Remaining != 0 {
		t.Fatalf("got %+v; want 900 admitted after the refund", d)
	}
}

func TestTokensUnderEstimate(t *testing.T) {
	c := newClock(t0)
	l := newLimiter(t, c)
	tpm := lim{keyA, limiter.TPM, 1000}
	_, r := reserve(l, 100, tpm)
	l.Settle(r, 700) // 600 more than estimated
	if d, _ := reserve(l, 400, tpm); d.Allowed {
		t.Fatal("400 admitted over 700 used of 1000")
	}
	if d, _ := reserve(l, 300, tpm); !d.Allowed {
		t.Fatal("300 refused with 300 left")
	}
	// Over the limit after a large under-estimate: even 0 is refused.
	_, r = reserve(l, 0, lim{modelM, limiter.TPM, 10})
	l.Settle(r, 50)
	if d, _ := reserve(l, 0, lim{modelM, limiter.TPM, 10}); d.Allowed || d.Remaining != 0 {
		t.Fatalf("got %+v; want an exhausted window to refuse a zero estimate", d)
	}
}

func TestTokensSettleZeroOnFailureAndIdempotent(t *testing.T) {
	c := newClock(t0)
	l := newLimiter(t, c)
	tpd := lim{keyA, limiter.TPD, 1000}
	rpm := lim{keyA, limiter.RPM, 100}
	_, r := reserve(l, 800, tpd, rpm)
	l.Settle(r, 0)
	l.Settle(r, 0)   // second call: no-op
	l.Settle(r, 900) // too late: no-op
	d, _ := reserve(l, 1000, tpd, rpm)
	if !d.Allowed {
		t.Fatalf("got %+v; want the full budget back after Settle(0)", d)
	}
	// The request window keeps its count.
	if d.Requests.Remaining != 98 {
		t.Fatalf("rpm remaining %d; want 98", d.Requests.Remaining)
	}
}

func TestTokensEstimateAboveLimit(t *testing.T) {
	l := newLimiter(t, newClock(t0))
	d, r := reserve(l, 5000, lim{keyA, limiter.TPM, 1000})
	if d.Allowed || d.Limit >= r.Tokens() {
		t.Fatalf("got %+v; want refused with Limit < estimate", d)
	}
	// Absurd estimates clamp instead of overflowing.
	if d, _ := reserve(l, 1<<62, lim{keyA, limiter.TPM, 1000}); d.Allowed {
		t.Fatal("a huge estimate was admitted")
	}
	if d, _ := reserve(l, -5, lim{keyA, limiter.TPM, 1000}); !d.Allowed {
		t.Fatal("a negative estimate (clamped to 0) was refused")
	}
}

func TestTokensSettleAcrossWindowEnd(t *testing.T) {
	c := newClock(t0.Add(59 * time.Second))
	l := newLimiter(t, c)
	tpm := lim{keyA, limiter.TPM, 1000}

	// Over-estimate settled after the window ended: the refund is dropped
	// and the new window starts empty.
	_, r := reserve(l, 600, tpm)
	c.Add(2 * time.Second)
	l.Settle(r, 100)
	if d, _ := reserve(l, 1000, tpm); !d.Allowed {
		t.Fatal("the new window did not start empty")
	}

	// Under-estimate settled after the window ended: the extra tokens are
	// charged to the current window.
	c.Set(t0.Add(3*time.Minute - time.Second))
	_, r = reserve(l, 100, tpm)
	c.Add(2 * time.Second)
	l.Settle(r, 400)
	if d, _ := reserve(l, 800, tpm); d.Allowed {
		t.Fatal("800 admitted; want 300 spilled into the current window")
	}
	if d, _ := reserve(l, 700, tpm); !d.Allowed || d.Tokens.Remaining != 0 {
		t.Fatalf("got %+v; want 700 admitted to fill the window", d)
	}
}

func TestConcurrency(t *testing.T) {
	l := newLimiter(t, newClock(t0))
	var s1, s2, s3 limiter.Slot
	if d := l.Acquire(&s1, keyA, 2); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("first: %+v", d)
	}
	if d := l.Acquire(&s2, keyA, 2); !d.Allowed {
		t.Fatal("second refused")
	}
	d := l.Acquire(&s3, keyA, 2)
	if d.Allowed || d.Kind != limiter.Concurrency || d.Limit != 2 || d.RetryAfter != time.Second {
		t.Fatalf("third: got %+v; want refused by concurrency, retry after 1s", d)
	}
	if s3.Held() {
		t.Fatal("a refused Acquire holds a slot")
	}
	s3.Release() // empty: no-op
	s1.Release()
	s1.Release() // double release: harmless
	if got := l.InFlight(keyA); got != 1 {
		t.Fatalf("in flight %d; want 1 after a double release", got)
	}
	if d := l.Acquire(&s1, keyA, 2); !d.Allowed {
		t.Fatal("the released slot was not reusable")
	}
	if d := l.Acquire(&s3, keyA, 2); d.Allowed {
		t.Fatal("a double release freed two slots")
	}
	s1.Release()
	s2.Release()
	if got := l.InFlight(keyA); got != 0 {
		t.Fatalf("in flight %d; want 0", got)
	}
	// Unlimited: allowed, nothing held.
	var s4 limiter.Slot
	if d := l.Acquire(&s4, keyA, 0); !d.Allowed || s4.Held() {
		t.Fatal("unlimited concurrency must allow without holding a slot")
	}
}

func TestConcurrencyReleasedOnPanic(t *testing.T) {
	l := newLimiter(t, newClock(t0))
	handler := func() {
		var s limiter.Slot
		if d := l.Acquire(&s, keyA, 1); !d.Allowed {
			t.Fatal("refused")
		}
		defer s.Release()
		panic("handler failed")
	}
	func() {
		defer func() { _ = recover() }()
		handler()
	}()
	if got := l.InFlight(keyA); got != 0 {
		t.Fatalf("in flight %d after a panic; want 0", got)
	}
	var s limiter.Slot
	if d := l.Acquire(&s, keyA, 1); !d.Allowed {
		t.Fatal("the slot leaked through the panic")
	}
	s.Release()
}

func TestConcurrencyEveryExitPath(t *testing.T) {
	l := newLimiter(t, newClock(t0))
	// early return, error return, released early then deferred, and
	// concurrent releases of one slot.
	paths := []func(s *limiter.Slot) error{
		func(s *limiter.Slot) error { return nil },
		func(s *limiter.Slot) error { return fmt.Errorf("upstream failed") },
		func(s *limiter.Slot) error { s.Release(); return nil },
		func(s *limiter.Slot) error {
			var wg sync.WaitGroup
			for i := 0; i < 8; i++ {
				wg.Add(1)
				go func() { defer wg.Done(); s.Release() }()
			}
			wg.Wait()
			return nil
		},
	}
	for i, p := range paths {
		func() {
			var s limiter.Slot
			if d := l.Acquire(&s, keyA, 1); !d.Allowed {
				t.Fatalf("path %d: refused", i)
			}
			defer s.Release()
			_ = p(&s)
		}()
		if got := l.InFlight(keyA); got != 0 {
			t.Fatalf("path %d: in flight %d; want 0", i, got)
		}
	}
}

func TestConcurrencyExactUnderLoad(t *testing.T) {
	l := newLimiter(t, newClock(t0))
	const max = 3
	var cur, peak atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				var s limiter.Slot
				if l.Acquire(&s, keyA, max).Allowed {
					n := cur.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					cur.Add(-1)
					s.Release()
				}
			}
		}()
	}
	wg.Wait()
	if p := peak.Load(); p > max {
		t.Fatalf("peak in flight %d; want <= %d", p, max)
	}
	if got := l.InFlight(keyA); got != 0 {
		t.Fatalf("in flight %d; want 0", got)
	}
}

// TestExactUnderLoad: concurrent requests charged to two subjects, where
// the second has the smaller limit, so refusals after the pre-check roll
// back the first. Exactly the limit is admitted and no rollback leaks.
func TestExactUnderLoad(t *testing.T) {
	l := newLimiter(t, newClock(t0))
	wide := lim{keyA, limiter.RPM, 10_000}
	narrow := lim{modelM, limiter.RPM, 777}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r limiter.Reservation
			for i := 0; i < 200; i++ {
				r.Reset()
				r.Add(wide.s, wide.k, wide.max)
				r.Add(narrow.s, narrow.k, narrow.max)
				if l.Reserve(&r, 0).Allowed {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got := admitted.Load(); got != 777 {
		t.Fatalf("admitted %d; want 777", got)
	}
	d, _ := reserve(l, 0, wide)
	if want := int64(10_000 - 778); d.Requests.Remaining != want {
		t.Fatalf("wide window remaining %d; want %d (a rollback leaked)", d.Requests.Remaining, want)
	}
}

func TestTokensExactUnderLoad(t *testing.T) {
	l := newLimiter(t, newClock(t0))
	tpm := lim{keyA, limiter.TPM, 10_000}
	var used atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var r limiter.Reservation
			for i := 0; i < 300; i++ {
				r.Reset()
				r.Add(tpm.s, tpm.k, tpm.max)
				est := int64(50 + (g*7+i)%50)
				if l.Reserve(&r, est).Allowed {
					actual := est - int64(i%3)*10 // over-estimates by 0, 10 or 20
					used.Add(actual)
					l.Settle(&r, actual)
				}
			}
		}(g)
	}
	wg.Wait()
	if u := used.Load(); u > 10_000 {
		t.Fatalf("used %d tokens; want <= 10000", u)
	}
	d, _ := reserve(l, 0, tpm)
	if want := 10_000 - used.Load(); d.Tokens.Remaining != want {
		t.Fatalf("remaining %d; want %d (settlements must be exact)", d.Tokens.Remaining, want)
	}
}

func TestSweep(t *testing.T) {
	c := newClock(t0)
	l := limiter.New(limiter.Config{Clock: c, SweepInterval: time.Second})
	defer l.Close()
	_, r := reserve(l, 100, lim{keyA, limiter.RPM, 10}, lim{keyA, limiter.TPM, 1000})
	var s limiter.Slot
	l.Acquire(&s, modelM, 1)

	c.Add(30 * time.Second)
	l.Poll()
	if n := l.Subjects(); n != 2 {
		t.Fatalf("subjects %d; want 2 (windows live)", n)
	}
	c.Add(31 * time.Second) // every window of keyA ended
	l.Poll()
	if n := l.Subjects(); n != 1 {
		t.Fatalf("subjects %d; want 1 (modelM holds a slot)", n)
	}
	// A late settlement of a swept subject still charges extra tokens to
	// the current window.
	l.Settle(r, 600)
	if d, _ := reserve(l, 600, lim{keyA, limiter.TPM, 1000}); d.Allowed {
		t.Fatal("500 extra tokens were lost with the swept subject")
	}
	s.Release()
	c.Add(2 * time.Minute)
	l.Poll()
	if n := l.Subjects(); n != 0 {
		t.Fatalf("subjects %d; want 0", n)
	}
}

// TestSweepRace: writers and a sweeper race on subjects whose windows just
// went stale; every window must admit exactly its limit (a write lost to a
// swept subject would admit more).
func TestSweepRace(t *testing.T) {
	c := newClock(t0)
	l := newLimiter(t, c)
	subjects := []limiter.Subject{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	const max = 50
	for phase := 0; phase < 40; phase++ {
		c.Set(t0.Add(time.Duration(phase) * time.Second))
		var admitted [3]atomic.Int64
		stop := make(chan struct{})
		sweeper := make(chan struct{})
		go func() {
			defer close(sweeper)
			for {
				select {
				case <-stop:
					return
				default:
					l.Sweep()
				}
			}
		}()
		var wg sync.WaitGroup
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				var r limiter.Reservation
				var s limiter.Slot
				for i := 0; i < 40; i++ {
					j := (g + i) % 3
					r.Reset()
					r.Add(subjects[j], limiter.RPS, max)
					if l.Reserve(&r, 0).Allowed {
						admitted[j].Add(1)
					}
					if l.Acquire(&s, subjects[j], 2).Allowed {
						s.Release()
					}
				}
			}(g)
		}
		wg.Wait()
		close(stop)
		<-sweeper
		for j := range admitted {
			if got := admitted[j].Load(); got != max {
				t.Fatalf("phase %d subject %d: admitted %d; want %d", phase, j, got, max)
			}
		}
	}
}

func TestCountersSurviveAcrossReservations(t *testing.T) {
	// Counters are keyed by subject: limits may change (a reload) and the
	// count carries over.
	l := newLimiter(t, newClock(t0))
	for i := 0; i < 5; i++ {
		reserve(l, 0, lim{keyA, limiter.RPM, 10})
	}
	if d, _ := reserve(l, 0, lim{keyA, limiter.RPM, 5}); d.Allowed {
		t.Fatal("a lowered limit did not see the existing count")
	}
	if d, _ := reserve(l, 0, lim{keyA, limiter.RPM, 20}); !d.Allowed || d.Requests.Remaining != 14 {
		t.Fatalf("got %+v; want 14 remaining under a raised limit", d)
	}
}

func TestSystemClockFollowsWallClock(t *testing.T) {
	l := limiter.New(limiter.Config{})
	defer l.Close()
	for i := 0; i < 3; i++ {
		if i > 0 {
			time.Sleep(20 * time.Millisecond)
			l.Poll()
		}
		before := time.Now().UnixNano()
		got := l.NowNs()
		after := time.Now().UnixNano()
		if got < before-int64(time.Millisecond) || got > after+int64(time.Millisecond) {
			t.Fatalf("clock %d outside [%d, %d]", got, before, after)
		}
	}
}
