//go:build !race

package limiter_test

import (
	"testing"
	"time"

	"gw/limiter"
)

// TestLocalAllocs guards the local hot path: a reused Reservation checked,
// charged and settled, a concurrency slot, and the headers allocate
// nothing. (Window rotation never allocates either: a window is one word.)
func TestLocalAllocs(t *testing.T) {
	c := newClock(t0)
	l := limiter.New(limiter.Config{Clock: c})
	defer l.Close()
	key := limiter.Subject{ID: "1b4e28ba-2fa1-11d2-883f-0016d3cca427"}
	model := limiter.Subject{ID: "6ba7b810-9dad-11d1-80b4-00c04fd430c8"}
	policy := limiter.Subject{Scope: "6ba7b811-9dad-11d1-80b4-00c04fd430c8", ID: "team-t"}
	var r limiter.Reservation
	var slot limiter.Slot
	var d limiter.Decision
	buf := make([]byte, 0, 256)
	set := func(name, value []byte) {}
	f := func(name string, fn func()) {
		t.Helper()
		fn() // create the subjects
		if n := testing.AllocsPerRun(1000, fn); n != 0 {
			t.Fatalf("%s: %v allocs per run; want 0", name, n)
		}
	}
	f("reserve+settle", func() {
		c.Add(time.Millisecond) // windows rotate now and then
		r.Reset()
		r.AddLimits(key, limiter.Limits{RPS: 1 << 30, RPM: 1 << 30, TPM: 1 << 38, TPD: 1 << 38})
		r.AddLimits(model, limiter.Limits{RPM: 1 << 30, TPM: 1 << 38})
		r.Add(policy, limiter.RPM, 1<<30)
		d = l.Reserve(&r, 512)
		l.Settle(&r, 300)
	})
	f("refused", func() {
		r.Reset()
		r.Add(key, limiter.RPM, 1)
		d = l.Reserve(&r, 0)
	})
	f("acquire+release", func() {
		d = l.Acquire(&slot, key, 8)
		slot.Release()
		slot.Release()
	})
	f("headers", func() {
		buf = d.AppendHeaders(buf[:0], set)
	})
}
