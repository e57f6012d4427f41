//go:build !race

package vecindex

// The race detector drops some sync.Pool puts on purpose, so the pooled
// search scratch would count as allocations there.

import (
	"math/rand/v2"
	"testing"
)

func TestPickAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x := randomIndex(100, 1536, 4, r)
	q := randomUnit(1536, r)
	th := []float32{0.5, 0.5, 0.5, 0.5}
	if n := testing.AllocsPerRun(100, func() { sinkGroup, sinkScore = x.Pick(q, th) }); n != 0 {
		t.Fatalf("%v allocs per Pick; want 0", n)
	}
}

func TestFlatAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	f := NewFlat(1536)
	for i := 0; i < 100; i++ {
		f.Add(randomUnit(1536, r))
	}
	q := randomUnit(1536, r)
	if n := testing.AllocsPerRun(100, func() { sinkGroup, sinkScore = f.Best(q, 0.9) }); n != 0 {
		t.Fatalf("%v allocs per Best; want 0", n)
	}
}

func TestPickAllocsNear(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x, cs := clustered(300, 1536, 3, 0.7, r)
	q := near(cs[1], 0.5, r)
	th := []float32{0.5, 0.5, 0.5}
	x.Pick(q, th)
	if n := testing.AllocsPerRun(100, func() { sinkGroup, sinkScore = x.Pick(q, th) }); n != 0 {
		t.Fatalf("%v allocs per Pick with candidates; want 0", n)
	}
}
