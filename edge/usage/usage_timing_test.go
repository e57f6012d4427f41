package usage_test

import (
	"testing"
	"time"

	"gw/edge/usage"
)

// BenchmarkEmit is the request path's whole cost: copying a record into
// the queue (target ≤ 200 ns, 0 allocs). The pipeline has no sinks, so
// the dispatcher drains as fast as it can; a full queue would count drops.
func BenchmarkEmit(b *testing.B) {
	p := usage.New(usage.Options{})
	defer p.Close(time.Second)
	r := sampleRecords()[1]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.Emit(&r)
	}
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
