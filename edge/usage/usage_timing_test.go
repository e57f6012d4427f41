package usage_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gw/edge/usage"
	"gw/edge/usage/usagetest"
)

// BenchmarkEmit is the queue's share of the request path: copying a
// built record into it (target ≤ 200 ns, 0 allocs, for the whole
// emission: see edge's BenchmarkEmitUsage). The pipeline has no sinks.
func BenchmarkEmit(b *testing.B) {
	p := usage.New(usage.Options{})
	defer p.Close(time.Second)
	r := sampleRecords()[1]
	usagetest.EmitBench(b, p, func() { p.Emit(&r) })
}

// BenchmarkAppendJSON is a sink's encoding cost (target ≥ 200k records/s
// on one core).
func BenchmarkAppendJSON(b *testing.B) {
	r := sampleRecords()[1]
	buf := usage.AppendJSON(nil, &r)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf = usage.AppendJSON(buf[:0], &r)
	}
}

// discardSink accepts every batch without encoding it: what is left of a
// sink's cost is the pipeline's own (fan-out, queues, batching, wake-ups).
type discardSink struct{ records atomic.Int64 }

func (s *discardSink) AppendRecord(body []byte, _ *usage.Record) []byte { return body }
func (s *discardSink) Finish(dst, _ []byte, n int) ([]byte, error) {
	s.records.Add(int64(n))
	return dst, nil
}
func (s *discardSink) Send(context.Context, *usage.Batch) error { return nil }

// startSinks runs a pipeline whose sinks are sinks, batches of batch.
func startSinks(tb testing.TB, batch int, sinks ...usage.Sink) *usage.Pipeline {
	tb.Helper()
	p := usage.New(usage.Options{})
	var specs []usage.SinkSpec
	for i, s := range sinks {
		specs = append(specs, usage.SinkSpec{Config: usage.SinkConfig{Name: "s" + strconv.Itoa(i), Kind: "test", BatchSize: batch, FlushInterval: time.Second, Fingerprint: "f"},
			Build: func() (usage.Sink, error) { return s, nil }})
	}
	if errs := p.SetSinks(specs); len(errs) > 0 {
		tb.Fatal(errs)
	}
	return p
}

// BenchmarkPipelineTwoSinks is the pipeline's own CPU per record with two
// sinks, batches of 512 (scenario 8's exporters): emit, dispatcher,
// per-sink queues and batching, measured as process CPU time (getrusage),
// so goroutine wake-ups and the scheduler count too. The emitter keeps at
// most 4096 records ahead of the sinks so nothing is dropped.
func BenchmarkPipelineTwoSinks(b *testing.B) {
	sinks := []*discardSink{{}, {}}
	p := startSinks(b, 512, sinks[0], sinks[1])
	defer p.Close(time.Second)
	r := sampleRecords()[1]
	behind := func() int64 { return min(sinks[0].records.Load(), sinks[1].records.Load()) }
	var ru0, ru1 syscall.Rusage
	b.ReportAllocs()
	b.ResetTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	for i := 0; i < b.N; i++ {
		for int64(i)-behind() >= 4096 {
			time.Sleep(100 * time.Microsecond)
		}
		p.Emit(&r)
	}
	for behind() < int64(b.N)-512 {
		time.Sleep(100 * time.Microsecond)
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/record")
}
