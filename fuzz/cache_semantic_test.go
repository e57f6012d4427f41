package fuzz

import (
	"bytes"
	"math"
	"testing"

	"gw/edge/cache"
)

// FuzzCacheScope: AppendScope never panics, is deterministic, and a keyed
// body has a non-empty prompt whose scope differs from the exact form.
func FuzzCacheScope(f *testing.F) {
	for _, s := range cacheSeeds {
		f.Add([]byte(s), uint8(0))
	}
	f.Add([]byte(`{"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a\n"}]}]}`), uint8(0))
	f.Add([]byte(`{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}]}`), uint8(2))
	f.Add([]byte(`{"input":"\u00e9"}`), uint8(2))
	formats := []string{"chat_completions", "messages", "responses", "embeddings"}
	f.Fuzz(func(t *testing.T, body []byte, fi uint8) {
		format := formats[int(fi)%len(formats)]
		s1, p1, ok1 := cache.AppendScope(nil, nil, format, "gpt", body)
		s2, p2, ok2 := cache.AppendScope(make([]byte, 0, 8), []byte("pre"), format, "gpt", body)
		if ok1 != ok2 || (ok1 && (!bytes.Equal(s1, s2) || !bytes.Equal(append([]byte("pre"), p1...), p2))) {
			t.Fatalf("not deterministic: %q %q / %q %q", s1, p1, s2, p2)
		}
		if !ok1 {
			return
		}
		if len(p1) == 0 {
			t.Fatal("keyed with an empty prompt")
		}
		if exact, ok := cache.AppendCanonical(nil, format, "gpt", body); ok && bytes.Equal(exact, s1) {
			t.Fatal("scope equals the exact form")
		}
	})
}

// FuzzCacheCandidate: ParseCandidate never panics, accepts only what
// AppendCandidate writes, and a parsed record re-encodes to itself.
func FuzzCacheCandidate(f *testing.F) {
	k := cache.Key{Hi: 1, Lo: 2, Check: 3}
	f.Add(cache.AppendCandidate(nil, 7, &k, []float32{0.6, 0.8}))
	f.Add(cache.AppendCandidate(nil, 0, &k, []float32{1}))
	f.Add([]byte{})
	f.Add(make([]byte, 34))
	f.Fuzz(func(t *testing.T, rec []byte) {
		sc, k, v, ok := cache.ParseCandidate(rec, nil)
		if !ok {
			return
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatal("a non-finite value accepted")
			}
		}
		if again := cache.AppendCandidate(nil, sc, &k, v); !bytes.Equal(again, rec) {
			t.Fatalf("re-encoded %x; was %x", again, rec)
		}
	})
}
