package usagetest

import (
	"sync"
	"time"
)

// FakeClock is a usage.Clock whose After returns at once and moves the
// clock forward by exactly the wait, so retry rules measured in minutes
// run in milliseconds.
type FakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

// NewFakeClock starts at start.
func NewFakeClock(start time.Time) *FakeClock { return &FakeClock{now: start} }

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After advances the clock by d and fires at once.
func (c *FakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.waits = append(c.waits, d)
	now := c.now
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- now
	return ch
}

// Waits returns every wait asked for so far.
func (c *FakeClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}
