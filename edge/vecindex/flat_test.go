package vecindex

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFlat: Best agrees with a brute-force scan after adds and removes.
func TestFlat(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, dims := range []int{3, 128, 1536} {
		f := NewFlat(dims)
		var ref [][]float32
		for step := 0; step < 300; step++ {
			if len(ref) > 0 && r.IntN(3) == 0 {
				i := r.IntN(len(ref))
				if moved := f.Remove(i); moved >= 0 {
					ref[i] = ref[moved]
				}
				ref = ref[:len(ref)-1]
			} else {
				v := randomUnit(dims, r)
				if got := f.Add(v); got != len(ref) {
					t.Fatalf("Add slot %d; want %d", got, len(ref))
				}
				ref = append(ref, v)
			}
			if f.Len() != len(ref) {
				t.Fatalf("Len %d; want %d", f.Len(), len(ref))
			}
			if len(ref) == 0 {
				continue
			}
			// A query near a stored vector, and a threshold around it.
			base := ref[r.IntN(len(ref))]
			q := make([]float32, dims)
			for j := range q {
				q[j] = base[j] + float32(r.NormFloat64())*0.05
			}
			Normalize(q)
			th := float32(r.Float64())
			want, ws := -1, float32(-1)
			for i, v := range ref {
				if s := Dot(q, v); s >= th-Epsilon && s > ws {
					want, ws = i, s
				}
			}
			got, gs := f.Best(q, th)
			if got != want && (got < 0 || want < 0 || ws-gs > 1e-4) {
				t.Fatalf("dims %d: Best = %d (%v); want %d (%v)", dims, got, gs, want, ws)
			}
		}
	}
}

// TestDotMatchesGeneric: the platform Dot (AVX on amd64) agrees with the
// portable loop for every length around its 8- and 32-wide steps.
func TestDotMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for n := 0; n < 300; n++ {
		a, b := make([]float32, n), make([]float32, n+3) // b may be longer
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for i := range b {
			b[i] = float32(r.NormFloat64())
		}
		var ref float64
		for i := range a {
			ref += float64(a[i]) * float64(b[i])
		}
		if got := Dot(a, b); math.Abs(float64(got)-ref) > 1e-4*math.Max(1, math.Abs(ref)) {
			t.Fatalf("n %d: Dot = %v; want %v (generic %v)", n, got, ref, dotGeneric(a, b))
		}
	}
}
