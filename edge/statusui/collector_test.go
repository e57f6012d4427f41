package statusui

import (
	"testing"
	"time"

	"gw/edge/usage"
)

func rec(at time.Time, model, target string, status int, kind string, lat time.Duration) *usage.Record {
	return &usage.Record{OccurredAt: at, Model: model, TargetModel: target, StatusCode: status, AttemptKind: kind, Latency: lat,
		ErrorClass: map[bool]string{true: "upstream_failed"}[status >= 400], ProviderKey: "pk", APIKeyName: "dev"}
}

// TestCollector: final records count as requests per second (failed-over
// attempts only on their target), errors land in the recent list newest
// first (by arrival) with no message text, quantiles come from the histogram, and
// seconds outside the window read as zero.
func TestCollector(t *testing.T) {
	base := time.Unix(1_800_000_000, 0)
	c := NewCollector()
	c.now = func() time.Time { return base }
	c.Observe(rec(base.Add(-3*time.Second), "grp", "a", 503, usage.AttemptFailed, time.Millisecond))
	c.Observe(rec(base.Add(-3*time.Second), "grp", "b", 200, usage.AttemptFinal, 2*time.Millisecond))
	c.Observe(rec(base.Add(-2*time.Second), "m", "m", 200, usage.AttemptFinal, 400*time.Microsecond))
	c.Observe(rec(base.Add(-2*time.Second), "m", "m", 502, usage.AttemptFinal, 30*time.Millisecond))
	c.Observe(rec(base.Add(-time.Duration(Window+5)*time.Second), "old", "old", 500, usage.AttemptFinal, time.Millisecond))

	tr, pairs, errs := c.Snapshot(base)
	if len(tr.Seconds) != Window || tr.Seconds[Window-1] != base.Unix()-1 {
		t.Fatalf("window: %d seconds ending %d", len(tr.Seconds), tr.Seconds[len(tr.Seconds)-1])
	}
	at := func(ago int) int { return Window - ago } // index of the second `ago` seconds before base
	if tr.Requests[at(3)] != 1 || tr.Errors[at(3)] != 0 {
		t.Errorf("second -3: %d requests %d errors; want 1, 0 (the failed attempt is not a request)", tr.Requests[at(3)], tr.Errors[at(3)])
	}
	if tr.Requests[at(2)] != 2 || tr.Errors[at(2)] != 1 {
		t.Errorf("second -2: %d requests %d errors; want 2, 1", tr.Requests[at(2)], tr.Errors[at(2)])
	}
	if p50, p99 := tr.P50MS[at(2)], tr.P99MS[at(2)]; p50 < 0.4 || p50 > 0.6 || p99 < 30 || p99 > 45 {
		t.Errorf("second -2 quantiles p50 %.3f p99 %.3f ms; want ~0.4-0.6 and ~30-45 (bucket bounds)", p50, p99)
	}
	if tr.Total != 4 || tr.TotalErr != 2 {
		t.Errorf("totals %d/%d; want 4 requests, 2 errors (the out-of-window one counts in totals)", tr.Total, tr.TotalErr)
	}
	if got := pairs[[2]string{"grp", "a"}]; got.Requests != 1 || got.Errors != 1 {
		t.Errorf("grp/a: %+v; want the failed attempt counted on its target", got)
	}
	if got := pairs[[2]string{"grp", "b"}]; got.Requests != 1 || got.Errors != 0 {
		t.Errorf("grp/b: %+v", got)
	}
	if got := pairs[[2]string{"old", "old"}]; got.Requests != 0 {
		t.Errorf("a record older than the target window still counts: %+v", got)
	}
	if len(errs) != 2 || errs[0].Status != 500 || errs[1].Status != 502 || errs[0].Class != "upstream_failed" || errs[0].APIKey != "dev" {
		t.Fatalf("recent errors: %+v", errs)
	}
}

// TestCollectorBounds: the recent-error list keeps the last RecentErrors,
// and the pair table stops growing at maxPairs.
func TestCollectorBounds(t *testing.T) {
	base := time.Unix(1_800_000_000, 0)
	c := NewCollector()
	for i := 0; i < RecentErrors+7; i++ {
		c.Observe(rec(base, "m", "m", 400+i%100, usage.AttemptFinal, time.Millisecond))
	}
	_, _, errs := c.Snapshot(base.Add(time.Second))
	if len(errs) != RecentErrors || errs[0].Status != 400+(RecentErrors+6)%100 {
		t.Fatalf("%d errors, newest %d", len(errs), errs[0].Status)
	}
	for i := 0; i < maxPairs+10; i++ {
		c.Observe(rec(base, "alias", string(rune('a'+i%26))+time.Duration(i).String(), 200, usage.AttemptFinal, time.Millisecond))
	}
	if len(c.pairs) != maxPairs {
		t.Fatalf("%d pairs; want the cap %d", len(c.pairs), maxPairs)
	}
}

// BenchmarkObserve is the dispatcher's cost per record with the page on.
func BenchmarkObserve(b *testing.B) {
	c := NewCollector()
	r := rec(time.Now(), "grp", "a", 200, usage.AttemptFinal, time.Millisecond)
	b.ReportAllocs()
	for b.Loop() {
		c.Observe(r)
	}
}
