package main

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/responses"

	"gw/edge/cache"
	"gw/edge/usage/usagetest"
	"gw/limiter/redistest"
	"gw/perf/mock"
)

// Semantic cache policies against the mock's deterministic embeddings
// (mock.Embedding; cosine in semantic_e2e_test.go gives the exact score
// gw computes), on both backends: two gw processes share one real
// redis-server.

const semCacheBase = "what is the warranty period"

// semCacheProbes finds near, a prompt whose cosine with semCacheBase is
// clearly positive and whose vector shares an LSH bucket with the base's
// (so the Redis backend finds it as a candidate: cache.Signatures), and
// far, one scoring at least 0.01 below near.
func semCacheProbes() (near, far string, s float64) {
	bs := cache.Signatures(mock.Embedding([]byte(semCacheBase), semDims))
	for i := 0; near == ""; i++ {
		q := "warranty probe " + strconv.Itoa(i)
		if c := cosine(q, semCacheBase); c > 0.04 {
			qs := cache.Signatures(mock.Embedding([]byte(q), semDims))
			for t := range qs {
				if qs[t] == bs[t] {
					near, s = q, c
					break
				}
			}
		}
	}
	for i := 0; ; i++ {
		q := "far probe " + strconv.Itoa(i)
		if cosine(q, semCacheBase) < s-0.01 {
			return near, q, s
		}
	}
}

func semCacheFile(th float64) string {
	f := strconv.FormatFloat(th, 'f', 6, 64)
	return `_format_version: "1"
provider_keys:
  - {display_name: oa, provider: openai, api_key: "${E2E_OPENAI_KEY}", api_base: "${E2E_SEMC_MOCK}/v1"}
  - {display_name: oa-down, provider: openai, api_key: "${E2E_OPENAI_KEY}", api_base: "${E2E_SEMC_MOCK}/knobs/status=503/v1"}
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
models:
  - {display_name: emb, provider: openai, model_name: text-embedding-3-small, provider_key: oa, embedding: {dimensions: 1536}}
  - {display_name: emb-down, provider: openai, model_name: text-embedding-3-small, provider_key: oa-down, retries: 0, embedding: {dimensions: 1536}}
  - {display_name: gpt-m, provider: openai, model_name: gpt-4o, provider_key: oa, cost: {input_per_1k: 1, output_per_1k: 2}}
  - {display_name: gpt-r, provider: openai, model_name: gpt-4o, provider_key: oa}
  - {display_name: gpt-d, provider: openai, model_name: gpt-4o, provider_key: oa}
cache_policies:
  - {name: sem-mem, match: semantic, semantic: {embedding_model: emb, threshold: ` + f + `}, ttl_seconds: 300, models: [gpt-m]}
  - {name: sem-red, backend: redis, match: semantic, semantic: {embedding_model: emb, threshold: ` + f + `}, ttl_seconds: 300, models: [gpt-r]}
  - {name: sem-down, match: semantic, semantic: {embedding_model: emb-down, threshold: 0.5}, ttl_seconds: 300, models: [gpt-d]}
observability_exporters:
  - {name: otel, kind: otlp_http, endpoint: "${E2E_OTLP}", batch_size: 1, flush_interval_ms: 100}
`
}

func TestCacheSemantic(t *testing.T) {
	start := time.Now()
	near, far, s := semCacheProbes()
	th := s - 0.0005 // near scores just above the threshold
	rcv := usagetest.StartOTLP(t)
	t.Setenv("E2E_OTLP", rcv.URL)
	m := startMock(t, "E2E_SEMC_MOCK", mock.Config{})
	rs := redistest.Start(t)
	file := writeTemp(t, "semcache.yaml", semCacheFile(th))
	g1 := startGW(t, file, "--redis-addr", rs.Addr())
	g2 := startGW(t, file, "--redis-addr", rs.Addr())
	c1, c2 := sdkFor(g1), sdkFor(g2)
	calls := func() int64 { return m.Stats().Requests }
	hits := 0 // hits expected on the usage records

	t.Run("memory", func(t *testing.T) {
		id, st := cachedChat(t, c1, askParams("gpt-m", semCacheBase))
		if st != "miss" {
			t.Fatalf("first: %q", st)
		}
		n := calls()
		if id2, st := cachedChat(t, c1, askParams("gpt-m", semCacheBase)); st != "hit" || id2 != id {
			t.Fatalf("repeat: %q %s (stored %s)", st, id2, id)
		}
		// Only the embedding call went upstream.
		if calls() != n+1 {
			t.Fatalf("a hit made %d upstream calls; want the embedding only", calls()-n)
		}
		if id2, st := cachedChat(t, c1, askParams("gpt-m", near)); st != "hit" || id2 != id {
			t.Fatalf("near prompt (cosine %.6f, threshold %.6f): %q %s", s, th, st, id2)
		}
		hits += 2
		if id2, st := cachedChat(t, c1, askParams("gpt-m", far)); st != "miss" || id2 == id {
			t.Fatalf("far prompt (cosine %.6f): %q", cosine(far, semCacheBase), st)
		}
		// Another temperature is another scope.
		p := askParams("gpt-m", semCacheBase)
		p.Temperature = openai.Float(0.3)
		if _, st := cachedChat(t, c1, p); st != "miss" {
			t.Fatalf("another temperature: %q", st)
		}
		// The same prompt in an earlier turn is another scope too.
		p = askParams("gpt-m", semCacheBase)
		p.Messages = append([]openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi"), openai.AssistantMessage("hello")}, p.Messages...)
		if _, st := cachedChat(t, c1, p); st != "miss" {
			t.Fatalf("a longer conversation: %q", st)
		}
		// Responses callers: a string input is the prompt.
		rp := responses.ResponseNewParams{Model: "gpt-m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(semCacheBase)}}
		var raw *http.Response
		r1, err := c1.Responses.New(context.Background(), rp, option.WithResponseInto(&raw))
		if err != nil || raw.Header.Get("x-gw-cache") != "miss" {
			t.Fatalf("responses first: %v %q", err, raw.Header.Get("x-gw-cache"))
		}
		rp.Input.OfString = openai.String(near)
		r2, err := c1.Responses.New(context.Background(), rp, option.WithResponseInto(&raw))
		if err != nil || raw.Header.Get("x-gw-cache") != "hit" || r2.ID != r1.ID {
			t.Fatalf("responses near: %v %q", err, raw.Header.Get("x-gw-cache"))
		}
		hits++
	})

	t.Run("redis-shared", func(t *testing.T) {
		if _, st := cachedChat(t, c1, askParams("gpt-r", semCacheBase)); st != "miss" {
			t.Fatalf("g1 first: %q", st)
		}
		// The write is asynchronous: g1 finds its own answer once it is
		// in Redis (a miss meanwhile stores it again).
		var id string
		usagetest.Eventually(t, 5*time.Second, "g1 hit", func() bool {
			var st string
			id, st = cachedChat(t, c1, askParams("gpt-r", semCacheBase))
			return st == "hit"
		})
		hits++
		if id2, st := cachedChat(t, c2, askParams("gpt-r", near)); st != "hit" || id2 != id {
			t.Fatalf("g2 near prompt: %q %s; stored %s", st, id2, id)
		}
		hits++
		if _, st := cachedChat(t, c2, askParams("gpt-r", far)); st != "miss" {
			t.Fatalf("g2 far: %q", st)
		}
	})

	t.Run("embedding-failure", func(t *testing.T) {
		for i := 0; i < 2; i++ {
			if _, st := cachedChat(t, c1, askParams("gpt-d", semCacheBase)); st != "error" {
				t.Fatalf("embedding down: %q; want error", st)
			}
		}
		if !strings.Contains(g1.stderr.String(), "cannot embed the prompt for a semantic cache policy") {
			t.Fatal("no warning about the failed embedding")
		}
	})

	t.Run("redis-killed", func(t *testing.T) {
		rs.Kill()
		for i := 0; i < 3; i++ {
			if _, st := cachedChat(t, c2, askParams("gpt-r", near)); st != "error" {
				t.Fatalf("redis down: %q; want error", st)
			}
		}
	})

	t.Run("usage-records", func(t *testing.T) {
		counts := map[string]int{}
		usagetest.Eventually(t, 10*time.Second, "usage records", func() bool {
			counts = map[string]int{}
			for _, sp := range rcv.Spans() {
				st, _ := usagetest.Attr(sp, "gw.usage.cache_status").(string)
				counts[st]++
				if st == "hit" {
					if cost, _ := usagetest.Attr(sp, "gw.usage.cost_usd").(float64); cost != 0 || usagetest.Attr(sp, "gw.usage.total_tokens") != nil {
						t.Fatalf("a hit records cost %v and tokens %v", cost, usagetest.Attr(sp, "gw.usage.total_tokens"))
					}
				}
			}
			return counts["hit"] >= hits && counts["error"] >= 5
		})
		if counts["hit"] != hits || counts["error"] != 5 {
			t.Fatalf("cache_status counts %v; want %d hits, 5 errors", counts, hits)
		}
	})
	t.Logf("wall time %v", time.Since(start))
}
