package limiter_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"gw/limiter"
)

func TestAppendReset(t *testing.T) {
	f := func(d time.Duration, want string) {
		t.Helper()
		if got := string(limiter.AppendReset([]byte("x"), d)); got != "x"+want {
			t.Fatalf("AppendReset(%d): got %q; want %q", d, got[1:], want)
		}
	}
	f(-time.Second, "0s")
	f(0, "0s")
	f(1, "1ms") // rounded up
	f(20*time.Millisecond, "20ms")
	f(999*time.Millisecond+1, "1s")
	f(time.Second, "1s")
	f(1500*time.Millisecond, "1.5s")
	f(8640*time.Millisecond, "8.64s")
	f(59*time.Second+999*time.Millisecond, "59.999s")
	f(6*time.Minute, "6m0s")
	f(time.Hour, "1h0m0s")
	f(time.Hour+time.Minute+time.Second+time.Millisecond, "1h1m1.001s")
	f(24*time.Hour, "24h0m0s")
}

// TestAppendResetMatchesDurationString: on whole milliseconds the format is
// exactly time.Duration.String.
func TestAppendResetMatchesDurationString(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var buf []byte
	for i := 0; i < 100_000; i++ {
		d := time.Duration(rng.Int64N(2*86_400_000)) * time.Millisecond
		if i < 5000 {
			d = time.Duration(i) * time.Millisecond
		}
		buf = limiter.AppendReset(buf[:0], d)
		if want := d.String(); string(buf) != want {
			t.Fatalf("AppendReset(%s): got %q; want %q", d, buf, want)
		}
	}
}

func collectHeaders(d *limiter.Decision) string {
	var sb strings.Builder
	d.AppendHeaders(nil, func(name, value []byte) {
		sb.Write(name)
		sb.WriteString(": ")
		sb.Write(value)
		sb.WriteString("\n")
	})
	return sb.String()
}

func TestAppendHeaders(t *testing.T) {
	c := newClock(t0.Add(30*time.Second + 500*time.Millisecond))
	l := newLimiter(t, c)
	rpm := lim{keyA, limiter.RPM, 60}
	tpm := lim{keyA, limiter.TPM, 1000}
	d, _ := reserve(l, 100, rpm, tpm)
	want := "x-ratelimit-limit-requests: 60\n" +
		"x-ratelimit-remaining-requests: 59\n" +
		"x-ratelimit-reset-requests: 29.5s\n" +
		"x-ratelimit-limit-tokens: 1000\n" +
		"x-ratelimit-remaining-tokens: 900\n" +
		"x-ratelimit-reset-tokens: 29.5s\n"
	if got := collectHeaders(&d); got != want {
		t.Fatalf("allowed:\n%s\nwant:\n%s", got, want)
	}

	d, _ = reserve(l, 950, rpm, tpm)
	want = "x-ratelimit-limit-requests: 60\n" +
		"x-ratelimit-remaining-requests: 59\n" + // nothing was charged
		"x-ratelimit-reset-requests: 29.5s\n" +
		"x-ratelimit-limit-tokens: 1000\n" +
		"x-ratelimit-remaining-tokens: 900\n" +
		"x-ratelimit-reset-tokens: 29.5s\n" +
		"retry-after: 30\n"
	if got := collectHeaders(&d); got != want {
		t.Fatalf("refused:\n%s\nwant:\n%s", got, want)
	}

	// Requests only; refused by a day window: minutes and hours.
	c.Set(t0.Add(18*time.Hour + 30*time.Minute))
	rpd := lim{modelM, limiter.RPD, 1}
	reserve(l, 0, rpd)
	d, _ = reserve(l, 0, rpd)
	want = "x-ratelimit-limit-requests: 1\n" +
		"x-ratelimit-remaining-requests: 0\n" +
		"x-ratelimit-reset-requests: 5h30m0s\n" +
		"retry-after: 19800\n"
	if got := collectHeaders(&d); got != want {
		t.Fatalf("rpd:\n%s\nwant:\n%s", got, want)
	}

	// Concurrency: retry-after only.
	var s1, s2 limiter.Slot
	l.Acquire(&s1, keyA, 1)
	defer s1.Release()
	d = l.Acquire(&s2, keyA, 1)
	if got := collectHeaders(&d); got != "retry-after: 1\n" {
		t.Fatalf("concurrency: %q", got)
	}
}

func TestTightestQuotaPerFamily(t *testing.T) {
	c := newClock(t0.Add(10 * time.Second))
	l := newLimiter(t, c)
	// rpm 100 (99 left) vs rpd 5 (4 left): rpd is tighter.
	// tpm 1000 and tpd 1000 both 900 left: the one ending last (tpd).
	d, _ := reserve(l, 100,
		lim{keyA, limiter.RPM, 100}, lim{keyA, limiter.RPD, 5},
		lim{keyA, limiter.TPM, 1000}, lim{keyA, limiter.TPD, 1000})
	if d.Requests != (limiter.Quota{Limit: 5, Remaining: 4, Reset: 24*time.Hour - 10*time.Second}) {
		t.Fatalf("requests quota %+v", d.Requests)
	}
	if d.Tokens != (limiter.Quota{Limit: 1000, Remaining: 900, Reset: 24*time.Hour - 10*time.Second}) {
		t.Fatalf("tokens quota %+v", d.Tokens)
	}
}
