package sls_test

import (
	"testing"

	"gw/admin/resources"
	"gw/edge/usage"
	"gw/edge/usage/sls"
	"gw/edge/usage/usagetest"
)

// BenchmarkEncode: one 512-record batch as a deflated LogGroup.
func BenchmarkEncode(b *testing.B) {
	batch := make([]usage.Record, 512)
	for i := range batch {
		batch[i] = *usagetest.Record(i)
	}
	s, err := sls.New(&resources.SLSExporter{Endpoint: "https://cn-hangzhou.log.aliyuncs.com", Project: "p-1", Logstore: "s-1"})
	if err != nil {
		b.Fatal(err)
	}
	enc := usage.Encoder{Sink: s}
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if buf, err = enc.Encode(buf[:0], batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(batch)*b.N)/b.Elapsed().Seconds(), "records/s")
}
