package embed

import (
	"context"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"gw/adapters/upstream"
	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/perf/mock"
)

func TestParse(t *testing.T) {
	f := func(body string, n, dims int, wantErr string, want [][]float32) {
		t.Helper()
		var r Result
		err := r.Parse([]byte(body), n, dims, false)
		switch {
		case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
			t.Errorf("Parse(%s): err %v; want %q", body, err, wantErr)
			return
		case wantErr == "" && err != nil:
			t.Errorf("Parse(%s): %v", body, err)
			return
		case wantErr != "":
			return
		}
		for i, w := range want {
			for j := range w {
				if r.Vec(i)[j] != w[j] {
					t.Errorf("Parse(%s): vec %d = %v; want %v", body, i, r.Vec(i), w)
				}
			}
		}
	}
	f(`{"data":[{"index":1,"embedding":[1,2]},{"index":0,"embedding":[3,4]}],"usage":{"prompt_tokens":3}}`, 2, 2, "", [][]float32{{3, 4}, {1, 2}})
	f(`{"data":[{"embedding":[1,2]},{"embedding":[3.5,-4e-1]}]}`, 2, 2, "", [][]float32{{1, 2}, {3.5, -0.4}})
	f(`{"data":[{"index":0,"embedding":[1,2,3]}]}`, 1, 2, "want 2 numbers", nil)
	f(`{"data":[{"index":0,"embedding":[1]}]}`, 1, 2, "want 2 numbers", nil)
	f(`{"data":[{"index":0,"embedding":"AAAA"}]}`, 1, 2, "not an array", nil)
	f(`{"data":[{"index":0,"embedding":[1,"x"]}]}`, 1, 2, "want 2 numbers", nil)
	f(`{"data":[{"index":0,"embedding":[1,2]},{"index":0,"embedding":[1,2]}]}`, 2, 2, "twice", nil)
	f(`{"data":[{"index":5,"embedding":[1,2]}]}`, 1, 2, "out of range", nil)
	f(`{"data":[{"index":0,"embedding":[1,2]}]}`, 2, 2, "1 vectors for 2 inputs", nil)
	f(`{"data":[1]}`, 1, 2, "not an object", nil)
	f(`{"object":"list"}`, 1, 2, "no data array", nil)
	f(`<html>`, 1, 2, "not JSON", nil)
	var r Result
	if err := r.Parse([]byte(`{"data":[{"embedding":[0,0]}]}`), 1, 2, true); err == nil || !strings.Contains(err.Error(), "zero vector") {
		t.Errorf("zero vector normalised: %v", err)
	}
	if err := r.Parse([]byte(`{"data":[{"embedding":[3,4]}],"usage":{"prompt_tokens":7}}`), 1, 2, true); err != nil || r.Vec(0)[0] != 0.6 || r.Tokens != 7 {
		t.Errorf("normalise: %v %v %d", err, r.Vec(0), r.Tokens)
	}
}

const embedFile = `_format_version: "1"
provider_keys:
  - {display_name: oa, provider: openai, api_key: sk-test, api_base: "${MOCK}/v1"}
  - {display_name: oa-down, provider: openai, api_key: sk-test, api_base: "${MOCK}/knobs/status=503/v1"}
  - {display_name: oa-slow, provider: openai, api_key: sk-test, api_base: "${MOCK}/knobs/latency=300ms/v1"}
  - {display_name: claude, provider: anthropic, api_key: sk-test, api_base: "${MOCK}/v1"}
models:
  - {display_name: emb, provider: openai, model_name: text-embedding-3-small, provider_key: oa, embedding: {dimensions: 16}}
  - {display_name: emb-raw, provider: openai, model_name: text-embedding-3-small, provider_key: oa, embedding: {dimensions: 16, normalize: false}}
  - {display_name: emb-wrong, provider: openai, model_name: text-embedding-3-small, provider_key: oa, embedding: {dimensions: 8}}
  - {display_name: emb-down, provider: openai, model_name: text-embedding-3-small, provider_key: oa-down, retries: 2, embedding: {dimensions: 16}}
  - {display_name: emb-slow, provider: openai, model_name: text-embedding-3-small, provider_key: oa-slow, embedding: {dimensions: 16}}
  - {display_name: emb-claude, provider: anthropic, model_name: x, provider_key: claude, embedding: {dimensions: 16}}
  - {display_name: chat, provider: openai, model_name: gpt, provider_key: oa}
`

// startMock serves perf/mock (with `dimensions` unset it answers 1536
// numbers: the tests' models declare 16, which the mock honours only when
// asked, so the answers' length is checked for real).
func startMock(t *testing.T) (*mock.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := mock.New(mock.Config{})
	go m.Serve(ln)
	t.Cleanup(func() { m.Shutdown() })
	return m, "http://" + ln.Addr().String()
}

func compile(t *testing.T, base string) *snapshot.Snapshot {
	t.Helper()
	r := resources.Load([]byte(embedFile), func(k string) (string, bool) { return base, k == "MOCK" })
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	opt := snapshot.DefaultOptions()
	opt.Pool = upstream.NewPool(upstream.Options{})
	s, err := snapshot.Compile(r.Resources, opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEmbed(t *testing.T) {
	m, base := startMock(t)
	s := compile(t, base)
	ctx := context.Background()
	var r Result

	// The mock answers 1536 numbers unless asked otherwise: a model
	// declaring 16 must refuse them rather than truncate.
	err := Embed(ctx, s.Plans["emb"], [][]byte{[]byte("hello")}, 0, &r)
	if err == nil || !strings.Contains(err.Error(), "want 16 numbers") {
		t.Fatalf("dimension mismatch: %v", err)
	}
	last := m.Requests()[len(m.Requests())-1]
	if last.Path != "/v1/embeddings" || last.Header.Get("Authorization") != "Bearer sk-test" ||
		last.Body != `{"model":"text-embedding-3-small","input":["hello"],"encoding_format":"float"}` {
		t.Fatalf("upstream request: %s %v %s", last.Path, last.Header, last.Body)
	}
	for alias, want := range map[string]string{"chat": "no embedding block", "emb-claude": "cannot build"} {
		if err := Embed(ctx, s.Plans[alias], [][]byte{[]byte("x")}, 0, &r); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", alias, err, want)
		}
	}
	n := len(m.Requests())
	if err := Embed(ctx, s.Plans["emb-down"], [][]byte{[]byte("x")}, 0, &r); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("503: %v", err)
	}
	if got := len(m.Requests()) - n; got != 3 {
		t.Fatalf("503 with retries 2: %d attempts; want 3", got)
	}
	start := time.Now()
	if err := Embed(ctx, s.Plans["emb-slow"], [][]byte{[]byte("x")}, 50*time.Millisecond, &r); err != ErrTimeout {
		t.Fatalf("timeout: %v", err)
	}
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := Embed(tctx, s.Plans["emb-slow"], [][]byte{[]byte("x")}, 0, &r); err != ErrTimeout {
		t.Fatalf("context deadline: %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatalf("timeouts took %v", time.Since(start))
	}
}

// TestEmbedVectors runs against the mock with `dimensions` defaulting to
// its 1536 (the length the models below declare).
func TestEmbedVectors(t *testing.T) {
	_, base := startMock(t)
	src := strings.ReplaceAll(embedFile, "dimensions: 16", "dimensions: 1536")
	r := resources.Load([]byte(src), func(k string) (string, bool) { return base, k == "MOCK" })
	opt := snapshot.DefaultOptions()
	opt.Pool = upstream.NewPool(upstream.Options{})
	s, err := snapshot.Compile(r.Resources, opt)
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	texts := [][]byte{[]byte("refund my invoice"), []byte(`quote " and \ backslash`), []byte("ünïcödé")}
	for _, alias := range []string{"emb", "emb-raw"} {
		if err := Embed(context.Background(), s.Plans[alias], texts, 0, &res); err != nil {
			t.Fatal(err)
		}
		for i, txt := range texts {
			want := mock.Embedding(txt, 1536)
			for j := range want {
				if math.Abs(float64(res.Vec(i)[j]-want[j])) > 1e-6 {
					t.Fatalf("%s: vector %d differs at %d: %v; want %v", alias, i, j, res.Vec(i)[j], want[j])
				}
			}
		}
		if res.Tokens == 0 {
			t.Fatal("no usage")
		}
	}

	// The cache: a second session embeds only what the first did not.
	c := NewCache()
	s1 := c.Session()
	v1, err := s1.Vectors(context.Background(), s.Plans["emb"], []string{"a", "b", "a"}, 0)
	if err != nil || len(v1) != 3 || &v1[0][0] != &v1[2][0] || c.Calls.Load() != 1 || c.Texts.Load() != 2 {
		t.Fatalf("first session: %v calls %d texts %d", err, c.Calls.Load(), c.Texts.Load())
	}
	c.Commit(s1)
	s2 := c.Session()
	v2, err := s2.Vectors(context.Background(), s.Plans["emb"], []string{"b", "c"}, 0)
	if err != nil || &v2[0][0] != &v1[1][0] || c.Calls.Load() != 2 || c.Texts.Load() != 3 {
		t.Fatalf("second session: %v calls %d texts %d", err, c.Calls.Load(), c.Texts.Load())
	}
	// Another embedding model never shares vectors.
	if _, err := s2.Vectors(context.Background(), s.Plans["emb-raw"], []string{"b"}, 0); err != nil || c.Calls.Load() != 3 {
		t.Fatalf("other model: %v calls %d", err, c.Calls.Load())
	}
	c.Commit(s2)
	if c.Len() != 3 { // b, c for emb; b for emb-raw; a dropped
		t.Fatalf("cache keeps %d vectors; want 3", c.Len())
	}
	// A failed session leaves the cache as it was.
	s3 := c.Session()
	if _, err := s3.Vectors(context.Background(), s.Plans["emb-down"], []string{"z"}, 0); err == nil {
		t.Fatal("emb-down answered")
	}
	if c.Len() != 3 {
		t.Fatalf("failed session changed the cache: %d", c.Len())
	}
}
