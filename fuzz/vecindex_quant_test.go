package fuzz

import (
	"math"
	"testing"

	"gw/edge/vecindex"
)

// FuzzVecPick: the quantised search (Index.Pick, Flat.Best) returns
// exactly the answer of scoring every vector with vecindex.Dot, for any
// vectors, query and thresholds the bytes spell: its first pass may only
// rule out vectors that provably cannot change the answer.
func FuzzVecPick(f *testing.F) {
	f.Add(uint8(3), uint8(2), []byte{1, 2, 3, 3, 2, 1, 1, 2, 3, 250, 1, 7}, uint16(40000))
	f.Add(uint8(40), uint8(3), []byte("the same bytes make twin vectors in every group, and ties must go low"), uint16(0))
	f.Add(uint8(33), uint8(1), []byte{127, 0, 0, 0, 128, 0, 0, 0, 1, 1, 1, 1, 255, 255}, uint16(65535))
	f.Add(uint8(64), uint8(4), []byte{0}, uint16(30000))
	f.Fuzz(func(t *testing.T, dims, groups uint8, data []byte, th uint16) {
		d, ng := int(dims%96)+1, int(groups%5)+1
		if len(data) == 0 || len(data) > 4096 {
			return
		}
		// Vector k is read cyclically from the bytes from offset 7k, as
		// signed values; some of them repeat, some are spiky.
		vec := func(k int) []float32 {
			v := make([]float32, d)
			for j := range v {
				v[j] = float32(int8(data[(7*k+j)%len(data)]))
			}
			if k%5 == 4 {
				v[k%d] *= 50
			}
			return v
		}
		q := vec(len(data) % 11)
		for j := range q {
			q[j] += float32(j%3) - 1 // near, not on, a stored vector
		}
		if !vecindex.Normalize(q) {
			return
		}
		n := 1 + len(data)%60
		b := vecindex.NewBuilder(d, ng)
		flat := vecindex.NewFlat(d)
		var stored [][]float32
		for k := 0; k < n; k++ {
			v := vec(k)
			if err := b.Add(k%ng, v); err != nil {
				continue // a zero vector
			}
			vecindex.Normalize(v)
			flat.Add(v)
			stored = append(stored, v)
		}
		x := b.Build()
		ths := make([]float32, ng)
		for g := range ths {
			ths[g] = float32(int(th)+g*997)/32768 - 1 // in [-1, 1)
		}
		scores := x.GroupScores(q, make([]float32, ng))
		wg, ws := -1, float32(-1)
		for g, s := range scores {
			if x.GroupLen(g) > 0 && s >= ths[g]-vecindex.Epsilon && (wg < 0 || s > ws) {
				wg, ws = g, s
			}
		}
		if g, s := x.Pick(q, ths); g != wg || math.Float32bits(s) != math.Float32bits(ws) {
			t.Fatalf("Pick = %d (%v); want %d (%v)", g, s, wg, ws)
		}
		wi, wsf := -1, float32(-1)
		for i, v := range stored {
			if s := vecindex.Dot(q, v); s >= ths[0]-vecindex.Epsilon && (wi < 0 || s > wsf) {
				wi, wsf = i, s
			}
		}
		if i, s := flat.Best(q, ths[0]); i != wi || math.Float32bits(s) != math.Float32bits(wsf) {
			t.Fatalf("Flat.Best = %d (%v); want %d (%v)", i, s, wi, wsf)
		}
	})
}
