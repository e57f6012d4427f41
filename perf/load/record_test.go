package load

import (
	"errors"
	"testing"
	"time"
)

func TestPercentiles(t *testing.T) {
	h := newHist()
	if p := percentiles(h); p != (Percentiles{}) {
		t.Fatalf("empty histogram: got %+v; want zeros", p)
	}
	// 1..10000 µs, once each.
	for v := 1; v <= 10000; v++ {
		recordUS(h, time.Duration(v)*time.Microsecond)
	}
	p := percentiles(h)
	f := func(name string, got, want float64) {
		t.Helper()
		if !near(got, want) {
			t.Fatalf("%s = %g; want %g ± 0.2%%", name, got, want)
		}
	}
	if p.Count != 10000 || p.Min != 1 {
		t.Fatalf("count %d, min %d; want 10000, 1", p.Count, p.Min)
	}
	f("mean", p.Mean, 5000.5)
	f("p50", float64(p.P50), 5000)
	f("p90", float64(p.P90), 9000)
	f("p99", float64(p.P99), 9900)
	f("p99.9", float64(p.P999), 9990)
	f("max", float64(p.Max), 10000)
}

func TestRecordClamps(t *testing.T) {
	h := newHist()
	recordUS(h, -time.Second)        // a clock step back: 0
	recordUS(h, 500*time.Nanosecond) // below 1 µs: 0
	recordUS(h, 2*MaxLatency)
	p := percentiles(h)
	if p.Count != 3 || p.Min != 0 || !near(float64(p.Max), float64(histMax)) {
		t.Fatalf("got %+v; want 3 values from 0 to %d", p, histMax)
	}
}

func TestShardRecord(t *testing.T) {
	rec := newRecorder(false, true)
	if len(rec.shards)&rec.mask != 0 || len(rec.shards) > 16 {
		t.Fatalf("got %d shards; want a power of two <= 16", len(rec.shards))
	}
	ms := time.Millisecond
	ok := func(id int, start time.Duration, chunks int64) {
		smp := sample{origin: start, sent: start, headers: start + ms, token: start + 2*ms,
			done: start + 10*ms, events: chunks + 2, chunks: chunks, sawDone: true}
		rec.shardFor(id).record(&smp, []int64{100, 200, 300}, time.Millisecond)
	}
	ok(0, 0, 20)
	ok(1, 5*ms, 10)
	ok(2, 7*ms, 30)
	noToken := sample{origin: 0, sent: 0, headers: ms, token: -1, done: 3 * ms}
	rec.shardFor(3).record(&noToken, nil, ms)
	fail := func(id int, smp sample) {
		smp.origin, smp.sent, smp.done = 0, 0, ms
		rec.shardFor(id).record(&smp, nil, ms)
	}
	fail(0, sample{class: classStatus, status: 500, errBody: []byte(`{"error":{"type":"server_error"}}`)})
	fail(1, sample{class: classStatus, status: 429})
	fail(2, sample{class: classStatus, status: 1000})
	fail(3, sample{class: classTransport, err: errors.New("connection reset by peer")})
	fail(4, sample{class: classTimeout, err: errors.New("timeout")})
	fail(5, sample{class: classTimeout, err: errors.New("another timeout")})

	s := rec.merge()
	if s.requests != 10 || s.successes != 4 || s.streams != 4 || s.streamsDone != 3 || s.noToken != 1 {
		t.Fatalf("requests %d, successes %d, streams %d, done %d, no token %d; want 10, 4, 4, 3, 1",
			s.requests, s.successes, s.streams, s.streamsDone, s.noToken)
	}
	if s.chunks != 60 || s.minChunks != 0 || s.maxChunks != 30 || s.lastDone != 17*ms {
		t.Fatalf("chunks %d (min %d, max %d), last done %s; want 60 (0, 30), 17ms",
			s.chunks, s.minChunks, s.maxChunks, s.lastDone)
	}
	if n := s.gap.TotalCount(); n != 9 {
		t.Fatalf("got %d gaps; want 9", n)
	}
	if p := percentiles(s.ttft); p.Count != 3 || p.Min != 2000 {
		t.Fatalf("ttft %+v; want 3 values of 2000 µs", p)
	}
	counts, samples := s.errorClasses()
	want := map[string]int64{"status_500": 1, "status_429": 1, "status_other": 1, "transport": 1, "timeout": 2}
	if len(counts) != len(want) {
		t.Fatalf("error classes %v; want %v", counts, want)
	}
	for k, n := range want {
		if counts[k] != n {
			t.Fatalf("error classes %v; want %v", counts, want)
		}
	}
	if samples["transport"] != "connection reset by peer" || samples["timeout"] == "" || len(samples) != 3 {
		t.Fatalf("samples %q; want one per class seen", samples)
	}
}
