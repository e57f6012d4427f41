package load

import (
	"context"
	"time"
)

// clock is the time source of a run: offsets from the run's origin. Tests inject a fake.
type clock interface {
	// now returns the time elapsed since the origin. It is safe for concurrent use.
	now() time.Duration
	// sleep pauses for d and reports true, or returns false as soon as ctx is done.
	// Only the dispatcher goroutine calls it.
	sleep(ctx context.Context, d time.Duration) bool
}

// realClock reads the monotonic clock.
type realClock struct {
	origin time.Time
	timer  *time.Timer // reused by sleep, so a pause allocates nothing
	fine   *fineSleeper
}

// newRealClock returns a clock whose origin is now. Call close when done.
func newRealClock() *realClock {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &realClock{origin: time.Now(), timer: t, fine: newFineSleeper()}
}

func (c *realClock) close() { c.fine.close() }

func (c *realClock) now() time.Duration { return time.Since(c.origin) }

// fineSleep is the last stretch of a pause, slept with a fineSleeper (see
// sleep_linux.go for why a Go timer is not precise enough).
const fineSleep = 2 * time.Millisecond

func (c *realClock) sleep(ctx context.Context, d time.Duration) bool {
	wake := c.now() + d
	if d > fineSleep {
		// Slow path - long pauses wait on a cancellable Go timer first. Since Go 1.23
		// Reset on a stopped or fired timer leaves no stale value in C.
		c.timer.Reset(d - fineSleep)
		select {
		case <-c.timer.C:
		case <-ctx.Done():
			c.timer.Stop()
			return false
		}
	}
	if left := wake - c.now(); left > 0 {
		c.fine.sleep(left)
	}
	return ctx.Err() == nil
}

// openLoop is the timetable of an open-loop run: request i is due at i/rate after the
// origin, for every i with a due time before end. Due times are computed from i, never
// accumulated, so rounding does not drift over long runs.
type openLoop struct {
	rate float64       // requests per second, > 0
	end  time.Duration // no request is due at or after end
}

// due returns the due time of request i.
func (s openLoop) due(i int64) time.Duration {
	return time.Duration(float64(i) * float64(time.Second) / s.rate)
}

// run hands every request to fire at its due time, in order, and returns how many it
// handed out. It sleeps until a request is due; when it is behind (a sleep overshot, or
// fire blocked because the pool was full) it fires the overdue requests back to back
// without sleeping, and each of them records its own delay. It stops early, returning
// the count so far, when ctx is done or fire returns false.
func (s openLoop) run(ctx context.Context, clk clock, fire func(due time.Duration) bool) int64 {
	done := ctx.Done()
	var i int64
	for ; ; i++ {
		due := s.due(i)
		if due >= s.end {
			return i
		}
		if wait := due - clk.now(); wait > 0 {
			if !clk.sleep(ctx, wait) {
				return i
			}
		} else {
			// Slow path - catching up never sleeps, so look at ctx here.
			select {
			case <-done:
				return i
			default:
			}
		}
		if !fire(due) {
			return i
		}
	}
}

// pool hands due times to parked workers and spawns a new worker when none is parked,
// up to max. Beyond max, fire blocks until a worker parks: the request then goes out
// late and its latency, counted from the due time, includes the wait.
//
// Only the dispatcher goroutine calls fire.
type pool struct {
	work  chan time.Duration // unbuffered: a send succeeds only into a parked worker
	done  <-chan struct{}
	spawn func(due time.Duration) // starts a worker that sends due, then parks on work
	n     int                     // workers spawned
	max   int
}

func newPool(maxWorkers int, done <-chan struct{}, spawn func(time.Duration)) *pool {
	return &pool{work: make(chan time.Duration), done: done, spawn: spawn, max: maxWorkers}
}

// fire gives due to a worker. It returns false if done closed while it waited.
func (p *pool) fire(due time.Duration) bool {
	// Fast path - a parked worker takes it.
	select {
	case p.work <- due:
		return true
	default:
	}
	if p.n < p.max {
		p.n++
		p.spawn(due)
		return true
	}
	// Slow path - every worker is busy: wait for one.
	select {
	case p.work <- due:
		return true
	case <-p.done:
		return false
	}
}

// close tells parked and future-parking workers to exit.
func (p *pool) close() { close(p.work) }
