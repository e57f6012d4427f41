package vecindex

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refPick is the reference the quantised search must equal exactly: every
// group's best score by Dot (GroupScores), the highest one reaching its
// threshold within Epsilon, ties to the lower group.
func refPick(x *Index, q, th []float32) (int, float32) {
	scores := x.GroupScores(q, make([]float32, x.Groups()))
	g, s := -1, float32(-1)
	for i, v := range scores {
		if x.GroupLen(i) > 0 && v >= th[i]-Epsilon && (g < 0 || v > s) {
			g, s = i, v
		}
	}
	return g, s
}

// clustered builds an index whose groups are clouds around a centre of
// their own (as a route's examples are), so many vectors score close to
// the query and the first pass must keep several candidates. spread is the
// noise per dimension relative to the centre's.
func clustered(n, dims, groups int, spread float64, r *rand.Rand) (*Index, [][]float32) {
	centres := make([][]float32, groups)
	for g := range centres {
		centres[g] = randomUnit(dims, r)
	}
	b := NewBuilder(dims, groups)
	v := make([]float32, dims)
	for i := 0; i < n; i++ {
		c := centres[i%groups]
		for j := range v {
			v[j] = c[j] + float32(r.NormFloat64()*spread/math.Sqrt(float64(dims)))
		}
		if err := b.Add(i%groups, v); err != nil {
			panic(err)
		}
	}
	return b.Build(), centres
}

// near returns a unit vector close to c.
func near(c []float32, noise float64, r *rand.Rand) []float32 {
	q := make([]float32, len(c))
	for j := range q {
		q[j] = c[j] + float32(r.NormFloat64()*noise/math.Sqrt(float64(len(c))))
	}
	Normalize(q)
	return q
}

// TestPickExact is the guarantee of the quantised first pass: over random
// and clustered indexes, queries near their vectors and thresholds around
// the scores, Pick returns the very group and float32 score of the full
// Dot scan, bit for bit.
func TestPickExact(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, dims := range []int{1, 3, 31, 32, 33, 100, 384, 1536, 3072} {
		for round := 0; round < 30; round++ {
			groups := 1 + r.IntN(8)
			n := 1 + r.IntN(200)
			var x *Index
			var centres [][]float32
			if round%3 == 0 {
				x = randomIndex(n, dims, groups, r)
				centres = [][]float32{x.data[r.IntN(x.Len())*dims:][:dims]}
			} else {
				x, centres = clustered(n, dims, groups, 0.3+r.Float64(), r)
			}
			q := near(centres[r.IntN(len(centres))], r.Float64(), r)
			ref := x.GroupScores(q, make([]float32, groups))
			th := make([]float32, groups)
			for g := range th {
				// Thresholds at, just around and away from the scores.
				switch r.IntN(4) {
				case 0:
					th[g] = ref[g]
				case 1:
					th[g] = ref[g] + float32(r.NormFloat64()*1e-3)
				default:
					th[g] = float32(r.Float64())
				}
			}
			wg, ws := refPick(x, q, th)
			g, s := x.Pick(q, th)
			if g != wg || math.Float32bits(s) != math.Float32bits(ws) {
				t.Fatalf("dims %d n %d: Pick = %d (%v); want %d (%v)", dims, n, g, s, wg, ws)
			}
		}
	}
}

// TestPickExactTies: equal vectors in several groups tie exactly; the
// lower group wins, as in the full scan, and a vector with one dominant
// dimension (a coarse scale, so a wide bound) is still exact.
func TestPickExactTies(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	const dims = 768
	v := randomUnit(dims, r)
	spike := make([]float32, dims)
	copy(spike, v)
	spike[5] = 40
	b := NewBuilder(dims, 4)
	for g := 3; g >= 0; g-- {
		if err := b.Add(g, v); err != nil {
			t.Fatal(err)
		}
		if err := b.Add(g, spike); err != nil {
			t.Fatal(err)
		}
	}
	x := b.Build()
	for _, q := range [][]float32{v, near(v, 0.2, r), near(spike, 0.2, r), x.data[dims : 2*dims]} {
		th := []float32{0.9, 0.1, 0.1, 0.1}
		wg, ws := refPick(x, q, th)
		if g, s := x.Pick(q, th); g != wg || s != ws {
			t.Fatalf("Pick = %d (%v); want %d (%v)", g, s, wg, ws)
		}
	}
}

// TestFlatExact: Flat.Best equals the full Dot scan after adds and
// removes, including duplicate vectors (the lower slot wins).
func TestFlatExact(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, dims := range []int{7, 256, 1536} {
		f := NewFlat(dims)
		var ref [][]float32
		c := randomUnit(dims, r)
		for step := 0; step < 400; step++ {
			switch {
			case len(ref) > 0 && r.IntN(3) == 0:
				i := r.IntN(len(ref))
				if moved := f.Remove(i); moved >= 0 {
					ref[i] = ref[moved]
				}
				ref = ref[:len(ref)-1]
			case len(ref) > 0 && r.IntN(5) == 0:
				v := ref[r.IntN(len(ref))] // a twin
				f.Add(v)
				ref = append(ref, v)
			default:
				v := near(c, 0.5+r.Float64(), r)
				f.Add(v)
				ref = append(ref, v)
			}
			q := near(c, r.Float64(), r)
			th := float32(0.5 + r.Float64()*0.5)
			want, ws := -1, float32(-1)
			for i, v := range ref {
				if s := Dot(q, v); s >= th-Epsilon && (want < 0 || s > ws) {
					want, ws = i, s
				}
			}
			if got, gs := f.Best(q, th); got != want || gs != ws {
				t.Fatalf("dims %d step %d: Best = %d (%v); want %d (%v)", dims, step, got, gs, want, ws)
			}
		}
	}
}

// TestQuantBound: the bound each vector carries holds for the code score
// (checked in float64 against the true dot product).
func TestQuantBound(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	for _, dims := range []int{3, 1536} {
		x, cs := clustered(50, dims, 2, 1, r)
		q := near(cs[0], 0.5, r)
		z := &x.z
		m := 0.0
		for _, f := range q {
			m = math.Max(m, math.Abs(float64(f)))
		}
		sq := m / qmax
		var f2, bsum float64
		qc := make([]int8, z.stride)
		for j, f := range q {
			b := math.Round(float64(f) / sq)
			qc[j] = int8(b)
			bsum += b
			f2 += (float64(f) - sq*b) * (float64(f) - sq*b)
		}
		out := make([]int32, x.Len())
		dots(z.codes, qc, z.stride, out)
		for i := range out {
			var exact float64
			for j, f := range x.data[i*dims : (i+1)*dims] {
				exact += float64(f) * float64(q[j])
			}
			approx := (float64(out[i]) - 128*bsum) * float64(z.scale[i]) * sq
			bound := float64(z.errN[i]) + float64(z.hatN[i])*math.Sqrt(f2)
			if d := math.Abs(approx - exact); d > bound {
				t.Fatalf("dims %d vector %d: |approx-exact| = %v > bound %v", dims, i, d, bound)
			}
			if dims == 1536 && bound > 0.05 {
				t.Fatalf("bound %v: the codes are too coarse to rule anything out", bound)
			}
		}
	}
}

// TestDotsMatchesGeneric: the platform kernel agrees with the portable
// loop, including the extreme codes (the largest sums, and the pairs that
// would saturate VPMADDUBSW's int16 if the query's codes went past 64).
func TestDotsMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 30))
	for _, stride := range []int{32, 64, 96, 160, 1536, 8192} {
		n := 1 + r.IntN(20)
		codes := make([]uint8, n*stride)
		q := make([]int8, stride)
		for round := 0; round < 4; round++ {
			for i := range codes {
				codes[i] = uint8(r.IntN(256))
				if round >= 2 {
					codes[i] = 255
				}
			}
			for j := range q {
				q[j] = int8(r.IntN(2*qmax+1) - qmax)
				if round == 2 {
					q[j] = qmax
				} else if round == 3 {
					q[j] = -qmax
				}
			}
			got, want := make([]int32, n), make([]int32, n)
			dots(codes, q, stride, got)
			dotsGeneric(codes, q, stride, want)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("stride %d round %d vector %d: dots = %d; want %d", stride, round, i, got[i], want[i])
				}
			}
			if round >= 2 && int64(want[0]) != int64(255)*int64(q[0])*int64(stride) {
				t.Fatalf("stride %d: extreme sum %d", stride, want[0])
			}
		}
	}
}
