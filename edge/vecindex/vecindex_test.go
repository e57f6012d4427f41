package vecindex

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bruteGroups is the reference: every group's best score in float64.
func bruteGroups(x *Index, q []float32) []float64 {
	out := make([]float64, x.Groups())
	for g := range out {
		out[g] = -1
		for i := x.start[g]; i < x.start[g+1]; i++ {
			var s float64
			for j, f := range x.data[i*x.dims : (i+1)*x.dims] {
				s += float64(f) * float64(q[j])
			}
			out[g] = math.Max(out[g], s)
		}
	}
	return out
}

func TestDot(t *testing.T) {
	f := func(a, b []float32, want float32) {
		t.Helper()
		if got := Dot(a, b); math.Abs(float64(got-want)) > 1e-6 {
			t.Errorf("Dot(%v, %v) = %v; want %v", a, b, got, want)
		}
	}
	f(nil, nil, 0)
	f([]float32{1}, []float32{2}, 2)
	f([]float32{1, 2, 3, 4, 5, 6, 7, 8, 9}, []float32{1, 1, 1, 1, 1, 1, 1, 1, 1}, 45)
	f([]float32{1, -1, 1, -1, 1, -1, 1, -1}, []float32{1, 1, 1, 1, 1, 1, 1, 1}, 0)
}

func TestNormalize(t *testing.T) {
	v := []float32{3, 4}
	if !Normalize(v) || v[0] != 0.6 || v[1] != 0.8 {
		t.Fatalf("got %v", v)
	}
	for _, bad := range [][]float32{{0, 0}, {float32(math.NaN()), 1}, {float32(math.Inf(1)), 0}} {
		if Normalize(bad) {
			t.Errorf("Normalize(%v) = true", bad)
		}
	}
}

func TestBuilderRejects(t *testing.T) {
	b := NewBuilder(3, 2)
	for _, c := range []struct {
		g int
		v []float32
	}{{2, []float32{1, 0, 0}}, {-1, []float32{1, 0, 0}}, {0, []float32{1, 0}}, {0, []float32{0, 0, 0}}} {
		if err := b.Add(c.g, c.v); err == nil {
			t.Errorf("Add(%d, %v) accepted", c.g, c.v)
		}
	}
	if err := b.Add(1, []float32{0, 2, 0}); err != nil {
		t.Fatal(err)
	}
	x := b.Build()
	if x.Len() != 1 || x.GroupLen(0) != 0 || x.GroupLen(1) != 1 || x.Dims() != 3 {
		t.Fatalf("index: len %d groups %d/%d", x.Len(), x.GroupLen(0), x.GroupLen(1))
	}
	// Vectors are stored normalised; an empty group scores -1.
	got := x.GroupScores([]float32{0, 1, 0}, make([]float32, 2))
	if got[0] != -1 || got[1] != 1 {
		t.Fatalf("GroupScores = %v", got)
	}
}

// TestPick: thresholds per group, the best qualifying group wins, ties go
// to the lower group, nothing qualifying is -1.
func TestPick(t *testing.T) {
	b := NewBuilder(2, 3)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.Add(0, []float32{1, 0}))
	must(b.Add(1, []float32{0, 1}))
	must(b.Add(1, []float32{1, 1}))
	must(b.Add(2, []float32{1, 0}))
	x := b.Build()
	f := func(q []float32, th []float32, wantG int) {
		t.Helper()
		Normalize(q)
		if g, _ := x.Pick(q, th); g != wantG {
			t.Errorf("Pick(%v, %v) = %d; want %d", q, th, g, wantG)
		}
	}
	f([]float32{1, 0}, []float32{0.5, 0.5, 0.5}, 0) // tie between 0 and 2: the lower
	f([]float32{1, 0}, []float32{1.1, 0.5, 0.5}, 2) // group 0 cannot reach its threshold
	f([]float32{0, 1}, []float32{0.5, 0.5, 0.5}, 1)
	f([]float32{1, 1}, []float32{0.5, 1, 0.5}, 1)      // exactly at the threshold reaches it (within float32)
	f([]float32{1, 1}, []float32{0.5, 1.0001, 0.5}, 0) // the max example of group 1 is 1.0
	f([]float32{-1, 0}, []float32{0.1, 0.1, 0.1}, -1)
}

// TestPickMatchesBruteForce: the abandon checks never change the answer.
func TestPickMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, dims := range []int{5, 128, 300, 1536} {
		for round := 0; round < 20; round++ {
			groups := 1 + r.IntN(6)
			x := randomIndex(10+r.IntN(100), dims, groups, r)
			// Queries near an indexed vector, so high scores occur.
			q := make([]float32, dims)
			base := x.data[r.IntN(x.Len())*dims:][:dims]
			for j := range q {
				q[j] = base[j] + float32(r.NormFloat64())*float32(r.Float64())*0.1
			}
			Normalize(q)
			th := make([]float32, groups)
			for g := range th {
				th[g] = float32(r.Float64())
			}
			ref := bruteGroups(x, q)
			wantG, wantS := -1, -1.0
			for g, s := range ref {
				if s >= float64(th[g])+1e-5 && (wantG < 0 || s > wantS+1e-5) {
					wantG, wantS = g, s
				}
			}
			g, s := x.Pick(q, th)
			if wantG >= 0 && (g != wantG || math.Abs(float64(s)-wantS) > 1e-4) {
				// A near-tie within float32 rounding may go either way.
				if g < 0 || math.Abs(ref[g]-wantS) > 1e-4 {
					t.Fatalf("dims %d: Pick = %d (%v); want %d (%v), scores %v, thresholds %v", dims, g, s, wantG, wantS, ref, th)
				}
			}
			if wantG < 0 && g >= 0 && ref[g] < float64(th[g])-1e-5 {
				t.Fatalf("dims %d: Pick = %d (%v) below its threshold %v", dims, g, s, th[g])
			}
			got := x.GroupScores(q, make([]float32, groups))
			for i := range got {
				if math.Abs(float64(got[i])-ref[i]) > 1e-4 {
					t.Fatalf("GroupScores[%d] = %v; want %v", i, got[i], ref[i])
				}
			}
		}
	}
}
