package edge

import "testing"

// BenchmarkLatestUserText is the router's read of the text to embed, on
// the realistic ~2 KB body of the hot-path benchmarks.
func BenchmarkLatestUserText(b *testing.B) {
	var dst []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for i := 0; i < b.N; i++ {
		dst = LatestUserText(dst[:0], benchBody)
	}
	if len(dst) == 0 {
		b.Fatal("no user text")
	}
}
