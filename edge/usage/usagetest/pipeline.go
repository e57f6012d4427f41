package usagetest

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"gw/edge/usage"
)

// Pipeline runs sink alone in a pipeline (kind names the sink kind) and
// closes it with the test.
func Pipeline(tb testing.TB, kind string, batch int, retry usage.RetryPolicy, clock usage.Clock, sink usage.Sink) *usage.Pipeline {
	tb.Helper()
	p := usage.New(usage.Options{Clock: clock})
	tb.Cleanup(func() { p.Close(2 * time.Second) })
	errs := p.SetSinks([]usage.SinkSpec{{
		Config: usage.SinkConfig{Name: kind, Kind: kind, BatchSize: batch, FlushInterval: 50 * time.Millisecond, Retry: retry, Fingerprint: "t"},
		Build:  func() (usage.Sink, error) { return sink, nil },
	}})
	if len(errs) > 0 {
		tb.Fatalf("sink not started: %v", errs)
	}
	return p
}

// Record is a realistic final record with tokens, cost and tags.
func Record(i int) *usage.Record {
	return &usage.Record{
		OccurredAt: time.Now(), RequestID: usage.NewRequestID(), Attempt: 1, AttemptKind: usage.AttemptFinal, StatusCode: 200,
		APIKeyID: "key-id", APIKeyName: "caller", TeamID: "team-1", UserID: "u-1", UserName: "Ann",
		Model: "gpt", TargetModel: "gpt-direct", UpstreamModel: "gpt-4o", Provider: "openai", ProviderKey: "openai-main", ProviderKeyID: "pk-id",
		InboundProtocol: "chat_completions", Operation: "chat.completions", CacheStatus: usage.CacheNone,
		PromptTokens: int64(10 + i), CompletionTokens: 20, TotalTokens: int64(30 + i), CostUSD: 0.05,
		Latency: 150 * time.Millisecond, TTFT: 40 * time.Millisecond, UpstreamLatency: 140 * time.Millisecond, UpstreamTTFT: 30 * time.Millisecond,
		RequestBodyBytes: 100, ResponseBodyBytes: 500,
	}
}

// Loaded is n records as a gateway under `make perf`'s load writes them,
// for the encoders' benchmarks: one caller and model, the same token
// counts, a record every 30 µs or so, and latencies that differ in every
// microsecond digit. Record's batch, made in one instant with equal
// latencies, compresses far better than what a loaded gateway exports.
func Loaded(n int) []usage.Record {
	rng := rand.New(rand.NewPCG(uint64(n), 17))
	t := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	us := func(lo, span int) time.Duration { return time.Duration(lo+rng.IntN(span)) * time.Microsecond }
	out := make([]usage.Record, n)
	for i := range out {
		r := Record(0)
		t = t.Add(time.Duration(20_000 + rng.IntN(20_000)))
		r.OccurredAt = t
		r.Latency = us(1200, 2000) + time.Duration(rng.IntN(1000))
		r.UpstreamLatency = r.Latency - us(30, 40)
		r.TTFT, r.UpstreamTTFT = r.Latency, r.UpstreamLatency
		out[i] = *r
	}
	return out
}

// Eventually polls cond for up to d.
func Eventually(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatalf("timed out waiting for %s", what)
}

// EmitBench runs emit b.N times into p, in bursts that the dispatcher
// drains in between (the timer stops while it does), as on a loaded
// gateway. A loop that never pauses outruns the dispatcher's 2 ms polls
// and fills the queue, and a dropped record costs less than a queued one:
// the benchmark fails when any record was dropped.
func EmitBench(b *testing.B, p *usage.Pipeline, emit func()) {
	const burst = 256 // half the queue's hot ring (usage.hotSlots)
	drops := metrics.GetOrCreateCounter(`gw_usage_event_drops_total{reason="queue_full"}`)
	dropped := drops.Get()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%burst == burst-1 {
			b.StopTimer()
			p.Flush()
			b.StartTimer()
		}
		emit()
	}
	b.StopTimer()
	if d := drops.Get() - dropped; d != 0 {
		b.Fatalf("%d of %d records dropped (queue full)", d, b.N)
	}
}
