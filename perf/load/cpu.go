package load

import "time"

// cpuTime is the CPU time the process has used.
type cpuTime struct {
	user, sys time.Duration
}

func (c cpuTime) sub(o cpuTime) cpuTime {
	return cpuTime{user: c.user - o.user, sys: c.sys - o.sys}
}
