//go:build !unix

package upstream

import "time"

// readIdle runs the idle hook before every read that reaches the
// connection: without a non-blocking read it cannot tell whether the read
// would wait.
func (c *Conn) readIdle(p []byte) (int, error) {
	if idle := c.onIdle; idle != nil && !idle() {
		return 0, ErrCallerGone
	}
	if c.gap > 0 {
		if err := c.SetReadDeadline(time.Now().Add(c.gap)); err != nil {
			return 0, err
		}
	}
	return c.Conn.Read(p)
}

func (c *Conn) rawRead(uintptr) bool { return true }

// deferWrites: without raw reads a request is written when it is written.
const deferWrites = false

func (c *Conn) sendAndRead(p []byte) (int, error) {
	if err := c.flush(); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}
func (c *Conn) sendRead(uintptr) bool { return true }
