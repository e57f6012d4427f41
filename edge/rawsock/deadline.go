package rawsock

import (
	"sync"
	"time"
)

// Deadlines are armed lazily and with slack.
//
// Arming a socket deadline is a runtime timer update under the poller's
// lock, and servers set them all the time: fasthttp sets three read
// deadlines per keep-alive request (idle, header, body) and its client two
// (write, read), most of which no read ever waits under. Profiled under
// load that was 3 % of gw's CPU. A Conn records the deadline it is asked
// for and arms it only before a read (write) starts, and only when the
// armed one does not already fit: it arms t plus a slack of 1/64 of the
// time left (at most maxSlack), so the same timeout set again by the next
// requests on the connection fits without a new timer update. A deadline
// therefore fires no earlier than asked and at most 1/64 of its duration
// later; a deadline in the past or now (an abort) has no slack. Set while
// a read (write) is in progress, a deadline is armed at once, so a blocked
// call is woken as with net.Conn.
const maxSlack = 250 * time.Millisecond

// deadline is one direction's wanted and armed deadline (under Conn.dmu).
type deadline struct {
	want, armed time.Time // zero: none
	slack       time.Duration
	busy        bool // a read (write) is in progress
}

// deadlines holds both directions' states.
type deadlines struct {
	mu     sync.Mutex
	rd, wd deadline
}

func slackFor(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	d := time.Until(t) >> 6
	return min(max(d, 0), maxSlack)
}

// fits reports whether the armed deadline serves the wanted one.
func (d *deadline) fits() bool {
	if d.want.IsZero() {
		return d.armed.IsZero()
	}
	return !d.armed.IsZero() && !d.armed.Before(d.want) && !d.armed.After(d.want.Add(d.slack))
}

// target is the deadline to arm for the wanted one.
func (d *deadline) target() time.Time {
	if d.want.IsZero() {
		return d.want
	}
	return d.want.Add(d.slack)
}

func (c *Conn) SetReadDeadline(t time.Time) error { return c.setDeadline(false, t) }

func (c *Conn) SetWriteDeadline(t time.Time) error { return c.setDeadline(true, t) }

func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

func (c *Conn) dir(write bool) *deadline {
	if write {
		return &c.dl.wd
	}
	return &c.dl.rd
}

func (c *Conn) setDeadline(write bool, t time.Time) error {
	c.dl.mu.Lock()
	defer c.dl.mu.Unlock()
	d := c.dir(write)
	d.want, d.slack = t, slackFor(t)
	if !d.busy || d.fits() {
		return nil
	}
	return c.armLocked(write, d)
}

// begin marks a read (write) in progress and arms its deadline if the armed
// one does not fit, before the call can wait or fail on it.
func (c *Conn) begin(write bool) error {
	c.dl.mu.Lock()
	defer c.dl.mu.Unlock()
	d := c.dir(write)
	d.busy = true
	if d.fits() {
		return nil
	}
	return c.armLocked(write, d)
}

func (c *Conn) end(write bool) {
	c.dl.mu.Lock()
	c.dir(write).busy = false
	c.dl.mu.Unlock()
}

func (c *Conn) armLocked(write bool, d *deadline) error {
	t := d.target()
	var err error
	if write {
		err = c.Conn.SetWriteDeadline(t)
	} else {
		err = c.Conn.SetReadDeadline(t)
	}
	if err != nil {
		return err
	}
	d.armed = t
	return nil
}
