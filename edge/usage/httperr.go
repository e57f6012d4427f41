package usage

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// CheckResponse classifies an HTTP answer to a batch: nil for 2xx; a
// retryable *SendError for 408, 429 and 5xx (with the Retry-After the
// receiver asked for, capped at RetryAfterMax); a permanent one for every
// other status. body is a prefix of the response body, quoted shortened in
// the error (receivers' error bodies never hold our credentials).
func CheckResponse(status int, h http.Header, body []byte) error {
	if status >= 200 && status < 300 {
		return nil
	}
	se := &SendError{Status: status, Msg: ErrorSnippet(body)}
	switch {
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500:
		se.RetryAfter = ParseRetryAfter(h.Get("Retry-After"), time.Now())
	default:
		se.Permanent = true
	}
	return se
}

// ParseRetryAfter reads a Retry-After value: delay seconds or an HTTP date
// (RFC 9110 §10.2.3). It returns 0 for a missing, malformed or past value
// and never more than RetryAfterMax.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseUint(v, 10, 63); err == nil {
		if n > uint64(RetryAfterMax/time.Second) {
			return RetryAfterMax
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	} else {
		return 0
	}
	if d < 0 {
		return 0
	}
	return min(d, RetryAfterMax)
}

// ErrorSnippet is the first line of an error body, at most 200 bytes of
// printable ASCII (other bytes become '?').
func ErrorSnippet(body []byte) string {
	const max = 200
	if i := strings.IndexByte(string(body), '\n'); i >= 0 {
		body = body[:i]
	}
	if len(body) > max {
		body = body[:max]
	}
	b := make([]byte, len(body))
	for i, c := range body {
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		b[i] = c
	}
	return strings.TrimSpace(string(b))
}

// NetReason names a transport failure without its URL (an endpoint may
// carry user-info): "canceled", "timeout" or "connection failed".
func NetReason(err error) string {
	if errors.Is(err, context.Canceled) {
		return "canceled"
	}
	var t interface{ Timeout() bool }
	if errors.As(err, &t) && t.Timeout() {
		return "timeout"
	}
	return "connection failed"
}
