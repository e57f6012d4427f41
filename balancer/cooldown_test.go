package balancer_test

import (
	"testing"
	"time"

	"gw/balancer"
)

// t0 is the injected clock's start; tests pass t0.Add(offset) as now.
var t0 = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	f := func(v string, wantD time.Duration, wantOK bool) {
		t.Helper()
		d, ok := balancer.ParseRetryAfter(v, t0)
		if d != wantD || ok != wantOK {
			t.Fatalf("ParseRetryAfter(%q): got (%s, %v); want (%s, %v)", v, d, ok, wantD, wantOK)
		}
	}
	f("120", 120*time.Second, true)
	f(" 7\t", 7*time.Second, true)
	f("0", 0, true)
	f("99999999999999999999999", time.Duration(1<<63-1)/time.Second*time.Second, true)
	f("", 0, false)
	f("-1", 0, false)
	f("+5", 0, false)
	f("1.5", 0, false)
	f("12s", 0, false)
	f("soon", 0, false)
	// HTTP-date in all three forms, 90 s after t0.
	f(t0.Add(90*time.Second).Format("Mon, 02 Jan 2006 15:04:05 GMT"), 90*time.Second, true)
	f(t0.Add(90*time.Second).Format(time.RFC850), 90*time.Second, true)
	f(t0.Add(90*time.Second).Format(time.ANSIC), 90*time.Second, true)
	f("Tue, 04 Mar 2025 05:06:37 GMT", 30*time.Second, true)
	// A past date means now.
	f(t0.Add(-time.Hour).Format("Mon, 02 Jan 2006 15:04:05 GMT"), 0, true)
	f("Tue, 04 Mar 2025 05:06:37 CET", 0, false) // IMF-fixdate is GMT only
}

func TestCooldownTrip(t *testing.T) {
	on := balancer.DefaultCooldown()
	on.Enabled = true
	date := t0.Add(45 * time.Second).Format("Mon, 02 Jan 2006 15:04:05 GMT")

	f := func(name string, c balancer.CooldownConfig, fl balancer.Failure, want time.Duration) {
		t.Helper()
		var s balancer.State
		if got := s.Trip(t0, fl, &c); got != want {
			t.Fatalf("%s: Trip: got %s; want %s", name, got, want)
		}
		// Cooling down exactly for [t0, t0+want).
		if want > 0 && (!s.CoolingDown(t0) || !s.CoolingDown(t0.Add(want-time.Nanosecond))) {
			t.Fatalf("%s: not cooling down within %s", name, want)
		}
		if s.CoolingDown(t0.Add(want)) {
			t.Fatalf("%s: still cooling down after %s", name, want)
		}
		if left := s.CooldownLeft(t0.Add(want / 2)); left != want-want/2 {
			t.Fatalf("%s: CooldownLeft: got %s; want %s", name, left, want-want/2)
		}
	}
	f("default", on, balancer.Failure{Status: 429}, 30*time.Second)
	f("retry-after seconds", on, balancer.Failure{Status: 429, RetryAfter: "120"}, 120*time.Second)
	f("retry-after date", on, balancer.Failure{Status: 503, RetryAfter: date}, 45*time.Second)
	f("retry-after capped", on, balancer.Failure{Status: 429, RetryAfter: "3600"}, 600*time.Second)
	f("retry-after 0: retry now", on, balancer.Failure{Status: 429, RetryAfter: "0"}, 0)
	f("retry-after invalid: default", on, balancer.Failure{Status: 429, RetryAfter: "later"}, 30*time.Second)
	f("timeout", on, balancer.Failure{Timeout: true}, 30*time.Second)
	f("transport", on, balancer.Failure{Transport: true}, 30*time.Second)
	f("status not a trigger", on, balancer.Failure{Status: 404}, 0)
	f("no status", on, balancer.Failure{}, 0)

	c := on
	c.HonorRetryAfter = false
	f("honor_retry_after false", c, balancer.Failure{Status: 429, RetryAfter: "120"}, 30*time.Second)
	c = on
	c.Default = 0
	f("default_seconds 0 disables", c, balancer.Failure{Status: 429}, 0)
	f("default_seconds 0 disables retry-after", c, balancer.Failure{Status: 429, RetryAfter: "120"}, 0)
	c = on
	c.Enabled = false
	f("disabled", c, balancer.Failure{Status: 429}, 0)
	c = on
	c.Statuses = balancer.NewStatusSet(404)
	f("trigger_statuses replaces the list", c, balancer.Failure{Status: 404}, 30*time.Second)
	f("trigger_statuses without 429", c, balancer.Failure{Status: 429}, 0)
	c = on
	c.OnTimeout, c.OnTransport = false, false
	f("trigger_on_timeout false", c, balancer.Failure{Timeout: true}, 0)
	f("trigger_on_transport false", c, balancer.Failure{Transport: true}, 0)
	f("status still triggers", c, balancer.Failure{Status: 500}, 30*time.Second)
	c = on
	c.Max = 10 * time.Second
	f("max_seconds caps retry-after only", c, balancer.Failure{Status: 429, RetryAfter: "120"}, 10*time.Second)
	f("max_seconds leaves default", c, balancer.Failure{Status: 429}, 30*time.Second)

	var s balancer.State
	if s.Trip(t0, balancer.Failure{Status: 429}, nil) != 0 || s.CoolingDown(t0) {
		t.Fatalf("nil config tripped")
	}
}

func TestCooldownClock(t *testing.T) {
	c := balancer.DefaultCooldown()
	c.Enabled = true
	var s balancer.State
	s.Trip(t0, balancer.Failure{Status: 429, RetryAfter: "120"}, &c)
	// A later, shorter cooldown never shortens the current one.
	if d := s.Trip(t0.Add(10*time.Second), balancer.Failure{Status: 500}, &c); d != 30*time.Second {
		t.Fatalf("second trip: got %s; want 30s", d)
	}
	if left := s.CooldownLeft(t0.Add(10 * time.Second)); left != 110*time.Second {
		t.Fatalf("left: got %s; want 110s", left)
	}
	// A longer one extends it.
	s.Trip(t0.Add(100*time.Second), balancer.Failure{Status: 429, RetryAfter: "300"}, &c)
	if !s.CoolingDown(t0.Add(399*time.Second)) || s.CoolingDown(t0.Add(400*time.Second)) {
		t.Fatalf("extended cooldown: wrong window")
	}
	s.ResetCooldown()
	if s.CoolingDown(t0.Add(101 * time.Second)) {
		t.Fatalf("ResetCooldown: still cooling down")
	}
}

func TestMarkCoolingAndRegistry(t *testing.T) {
	reg := balancer.NewRegistry()
	c := balancer.DefaultCooldown()
	c.Enabled = true
	ts := weighted(1, 1, 1)
	ts[0].Cooldown, ts[1].Cooldown = &c, &c
	g, err := balancer.NewGroup(ts, balancer.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if d := g.Trip(0, t0, balancer.Failure{Status: 502}); d != 30*time.Second {
		t.Fatalf("Trip: got %s; want 30s", d)
	}
	if d := g.Trip(2, t0, balancer.Failure{Status: 502}); d != 0 {
		t.Fatalf("Trip without cooldown block: got %s; want 0", d)
	}
	req := &balancer.Request{}
	req.Skip = g.MarkCooling(req.Skip, t0.Add(time.Second))
	checkOrder(t, order(g, req), 1, 2)

	// A reload builds a new group, reordered, on the same registry: the
	// cooldown, in-flight count and EWMA stay with the model ID.
	g.Acquire(1)
	g.Observe(1, time.Second)
	g2, err := balancer.NewGroup([]balancer.Target{ts[2], ts[1], ts[0]}, balancer.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	req.Skip = g2.MarkCooling(req.Skip[:0], t0.Add(time.Second))
	checkOrder(t, order(g2, req), 0, 1)
	if g2.State(1).InFlight() != 1 || g2.State(1).Latency() != time.Second {
		t.Fatalf("state lost across reload")
	}
	req.Skip = g2.MarkCooling(req.Skip[:0], t0.Add(30*time.Second))
	checkOrder(t, order(g2, req), 0, 1, 2)

	if n := reg.Prune(func(id string) bool { return id != "m2" }); n != 1 || reg.Len() != 2 {
		t.Fatalf("Prune: dropped %d, left %d; want 1, 2", n, reg.Len())
	}
	if reg.State("m0") != g2.State(2) {
		t.Fatalf("registry: a new pointer for a kept ID")
	}
}

func TestStatusSet(t *testing.T) {
	s := balancer.NewStatusSet(100, 429, 599, 639, 640, -1)
	for _, c := range []int{100, 429, 599, 639} {
		if !s.Has(c) {
			t.Fatalf("Has(%d): false", c)
		}
	}
	for _, c := range []int{0, 200, 428, 640, -1, 1 << 20} {
		if s.Has(c) {
			t.Fatalf("Has(%d): true", c)
		}
	}
}
