package limiter_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"gw/limiter"
)

// reserveWindow charges one request to a window of length w.
func reserveWindow(l *limiter.Limiter, s limiter.Subject, w time.Duration, max int64) (limiter.Decision, *limiter.Reservation) {
	r := &limiter.Reservation{}
	r.AddWindow(s, w, max)
	return l.Reserve(r, 0), r
}

// TestWindowAnyLength: windows of any whole number of seconds are fixed,
// aligned to the epoch, exact, and report the time to their end.
func TestWindowAnyLength(t *testing.T) {
	for _, secs := range []int64{2, 7, 90, 1000, 3 * 86400, 1 << 32} {
		t.Run(fmt.Sprint(secs), func(t *testing.T) {
			w := time.Duration(secs) * time.Second
			// Start 1 s into a window of this length.
			start := time.Unix((t0.Unix()/secs+1)*secs+1, 0)
			c := newClock(start)
			l := newLimiter(t, c)
			for i := 0; i < 3; i++ {
				d, _ := reserveWindow(l, keyA, w, 3)
				if !d.Allowed || d.Requests.Remaining != int64(2-i) || d.Requests.Limit != 3 {
					t.Fatalf("request %d: %+v", i, d)
				}
				if want := w - time.Second; d.Requests.Reset != want {
					t.Fatalf("reset %s; want %s", d.Requests.Reset, want)
				}
			}
			d, _ := reserveWindow(l, keyA, w, 3)
			if d.Allowed || d.Kind != limiter.RPW || d.RetryAfter != w-time.Second {
				t.Fatalf("fourth: %+v", d)
			}
			// Another length is another subject's business; another subject
			// has its own counter.
			if d, _ := reserveWindow(l, modelM, w, 3); !d.Allowed {
				t.Fatal("modelM shares keyA's counter")
			}
			c.Add(w - time.Second) // the next window starts
			if d, _ := reserveWindow(l, keyA, w, 3); !d.Allowed || d.Requests.Remaining != 2 || d.Requests.Reset != w {
				t.Fatalf("next window: %+v", d)
			}
		})
	}
}

// TestAddWindowStandardLengths: the four standard lengths are the standard
// kinds (one counter with Add).
func TestAddWindowStandardLengths(t *testing.T) {
	l := newLimiter(t, newClock(t0))
	reserve(l, 0, lim{keyA, limiter.RPM, 2})
	d, _ := reserveWindow(l, keyA, time.Minute, 2)
	if !d.Allowed || d.Requests.Remaining != 0 {
		t.Fatalf("got %+v; want the RPM counter (1 remaining -> 0)", d)
	}
	if d, _ := reserveWindow(l, keyA, time.Minute, 2); d.Allowed || d.Kind != limiter.RPM {
		t.Fatalf("got %+v; want an RPM refusal", d)
	}
}

func TestAddWindowMisuse(t *testing.T) {
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
	mustPanic("zero", func() { r.AddWindow(keyA, 0, 1) })
	mustPanic("fraction", func() { r.AddWindow(keyA, 1500*time.Millisecond, 1) })
	mustPanic("too long", func() { r.AddWindow(keyA, limiter.MaxWindow+time.Second, 1) })
	mustPanic("Add RPW", func() { r.Add(keyA, limiter.RPW, 1) })
	r.AddWindow(keyA, 7*time.Second, 1)
	mustPanic("two lengths", func() { r.AddWindow(keyA, 9*time.Second, 1) })
	mustPanic("longest, second length", func() { r.AddWindow(keyA, limiter.MaxWindow, 1) })
	r.AddWindow(modelM, limiter.MaxWindow, 1) // the longest window, on another subject
	if r.Len() != 2 {
		t.Fatalf("len %d; want 2", r.Len())
	}
}

// TestWindowSweep: an RPW subject is swept once its window ended.
func TestWindowSweep(t *testing.T) {
	c := newClock(t0)
	l := limiter.New(limiter.Config{Clock: c, SweepInterval: time.Second})
	defer l.Close()
	reserveWindow(l, keyA, 7*time.Second, 5)
	l.Poll()
	if n := l.Subjects(); n != 1 {
		t.Fatalf("subjects %d; want 1 (window live)", n)
	}
	c.Add(8 * time.Second)
	l.Poll()
	if n := l.Subjects(); n != 0 {
		t.Fatalf("subjects %d; want 0 after the window ended", n)
	}
}
