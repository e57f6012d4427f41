package balancer

import (
	"math"
	"time"
)

// CooldownConfig is a direct model's cooldown block with defaults applied
// (see DefaultCooldown). Only Enabled switches cooldown on; the other fields
// are parameters.
type CooldownConfig struct {
	Enabled bool
	// Default is the cooldown when the failure carries no usable Retry-After.
	// 0 disables cooldown for the model entirely, Retry-After included.
	Default time.Duration
	// Max caps a cooldown taken from Retry-After (not Default).
	Max             time.Duration
	HonorRetryAfter bool
	// Statuses are the upstream statuses that trigger cooldown.
	Statuses    StatusSet
	OnTimeout   bool // an upstream timeout triggers cooldown
	OnTransport bool // a transport failure (dial, reset, TLS) triggers cooldown
}

// DefaultTriggerStatuses is cooldown.trigger_statuses when unset.
var DefaultTriggerStatuses = NewStatusSet(401, 408, 429, 500, 502, 503, 504)

// DefaultCooldown returns the spec defaults: disabled, 30 s, cap 600 s,
// Retry-After honoured, DefaultTriggerStatuses, timeouts and transport
// failures trigger.
func DefaultCooldown() CooldownConfig {
	return CooldownConfig{Default: 30 * time.Second, Max: 600 * time.Second, HonorRetryAfter: true,
		Statuses: DefaultTriggerStatuses, OnTimeout: true, OnTransport: true}
}

// Failure describes a failed upstream attempt.
type Failure struct {
	Status     int    // upstream HTTP status; 0 when none was received
	Timeout    bool   // the attempt timed out (no status)
	Transport  bool   // dial, TLS, reset or a cut body (no status)
	RetryAfter string // the raw Retry-After response header; "" if absent
}

// Triggers reports whether f trips the cooldown under c's trigger filters.
// A timeout or a transport failure is judged by its flag, anything else by
// its status.
func (c *CooldownConfig) Triggers(f Failure) bool {
	switch {
	case f.Timeout:
		return c.OnTimeout
	case f.Transport:
		return c.OnTransport
	}
	return c.Statuses.Has(f.Status)
}

// Trip starts or extends s's cooldown after failure f at now and returns the
// cooldown applied, 0 when none (disabled, Default 0, f not a trigger, or a
// usable Retry-After of 0 or a past date, which says "retry now").
//
// The duration is the Retry-After value capped by Max when c.HonorRetryAfter
// and f.RetryAfter parses (ParseRetryAfter), otherwise Default. An earlier,
// longer cooldown is never shortened.
func (s *State) Trip(now time.Time, f Failure, c *CooldownConfig) time.Duration {
	if c == nil || !c.Enabled || c.Default <= 0 || !c.Triggers(f) {
		return 0
	}
	d := c.Default
	if c.HonorRetryAfter && f.RetryAfter != "" {
		if ra, ok := ParseRetryAfter(f.RetryAfter, now); ok {
			d = min(ra, max(c.Max, 0))
		}
	}
	if d <= 0 {
		return 0
	}
	n := now.UnixNano()
	until := n + int64(d)
	if until < n { // overflow
		until = math.MaxInt64
	}
	for {
		old := s.until.Load()
		if old >= until || s.until.CompareAndSwap(old, until) {
			return d
		}
	}
}

// CoolingDown reports whether s is in cooldown at now. One atomic load.
func (s *State) CoolingDown(now time.Time) bool {
	return now.UnixNano() < s.until.Load()
}

// CooldownLeft returns the cooldown remaining at now, 0 when none.
func (s *State) CooldownLeft(now time.Time) time.Duration {
	return time.Duration(max(s.until.Load()-now.UnixNano(), 0))
}

// ResetCooldown ends any cooldown at once.
func (s *State) ResetCooldown() { s.until.Store(0) }

// maxRetryAfterSeconds bounds delay-seconds so the Duration cannot overflow.
const maxRetryAfterSeconds = math.MaxInt64 / int64(time.Second)

// ParseRetryAfter parses a Retry-After value (RFC 9110 §10.2.3): either
// delay-seconds (digits only) or an HTTP-date (IMF-fixdate, or the obsolete
// RFC 850 and asctime forms). A date yields its distance from now, 0 when it
// is past. ok is false for anything else, including signs, fractions and "".
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = trimOWS(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		var n int64
		for i := 0; i < len(v); i++ {
			c := v[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			if n < maxRetryAfterSeconds {
				n = n*10 + int64(c-'0')
			}
		}
		return time.Duration(min(n, maxRetryAfterSeconds)) * time.Second, true
	}
	for _, layout := range httpDateLayouts {
		if t, err := time.Parse(layout, v); err == nil {
			return max(t.Sub(now), 0), true
		}
	}
	return 0, false
}

// httpDateLayouts are the HTTP-date forms, preferred first (as net/http's
// ParseTime, without importing net/http into a leaf package).
var httpDateLayouts = [...]string{
	"Mon, 02 Jan 2006 15:04:05 GMT", // IMF-fixdate
	time.RFC850,
	time.ANSIC,
}

func trimOWS(v string) string {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}

// StatusSet is a set of HTTP status codes 0 to 639.
type StatusSet [10]uint64

// NewStatusSet returns the set of codes; codes out of range are ignored.
func NewStatusSet(codes ...int) StatusSet {
	var s StatusSet
	for _, c := range codes {
		s.Add(c)
	}
	return s
}

// Add adds code; codes out of range are ignored.
func (s *StatusSet) Add(code int) {
	if uint(code) < uint(len(s)*64) {
		s[code>>6] |= 1 << (uint(code) & 63)
	}
}

// Has reports whether code is in s.
func (s *StatusSet) Has(code int) bool {
	return uint(code) < uint(len(s)*64) && s[code>>6]&(1<<(uint(code)&63)) != 0
}
