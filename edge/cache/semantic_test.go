package cache

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"gw/edge/vecindex"
	"gw/limiter/redistest"
)

func TestAppendScope(t *testing.T) {
	type res struct {
		scope, prompt string
		ok            bool
	}
	scope := func(format, body string) res {
		s, p, ok := AppendScope(nil, nil, format, "gpt", []byte(body))
		return res{string(s), string(p), ok}
	}
	base := scope("chat_completions", `{"model":"x","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello there"}],"temperature":0.2}`)
	if !base.ok || base.prompt != "hello there" {
		t.Fatalf("base: %+v", base)
	}
	for _, c := range []struct {
		name, format, body string
		same, ok           bool
		prompt             string
	}{
		{"other prompt, same scope", "chat_completions",
			`{"temperature":0.2, "messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}], "user":"u1"}`, true, true, "hi"},
		{"text parts", "chat_completions",
			`{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"temperature":0.2}`, true, true, "a\nb"},
		{"another temperature", "chat_completions",
			`{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello there"}],"temperature":0.3}`, false, true, "hello there"},
		{"another system prompt", "chat_completions",
			`{"messages":[{"role":"system","content":"be long"},{"role":"user","content":"hello there"}],"temperature":0.2}`, false, true, "hello there"},
		{"another format", "messages",
			`{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello there"}],"temperature":0.2}`, false, true, "hello there"},
		{"last message not the user's", "chat_completions",
			`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`, false, false, ""},
		{"an image", "chat_completions",
			`{"messages":[{"role":"user","content":[{"type":"text","text":"what is this"},{"type":"image_url","image_url":{"url":"data:x"}}]}]}`, false, false, ""},
		{"no messages", "chat_completions", `{"temperature":0.2}`, false, false, ""},
		{"empty messages", "chat_completions", `{"messages":[]}`, false, false, ""},
		{"empty prompt", "chat_completions", `{"messages":[{"role":"user","content":""}]}`, false, false, ""},
		{"embeddings", "embeddings", `{"input":"x"}`, false, false, ""},
		{"anthropic blocks", "messages", `{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"q"}]}]}`, false, true, "q"},
		{"anthropic tool result", "messages", `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]}`, false, false, ""},
		{"responses string", "responses", `{"input":"hello there","instructions":"be brief"}`, false, true, "hello there"},
		{"responses items", "responses", `{"input":[{"role":"user","content":[{"type":"input_text","text":"hey"}]}]}`, false, true, "hey"},
		{"responses function output", "responses", `{"input":[{"type":"function_call_output","call_id":"c","output":"x"}]}`, false, false, ""},
		{"not json", "chat_completions", `{"messages":[`, false, false, ""},
	} {
		got := scope(c.format, c.body)
		if got.ok != c.ok || (c.ok && got.prompt != c.prompt) || (c.ok && (got.scope == base.scope) != c.same) {
			t.Errorf("%s: ok %v prompt %q same scope %v; want %v %q %v", c.name, got.ok, got.prompt, got.scope == base.scope, c.ok, c.prompt, c.same)
		}
	}
	// The responses string input and a one-item list of the same text
	// are both an empty conversation plus the prompt.
	a, b := scope("responses", `{"input":"x"}`), scope("responses", `{"input":[{"role":"user","content":"x"}]}`)
	if a.scope != b.scope || a.prompt != b.prompt {
		t.Errorf("responses: %+v vs %+v", a, b)
	}
	// A scope never equals an exact key's canonical bytes.
	exact, _ := AppendCanonical(nil, "chat_completions", "gpt", []byte(`{"messages":[]}`))
	if string(exact) == scope("chat_completions", `{"messages":[{"role":"user","content":"x"}]}`).scope {
		t.Error("a scope equals an exact canonical form")
	}
}

func unitVec(r *rand.Rand, dims int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	vecindex.Normalize(v)
	return v
}

// mix returns a unit vector of cosine c with unit vector a (b is another
// random unit vector).
func mix(a, b []float32, c float64) []float32 {
	// Orthogonalise b against a, then combine.
	d := float64(vecindex.Dot(a, b))
	o := make([]float32, len(a))
	for i := range o {
		o[i] = b[i] - float32(d)*a[i]
	}
	vecindex.Normalize(o)
	s := math.Sqrt(1 - c*c)
	out := make([]float32, len(a))
	for i := range out {
		out[i] = float32(c)*a[i] + float32(s)*o[i]
	}
	vecindex.Normalize(out)
	return out
}

func semReq(scope string, vec []float32, th float32) *Request {
	return &Request{Namespace: "ns", Canon: []byte("exact " + scope + string(rune(len(vec)))), Scope: Sum("ns", []byte(scope)), Vec: vec, Threshold: th}
}

func body(s string) Entry { return Entry{StatusCode: 200, Body: []byte(s)} }

func TestSemMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const dims = 300
	m := NewSemMemory(1 << 30)
	a := unitVec(r, dims)
	near, far := mix(a, unitVec(r, dims), 0.95), mix(a, unitVec(r, dims), 0.85)
	m.SetNear(semReq("s1", a, 0.9), body("A"), time.Minute)
	f := func(req *Request, want string) {
		t.Helper()
		e, st := m.GetNear(req)
		if want == "" {
			if st != Miss {
				t.Fatalf("got %v %q; want a miss", st, e.Body)
			}
			return
		}
		if st != Hit || string(e.Body) != want {
			t.Fatalf("got %v %q; want %q", st, e.Body, want)
		}
	}
	f(semReq("s1", a, 0.9), "A")
	f(semReq("s1", near, 0.9), "A")
	f(semReq("s1", far, 0.9), "")
	f(semReq("s1", far, 0.85), "A") // at the threshold (within float32)
	f(semReq("s2", a, 0.9), "")     // another scope
	// The nearest of several wins; the same prompt replaces its entry.
	m.SetNear(semReq("s1", near, 0.9), body("N"), time.Minute)
	f(semReq("s1", near, 0.9), "N")
	m.SetNear(semReq("s1", a, 0.9), body("A2"), time.Minute)
	f(semReq("s1", a, 0.9), "A2")
	if m.Len() != 2 {
		t.Fatalf("len %d; want 2", m.Len())
	}
	// Expiry.
	now := time.Now().UnixNano()
	m.now = func() int64 { return now + int64(2*time.Minute) }
	f(semReq("s1", a, 0.9), "")
	m.now = func() int64 { return time.Now().UnixNano() }
	// Another vector length in the same scope replaces the scope.
	m.SetNear(semReq("s1", unitVec(r, 10), 0.9), body("short"), time.Minute)
	f(semReq("s1", near, 0.9), "")
}

// TestSemMemoryEviction: the byte bound evicts the least recently used
// entries with their vectors; the survivors stay findable (the swap
// remove keeps slots and entries in step).
func TestSemMemoryEviction(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const dims, n = 64, 200
	per := int64(5*dims+2*entryOverhead+1) * 20 // room for 20 entries per shard
	m := NewSemMemory(per * semShards)
	vecs := make([][]float32, n)
	for i := range vecs {
		vecs[i] = unitVec(r, dims)
		m.SetNear(semReq("one scope", vecs[i], 0.99), body(string(rune('a'+i%26))), time.Minute)
	}
	if b := m.Bytes(); b > per {
		t.Fatalf("bytes %d over the shard bound %d", b, per)
	}
	if m.Len() != 20 {
		t.Fatalf("len %d; want 20", m.Len())
	}
	for i, v := range vecs {
		_, st := m.GetNear(semReq("one scope", v, 0.99))
		if (i >= n-20) != (st == Hit) {
			t.Fatalf("entry %d: %v", i, st)
		}
	}
}

func TestCandidateRoundTrip(t *testing.T) {
	k := Key{Hi: 1, Lo: 2, Check: 3}
	v := []float32{0.5, -0.25, 1}
	rec := AppendCandidate(nil, 9, &k, v)
	sc, k2, v2, ok := ParseCandidate(rec, nil)
	if !ok || sc != 9 || k2 != k || len(v2) != 3 || v2[1] != -0.25 {
		t.Fatalf("%v %v %v %v", ok, sc, k2, v2)
	}
	for _, bad := range [][]byte{nil, rec[:candidateHeader], rec[:len(rec)-1], append(rec, 0)} {
		if _, _, _, ok := ParseCandidate(bad, nil); ok {
			t.Errorf("accepted %x", bad)
		}
	}
}

// TestSignaturesStable: the hyperplanes are fixed, so every process puts
// a vector in the same buckets; near vectors mostly share a bucket.
func TestSignaturesStable(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	a := unitVec(r, 1536)
	if Signatures(a) != Signatures(append([]float32(nil), a...)) {
		t.Fatal("signatures differ for one vector")
	}
	shared := 0
	for i := 0; i < 100; i++ {
		sa, sb := Signatures(a), Signatures(mix(a, unitVec(r, 1536), 0.98))
		for t := range sa {
			if sa[t] == sb[t] {
				shared++
				break
			}
		}
	}
	if shared < 95 {
		t.Fatalf("cosine 0.98 pairs share a bucket %d times in 100; want ≥ 95", shared)
	}
}

// TestRedisSemantic: two stores on one redis-server share semantic hits;
// a vector below the threshold misses; a dead server is an error.
func TestRedisSemantic(t *testing.T) {
	rs := redistest.Start(t)
	a := NewRedis(RedisConfig{Addr: rs.Addr()}, nil)
	defer a.Close()
	b := NewRedis(RedisConfig{Addr: rs.Addr()}, nil)
	defer b.Close()
	r := rand.New(rand.NewPCG(9, 10))
	v := unitVec(r, 256)
	near := mix(v, unitVec(r, 256), 0.99)
	if _, st := b.GetNear(semReq("s", v, 0.95)); st != Miss {
		t.Fatalf("empty: %v", st)
	}
	a.SetNear(semReq("s", v, 0.95), body("V"), time.Minute)
	waitFor(t, "the semantic write", func() bool {
		e, st := b.GetNear(semReq("s", near, 0.95))
		return st == Hit && string(e.Body) == "V"
	})
	if _, st := b.GetNear(semReq("s", mix(v, unitVec(r, 256), 0.9), 0.95)); st != Miss {
		t.Fatalf("below the threshold: %v", st)
	}
	if _, st := b.GetNear(semReq("other", v, 0.95)); st != Miss {
		t.Fatalf("another scope: %v", st)
	}
	rs.Kill()
	if _, st := b.GetNear(semReq("s", v, 0.95)); st != Error {
		t.Fatalf("redis down: %v", st)
	}
}
