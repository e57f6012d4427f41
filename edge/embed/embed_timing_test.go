package embed

import (
	"strconv"
	"testing"

	"gw/perf/mock"
)

// BenchmarkParse1536 reads one 1,536-dimension embeddings answer: the
// per-request cost of a semantic router's query vector beyond the call.
func BenchmarkParse1536(b *testing.B) {
	v := mock.Embedding([]byte("refund my invoice"), 1536)
	body := []byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[`)
	for i, f := range v {
		if i > 0 {
			body = append(body, ',')
		}
		body = strconv.AppendFloat(body, float64(f), 'g', -1, 32)
	}
	body = append(body, `]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":4,"total_tokens":4}}`...)
	var r Result
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for i := 0; i < b.N; i++ {
		if err := r.Parse(body, 1, 1536, false); err != nil {
			b.Fatal(err)
		}
	}
}
