package objstore_test

import (
	"crypto/md5"
	"testing"

	"gw/admin/resources"
	"gw/edge/usage"
	"gw/edge/usage/objstore"
	"gw/edge/usage/usagetest"
)

// BenchmarkObjectEncode: one 512-record batch as the object store sends it
// — NDJSON, gzip, and the Content-MD5 minio-go computes over the payload —
// against the plain NDJSON + MD5 the sink sent before (records/s = 512 /
// (ns/op) × 1e9).
func BenchmarkObjectEncode(b *testing.B) {
	batch := make([]usage.Record, 512)
	for i := range batch {
		batch[i] = *usagetest.Record(i)
	}
	sink, err := objstore.New(&resources.ObjectStoreExporter{Provider: resources.ObjectStoreS3, Bucket: "b", Endpoint: "http://127.0.0.1:1",
		Region: "us-east-1", AuthMode: resources.AuthModeStatic, AccessKeyID: resources.NewSecret("k"), SecretAccessKey: resources.NewSecret("s")})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		encode func(dst []byte) ([]byte, error)
	}{
		{"gzip", func(dst []byte) ([]byte, error) { return sink.Encode(dst, batch) }},
		{"plain", func(dst []byte) ([]byte, error) { return usage.AppendNDJSON(dst, batch), nil }},
	} {
		b.Run(c.name, func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				var err error
				if buf, err = c.encode(buf[:0]); err != nil {
					b.Fatal(err)
				}
				md5.Sum(buf)
			}
			b.ReportMetric(float64(len(batch)*b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(len(buf))/float64(len(batch)), "bytes/record")
		})
	}
}
