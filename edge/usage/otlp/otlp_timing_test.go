package otlp_test

import (
	"testing"

	"gw/admin/resources"
	"gw/edge/usage"
	"gw/edge/usage/otlp"
	"gw/edge/usage/usagetest"
)

// BenchmarkEncode: one 512-record batch as OTLP protobuf (records/s =
// 512 / (ns/op) × 1e9).
func BenchmarkEncode(b *testing.B) {
	batch := make([]usage.Record, 512)
	for i := range batch {
		batch[i] = *usagetest.Record(i)
	}
	s := otlp.New(&resources.OTLPHTTPExporter{Endpoint: "http://127.0.0.1:1/v1/traces", TimeoutMS: 1000}, "gw")
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var err error
		if buf, err = s.Encode(buf[:0], batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(batch)*b.N)/b.Elapsed().Seconds(), "records/s")
}
