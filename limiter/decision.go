package limiter

import (
	"strconv"
	"time"
)

// Quota describes one window for the OpenAI rate-limit headers.
type Quota struct {
	Limit     int64         // the window's limit; 0 when no window of this family applied
	Remaining int64         // limit minus the count, after this request when admitted
	Reset     time.Duration // until the window ends
}

// Decision is the outcome of Reserve or Acquire.
type Decision struct {
	Allowed bool
	// Unavailable: the shared store could not count this request and
	// RedisConfig.NoLocalFallback is set; nothing was counted and Allowed
	// is false. The caller decides whether the request passes.
	Unavailable bool

	// The tripped limit (refusals only). For windows it is the refusing
	// window that ends last, so RetryAfter covers every refusing window.
	Kind       Kind
	Subject    Subject
	Limit      int64
	Remaining  int64
	Reset      time.Duration // until the tripped window ends; 0 for Concurrency
	RetryAfter time.Duration // Reset for windows; Config.ConcurrencyRetryAfter for Concurrency

	// Requests and Tokens feed the x-ratelimit-*-requests and -tokens
	// headers: the window of each family with the fewest remaining (ties:
	// the one ending last), or the tripped window on a refusal.
	Requests, Tokens Quota
}

// finish records the outcome of a reserve and fills d.
func (r *Reservation) finish(d *Decision, nowNs int64, allowed bool) {
	if allowed {
		r.state = resHeld
	} else {
		r.state = resDone
	}
	r.decide(d, nowNs, allowed)
}

// decide fills d from the entry counts of r at nowNs.
func (r *Reservation) decide(d *Decision, nowNs int64, allowed bool) {
	*d = Decision{Allowed: allowed}
	var tripped *entry
	var trippedReset int64 = -1
	for i, n := 0, r.Len(); i < n; i++ {
		e := r.at(i)
		reset := windowEnd(e.secs, e.win) - nowNs
		if reset < 0 {
			reset = 0
		}
		rem := e.max - e.count
		if rem < 0 {
			rem = 0
		}
		q := &d.Requests
		if e.kind.Tokens() {
			q = &d.Tokens
		}
		if q.Limit == 0 || rem < q.Remaining || (rem == q.Remaining && time.Duration(reset) > q.Reset) {
			*q = Quota{Limit: e.max, Remaining: rem, Reset: time.Duration(reset)}
		}
		if !allowed && e.over() && reset > trippedReset {
			tripped, trippedReset = e, reset
		}
	}
	if tripped == nil {
		return
	}
	d.Kind, d.Subject, d.Limit = tripped.kind, tripped.sub, tripped.max
	d.Remaining = max(tripped.max-tripped.count, 0)
	d.Reset = time.Duration(trippedReset)
	d.RetryAfter = d.Reset
	q := Quota{Limit: d.Limit, Remaining: d.Remaining, Reset: d.Reset}
	if tripped.kind.Tokens() {
		d.Tokens = q
	} else {
		d.Requests = q
	}
}

// AppendHeaders appends the value of each rate-limit header of d to dst
// and calls set with the header name and that value; it returns dst for
// reuse. The value is valid only during the call (fasthttp's SetBytesKV
// copies). Headers, with OpenAI's names:
//
//	x-ratelimit-limit-requests, x-ratelimit-remaining-requests,
//	x-ratelimit-reset-requests   when a request window applied
//	x-ratelimit-limit-tokens, x-ratelimit-remaining-tokens,
//	x-ratelimit-reset-tokens     when a token window applied
//	retry-after                  on a refusal
//
// Limits and remaining are decimal integers. Resets are durations rounded
// up to the millisecond in time.Duration.String form, as OpenAI sends them:
// "20ms", "1s", "1.5s", "6m0s", "1h0m0s". retry-after is whole seconds,
// rounded up, at least 1 (RFC 9110 delay-seconds).
func (d *Decision) AppendHeaders(dst []byte, set func(name, value []byte)) []byte {
	if d.Requests.Limit > 0 {
		dst = appendQuota(dst, set, &d.Requests, headerLimitRequests, headerRemainingRequests, headerResetRequests)
	}
	if d.Tokens.Limit > 0 {
		dst = appendQuota(dst, set, &d.Tokens, headerLimitTokens, headerRemainingTokens, headerResetTokens)
	}
	if !d.Allowed {
		start := len(dst)
		dst = strconv.AppendInt(dst, d.RetryAfterSeconds(), 10)
		set(headerRetryAfter, dst[start:])
	}
	return dst
}

func appendQuota(dst []byte, set func(name, value []byte), q *Quota, limit, remaining, reset []byte) []byte {
	start := len(dst)
	dst = strconv.AppendInt(dst, q.Limit, 10)
	set(limit, dst[start:])
	start = len(dst)
	dst = strconv.AppendInt(dst, q.Remaining, 10)
	set(remaining, dst[start:])
	start = len(dst)
	dst = AppendReset(dst, q.Reset)
	set(reset, dst[start:])
	return dst
}

// Message is the refusal text every surface sends with its 429: the
// tripped window, its limit and when to retry.
func (d *Decision) Message() string {
	msg := "Rate limit reached for " + d.Kind.String()
	if d.Limit > 0 {
		msg += " (limit " + strconv.FormatInt(d.Limit, 10) + ")"
	}
	return msg + "; retry after " + strconv.FormatInt(d.RetryAfterSeconds(), 10) + "s."
}

// ScopeKey is the scope of a caller key's own rate_limit counters: model,
// MCP, A2A and passthrough calls of one key share them.
const ScopeKey = "key"

// RetryAfterSeconds returns RetryAfter in whole seconds, rounded up, at
// least 1.
func (d *Decision) RetryAfterSeconds() int64 {
	s := (int64(d.RetryAfter) + int64(time.Second) - 1) / int64(time.Second)
	return max(s, 1)
}

// AppendReset appends d rounded up to whole milliseconds in the format of
// time.Duration.String: "0s", "20ms", "1s", "1.5s", "6m0s", "1h0m0s". It is
// the format of the x-ratelimit-reset-* headers.
func AppendReset(dst []byte, d time.Duration) []byte {
	if d <= 0 {
		return append(dst, "0s"...)
	}
	ms := (int64(d) + int64(time.Millisecond) - 1) / int64(time.Millisecond)
	if ms < 1000 {
		dst = strconv.AppendInt(dst, ms, 10)
		return append(dst, "ms"...)
	}
	h := ms / 3_600_000
	ms -= h * 3_600_000
	m := ms / 60_000
	ms -= m * 60_000
	if h > 0 {
		dst = strconv.AppendInt(dst, h, 10)
		dst = append(dst, 'h')
	}
	if h > 0 || m > 0 {
		dst = strconv.AppendInt(dst, m, 10)
		dst = append(dst, 'm')
	}
	dst = strconv.AppendInt(dst, ms/1000, 10)
	if frac := ms % 1000; frac > 0 {
		digits := [4]byte{'.', byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
		n := 4
		for digits[n-1] == '0' {
			n--
		}
		dst = append(dst, digits[:n]...)
	}
	return append(dst, 's')
}
