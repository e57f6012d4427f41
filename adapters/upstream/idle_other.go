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
