package keyword

import "testing"

// BenchmarkScanStreams compares the interleaved walks on the benchmark
// chat's texts (about 300-450 bytes each) with the benchmark patterns.
func BenchmarkScanStreams(b *testing.B) {
	c := mustNew(b, pat(benchPatterns()...)).(*Checker)
	texts := chatTexts()
	n := 0
	for _, t := range texts {
		n += len(t.Data)
	}
	for _, bc := range []struct {
		name string
		scan func([]byte) (int32, uint64)
	}{
		{"run", func(d []byte) (int32, uint64) { _, l, s := c.ac.run(0, d); return l, s }},
		{"scan2", c.ac.scan2},
		{"scan4", c.ac.scan4},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				for i := range texts {
					if l, _ := bc.scan(texts[i].Data); l >= 0 {
						b.Fatal("hit")
					}
				}
			}
		})
	}
}
