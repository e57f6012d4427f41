package fuzz

import (
	"math"
	"testing"

	"gw/edge"
	"gw/edge/embed"
	"gw/edge/vecindex"
)

// FuzzEmbedParse: the embeddings answer reader never panics, and a vector
// it accepts has the requested length and, normalised, unit length.
func FuzzEmbedParse(f *testing.F) {
	f.Add([]byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2,0.3]}],"model":"m","usage":{"prompt_tokens":2,"total_tokens":2}}`), 1, 3)
	f.Add([]byte(`{"data":[{"index":1,"embedding":[1,2]},{"index":0,"embedding":[3,4]}]}`), 2, 2)
	f.Add([]byte(`{"data":[{"embedding":"AAAAAA=="}]}`), 1, 1)
	f.Add([]byte(`{"data":[{"index":-1,"embedding":[1e400]}]}`), 1, 1)
	f.Fuzz(func(t *testing.T, body []byte, n, dims int) {
		if n < 0 || n > 64 || dims < 0 || dims > 64 {
			return
		}
		var r embed.Result
		if err := r.Parse(body, n, dims, true); err != nil {
			return
		}
		if len(r.Vecs) != n*dims {
			t.Fatalf("%d numbers for %d×%d", len(r.Vecs), n, dims)
		}
		for i := 0; i < n && dims > 0; i++ {
			var s float64
			for _, v := range r.Vec(i) {
				s += float64(v) * float64(v)
			}
			if math.Abs(s-1) > 1e-3 {
				t.Fatalf("vector %d has squared norm %v", i, s)
			}
		}
	})
}

// FuzzLatestUserText: any body, no panic; the text is what a semantic
// router embeds.
func FuzzLatestUserText(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":"b"}]}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":"\ud800"}]}`))
	f.Add([]byte(`{"messages":[`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = edge.LatestUserText(nil, body)
	})
}

// FuzzVecindexPick: any vectors and thresholds; the pick agrees with the
// full group scores.
func FuzzVecindexPick(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, uint8(3), uint8(2), uint8(128))
	f.Fuzz(func(t *testing.T, raw []byte, dims, groups, th uint8) {
		if len(raw) == 0 {
			return
		}
		d, g := int(dims%9)+1, int(groups%4)+1
		b := vecindex.NewBuilder(d, g)
		v := make([]float32, d)
		for i := 0; i+d <= len(raw)-d; i += d {
			for j := range v {
				v[j] = float32(int8(raw[i+j]))
			}
			_ = b.Add((i/d)%g, v)
		}
		x := b.Build()
		q := make([]float32, d)
		for j := range q {
			q[j] = float32(int8(raw[len(raw)-1-j%len(raw)]))
		}
		if !vecindex.Normalize(q) {
			return
		}
		ths := make([]float32, g)
		for i := range ths {
			ths[i] = float32(th) / 255
		}
		grp, score := x.Pick(q, ths)
		all := x.GroupScores(q, make([]float32, g))
		if grp >= 0 {
			if all[grp] < ths[grp]-1e-3 || math.Abs(float64(all[grp]-score)) > 1e-3 {
				t.Fatalf("pick %d (%v) against scores %v thresholds %v", grp, score, all, ths)
			}
			for i, s := range all {
				if s >= ths[i]+1e-3 && s > score+1e-3 {
					t.Fatalf("pick %d (%v) but group %d scores %v", grp, score, i, s)
				}
			}
		} else {
			for i, s := range all {
				if s >= ths[i]+1e-3 {
					t.Fatalf("no pick but group %d scores %v ≥ %v", i, s, ths[i])
				}
			}
		}
	})
}
