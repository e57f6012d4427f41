//go:build !linux

package load

import "time"

// fineSleeper is time.Sleep off Linux; see sleep_linux.go.
type fineSleeper struct{}

func newFineSleeper() *fineSleeper { return &fineSleeper{} }

func (*fineSleeper) sleep(d time.Duration) { time.Sleep(d) }

func (*fineSleeper) close() {}
