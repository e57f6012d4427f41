package cache

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// semWith returns a semantic memory store of n entries of dims-long
// vectors spread over scopes scopes, and a query request of scope 0.
func semWith(n, dims, scopes int) (*SemMemory, *Request) {
	r := rand.New(rand.NewPCG(1, 2))
	m := NewSemMemory(1 << 40)
	e := Entry{StatusCode: 200, Body: make([]byte, 512)}
	for i := 0; i < n; i++ {
		m.SetNear(semReq("scope "+strconv.Itoa(i%scopes), unitVec(r, dims), 0.9), e, time.Hour)
	}
	return m, semReq("scope 0", unitVec(r, dims), 0.9)
}

var sinkStatus Status

// BenchmarkSemanticLookup: a semantic memory lookup (a miss: every
// candidate of the scope is scored) among 10,000 entries of 1,536
// dimensions, all in the query's scope (the worst case) or over 100
// scopes. The embedding call it follows is not included.
func BenchmarkSemanticLookup(b *testing.B) {
	for _, c := range []struct {
		name   string
		scopes int
	}{{"10k-one-scope", 1}, {"10k-100-scopes", 100}} {
		b.Run(c.name, func(b *testing.B) {
			m, q := semWith(10000, 1536, c.scopes)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, sinkStatus = m.GetNear(q)
			}
		})
	}
}
