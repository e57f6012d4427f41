package vecindex

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// cpuTimed runs f b.N times and reports, besides wall time, the CPU time
// of the thread per run (cpu-ns/op): on the shared CI and dev machines the
// wall time includes waiting for a core.
func cpuTimed(b *testing.B, f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	c0 := threadCPU()
	for i := 0; i < b.N; i++ {
		f()
	}
	if c1 := threadCPU(); c0 >= 0 && c1 >= 0 {
		b.ReportMetric(float64(c1-c0)/float64(b.N), "cpu-ns/op")
	}
}

func randomIndex(n, dims, groups int, r *rand.Rand) *Index {
	b := NewBuilder(dims, groups)
	v := make([]float32, dims)
	for i := 0; i < n; i++ {
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		if err := b.Add(i%groups, v); err != nil {
			panic(err)
		}
	}
	return b.Build()
}

func randomUnit(dims int, r *rand.Rand) []float32 {
	v := make([]float32, dims)
	for j := range v {
		v[j] = float32(r.NormFloat64())
	}
	Normalize(v)
	return v
}

var sinkGroup int
var sinkScore float32

// BenchmarkPick is the semantic router's per-request search: 1,000 example
// vectors of 1,536 dimensions in 10 routes (target ≤ 50 µs, 0 allocs).
func BenchmarkPick(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := randomIndex(1000, 1536, 10, r)
	q := randomUnit(1536, r)
	th := make([]float32, 10)
	for i := range th {
		th[i] = 0.8
	}
	b.SetBytes(int64(1000 * 1536 * 4))
	cpuTimed(b, func() { sinkGroup, sinkScore = x.Pick(q, th) })
}

func BenchmarkDot1536(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	p, q := randomUnit(1536, r), randomUnit(1536, r)
	b.ReportAllocs()
	b.SetBytes(1536 * 4 * 2)
	for i := 0; i < b.N; i++ {
		sinkScore = Dot(p, q)
	}
}

// BenchmarkPickNear is the realistic case: ten routes whose 100 examples
// each cluster around a topic, and a query close to one topic, so many
// examples score high and the first pass keeps candidates to rescore.
func BenchmarkPickNear(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x, centres := clustered(1000, 1536, 10, 1, r)
	q := near(centres[3], 0.8, r)
	th := make([]float32, 10)
	for i := range th {
		th[i] = 0.5
	}
	cpuTimed(b, func() { sinkGroup, sinkScore = x.Pick(q, th) })
}

// BenchmarkDots is Pick's first pass alone: the int8 codes of 1,000
// vectors of 1,536 dimensions (1.5 MB) against one query.
func BenchmarkDots(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := randomIndex(1000, 1536, 10, r)
	q := make([]int8, x.z.stride)
	for j := range q {
		q[j] = int8(r.IntN(2*qmax+1) - qmax)
	}
	out := make([]int32, x.Len())
	b.SetBytes(int64(len(x.z.codes)))
	cpuTimed(b, func() { dots(x.z.codes, q, x.z.stride, out) })
}
