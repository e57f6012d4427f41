package cache

import (
	"strconv"
	"testing"
	"time"
)

var chatBody = []byte(`{"model":"gpt-4o","messages":[{"role":"system","content":"You are a helpful assistant that answers questions about the product catalogue briefly."},` +
	`{"role":"user","content":"What is the return policy for items bought during the winter sale, and does it differ for electronics?"}],` +
	`"temperature":0.2,"max_tokens":256,"user":"u-123","stream":false,"top_p":1}`)

var sinkKey Key

// BenchmarkCanonicalKey: canonical form and both hashes of a typical chat
// body (no allocation: the buffer is reused).
func BenchmarkCanonicalKey(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(chatBody)))
	buf := make([]byte, 0, 1024)
	for i := 0; i < b.N; i++ {
		buf, _ = AppendCanonical(buf[:0], "chat_completions", "gpt-4o", chatBody)
		sinkKey = Sum("faq", buf)
	}
}

func memWith(n int) (*Memory, []Key) {
	m := NewMemory(256 << 20)
	keys := make([]Key, n)
	body := make([]byte, 1024)
	for i := range keys {
		keys[i] = Sum("ns", []byte(strconv.Itoa(i)))
		m.Set(&keys[i], Entry{StatusCode: 200, Body: body}, time.Hour)
	}
	return m, keys
}

// BenchmarkMemoryGetHit / Miss: a lookup of a computed key in a store of
// 10,000 entries (target ≤ 1 µs, 0 allocs on a miss).
func BenchmarkMemoryGetHit(b *testing.B) {
	m, keys := memWith(10000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, st := m.Get(&keys[i%len(keys)]); st != Hit {
			b.Fatal("miss")
		}
	}
}

func BenchmarkMemoryGetMiss(b *testing.B) {
	m, _ := memWith(10000)
	k := Sum("ns", []byte("absent"))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, st := m.Get(&k); st != Miss {
			b.Fatal("hit")
		}
	}
}

func BenchmarkMemoryGetParallel(b *testing.B) {
	m, keys := memWith(10000)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.Get(&keys[i%len(keys)])
			i++
		}
	})
}

// BenchmarkExactLookupMiss: the whole stage's work on a miss — canonical
// form, hashes, memory lookup.
func BenchmarkExactLookupMiss(b *testing.B) {
	m, _ := memWith(10000)
	x := &Exact{Store: m}
	buf := make([]byte, 0, 1024)
	r := new(Request)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf, _ = AppendCanonical(buf[:0], "chat_completions", "gpt-4o", chatBody)
		*r = Request{Namespace: "faq", Canon: buf}
		if _, st := x.Lookup(r); st != Miss {
			b.Fatal("hit")
		}
	}
}
