package load

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock for one goroutine: sleep advances time by d plus overshoot.
type fakeClock struct {
	t         time.Duration
	overshoot time.Duration
	sleeps    []time.Duration
}

func (c *fakeClock) now() time.Duration { return c.t }

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) bool {
	c.sleeps = append(c.sleeps, d)
	c.t += d + c.overshoot
	return ctx.Err() == nil
}

func TestOpenLoopDue(t *testing.T) {
	f := func(rate float64, i int64, want time.Duration) {
		t.Helper()
		if got := (openLoop{rate: rate}).due(i); got != want {
			t.Fatalf("rate %g: due(%d) = %s; want %s", rate, i, got, want)
		}
	}
	f(500, 0, 0)
	f(500, 1, 2*time.Millisecond)
	f(500, 499, 998*time.Millisecond)
	f(3, 1, 333333333)
	f(3, 2, 666666666)
	// Computed from i, not accumulated: no drift after many intervals.
	f(3, 3000, 1000*time.Second)
	f(0.5, 3, 6*time.Second)
}

func TestOpenLoopTimetable(t *testing.T) {
	clk := &fakeClock{}
	s := openLoop{rate: 1000, end: 10 * time.Millisecond}
	var fired []time.Duration
	var sentAt []time.Duration
	n := s.run(context.Background(), clk, func(due time.Duration) bool {
		fired = append(fired, due)
		sentAt = append(sentAt, clk.now())
		return true
	})
	if n != 10 || len(fired) != 10 {
		t.Fatalf("fired %d (returned %d); want 10", len(fired), n)
	}
	for i, due := range fired {
		if want := time.Duration(i) * time.Millisecond; due != want || sentAt[i] != want {
			t.Fatalf("request %d: due %s, sent at %s; want both %s", i, due, sentAt[i], want)
		}
	}
	// Request 0 is due at once: 9 sleeps of one interval.
	if len(clk.sleeps) != 9 {
		t.Fatalf("got %d sleeps; want 9", len(clk.sleeps))
	}
}

// TestOpenLoopLateSends drives the real accounting (shard.record) with a fake clock: a
// full pool blocks request 3 for 4.5 intervals, so requests 3-7 go out late, back to
// back, and the timetable resumes at request 8.
func TestOpenLoopLateSends(t *testing.T) {
	clk := &fakeClock{}
	s := openLoop{rate: 1000, end: 10 * time.Millisecond}
	sh := newShard(true, false)
	i := 0
	var delays []time.Duration
	s.run(context.Background(), clk, func(due time.Duration) bool {
		if i == 3 {
			clk.t += 4500 * time.Microsecond // waiting for a free worker
		}
		i++
		smp := sample{origin: due, sent: clk.now()}
		smp.done = smp.sent + 100*time.Microsecond
		delays = append(delays, smp.sent-smp.origin)
		sh.record(&smp, nil, time.Millisecond)
		return true
	})
	want := []time.Duration{0, 0, 0, 4500, 3500, 2500, 1500, 500, 0, 0}
	for i := range want {
		if delays[i] != want[i]*time.Microsecond {
			t.Fatalf("delay of request %d = %s; want %s (all: %v)", i, delays[i], want[i]*time.Microsecond, delays)
		}
	}
	if sh.late != 4 {
		t.Fatalf("late sends = %d; want 4", sh.late)
	}
	p := percentiles(sh.sendDelay)
	if p.Count != 10 || !near(float64(p.Max), 4500) || !near(p.Mean, 1250) {
		t.Fatalf("send delay = %+v; want count 10, max ~4500, mean ~1250", p)
	}
	// Latency counts from the due time, so the wait is in it.
	if l := percentiles(sh.latency); !near(float64(l.Max), 4600) {
		t.Fatalf("latency max = %d; want ~4600", l.Max)
	}
}

// TestOpenLoopCatchUp: when a sleep overshoots, the overdue requests go out back to back
// without sleeping, and the timetable is not shifted.
func TestOpenLoopCatchUp(t *testing.T) {
	clk := &fakeClock{overshoot: 2500 * time.Microsecond}
	s := openLoop{rate: 1000, end: 8 * time.Millisecond}
	var sent []time.Duration
	s.run(context.Background(), clk, func(due time.Duration) bool {
		sent = append(sent, clk.now()-due)
		return true
	})
	// Request 1 is due at 1 ms; the sleep ends at 3.5 ms. Requests 2 and 3 are then
	// overdue; request 4 needs a 0.5 ms sleep that ends at 6.5 ms, and so on.
	want := []time.Duration{0, 2500, 1500, 500, 2500, 1500, 500, 2500}
	if len(sent) != len(want) {
		t.Fatalf("fired %d; want %d", len(sent), len(want))
	}
	for i := range want {
		if sent[i] != want[i]*time.Microsecond {
			t.Fatalf("delays = %v; want %v µs", sent, want)
		}
	}
	if len(clk.sleeps) != 3 {
		t.Fatalf("got %d sleeps; want 3", len(clk.sleeps))
	}
}

func TestOpenLoopStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := openLoop{rate: 1000, end: time.Hour}
	n := s.run(ctx, &fakeClock{}, func(time.Duration) bool {
		cancel()
		return true
	})
	if n != 1 {
		t.Fatalf("fired %d after cancel; want 1", n)
	}
	// fire returning false (the pool gave up) stops the run too.
	n = s.run(context.Background(), &fakeClock{}, func(time.Duration) bool { return false })
	if n != 0 {
		t.Fatalf("counted %d refused requests; want 0", n)
	}
}

func TestPool(t *testing.T) {
	done := make(chan struct{})
	var spawned []time.Duration
	p := newPool(2, done, func(due time.Duration) { spawned = append(spawned, due) })
	if !p.fire(1) || !p.fire(2) {
		t.Fatal("fire failed")
	}
	if len(spawned) != 2 || p.n != 2 {
		t.Fatalf("spawned %v; want [1 2]", spawned)
	}

	// At max, fire waits for a worker to park.
	var wg sync.WaitGroup
	var got time.Duration
	wg.Go(func() { got = <-p.work })
	if !p.fire(3) {
		t.Fatal("fire failed")
	}
	wg.Wait()
	if got != 3 || len(spawned) != 2 {
		t.Fatalf("worker got %d, spawned %v; want 3 and no new worker", got, spawned)
	}

	// Done releases a blocked fire.
	close(done)
	if p.fire(5) {
		t.Fatal("fire succeeded with no worker and done closed")
	}
}

// near reports whether got is within 0.2% of want (HdrHistogram keeps 3 digits).
func near(got, want float64) bool {
	return math.Abs(got-want) <= 0.002*want
}

func TestRealClock(t *testing.T) {
	clk := newRealClock()
	defer clk.close()
	for _, d := range []time.Duration{300 * time.Microsecond, 3 * time.Millisecond} {
		start := clk.now()
		if !clk.sleep(context.Background(), d) {
			t.Fatal("sleep returned false with a live context")
		}
		// Never early; how late depends on the machine, so it is not checked.
		if slept := clk.now() - start; slept < d {
			t.Fatalf("slept %s; want >= %s", slept, d)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if clk.sleep(ctx, time.Hour) {
		t.Fatal("sleep returned true with a done context")
	}
}
