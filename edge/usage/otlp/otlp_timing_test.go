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
	s := &usage.Encoder{Sink: otlp.New(&resources.OTLPHTTPExporter{Endpoint: "http://127.0.0.1:1/v1/traces", TimeoutMS: 1000}, "gw")}
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

// BenchmarkEncodeGzip: one 512-record batch as the gzip sink sends it
// (encode and compress), against the same bytes through the general
// deflate writer (klauspost level 1, usage.Gzipper) that compressed them
// before: the attribute-aligned fixed-code writer of edge/usage/gzipdelta.
func BenchmarkEncodeGzip(b *testing.B) {
	batch := make([]usage.Record, 512)
	for i := range batch {
		batch[i] = *usagetest.Record(i)
	}
	plain := &usage.Encoder{Sink: otlp.New(&resources.OTLPHTTPExporter{Endpoint: "http://127.0.0.1:1/v1/traces", TimeoutMS: 1000}, "gw")}
	gz := &usage.Encoder{Sink: otlp.New(&resources.OTLPHTTPExporter{Endpoint: "http://127.0.0.1:1/v1/traces", TimeoutMS: 1000, Compression: resources.OTLPCompressionGzip}, "gw")}
	run := func(name string, step func(dst []byte) []byte) {
		b.Run(name, func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				buf = step(buf[:0])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/record")
			b.ReportMetric(float64(len(buf))/float64(len(batch)), "bytes/record")
		})
	}
	run("aligned", func(dst []byte) []byte { out, _ := gz.Encode(dst, batch); return out })
	var g usage.Gzipper
	var raw []byte
	run("klauspost-level1", func(dst []byte) []byte {
		raw, _ = plain.Encode(raw[:0], batch)
		out, _ := g.Compress(dst, raw)
		return out
	})
}
