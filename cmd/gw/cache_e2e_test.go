package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/responses"

	"gw/edge/usage/usagetest"
	"gw/limiter/redistest"
	"gw/perf/mock"
)

// cacheFile: a memory policy on gpt and emb (5 minutes), a 1-second policy
// on short, no policy on plain; usage records go to a real OTLP receiver.
const cacheFile = `_format_version: "1"
provider_keys:
  - {display_name: oa, provider: openai, api_key: "${E2E_OPENAI_KEY}", api_base: "${E2E_CACHE_MOCK}/v1"}
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
models:
  - {display_name: gpt, provider: openai, model_name: gpt-4o, provider_key: oa, cost: {input_per_1k: 1, output_per_1k: 2}}
  - {display_name: short, provider: openai, model_name: gpt-4o, provider_key: oa}
  - {display_name: plain, provider: openai, model_name: gpt-4o, provider_key: oa}
  - {display_name: emb, provider: openai, model_name: text-embedding-3-small, provider_key: oa, embedding: {dimensions: 1536}}
cache_policies:
  - {name: main, backend: BACKEND, ttl_seconds: 300, models: [gpt, emb]}
  - {name: brief, ttl_seconds: 1, models: [short]}
observability_exporters:
  - {name: otel, kind: otlp_http, endpoint: "${E2E_OTLP}", batch_size: 1, flush_interval_ms: 100}
`

type cacheEnv struct {
	mock *mock.Server
	otlp *usagetest.OTLPReceiver
	file string
}

func newCacheEnv(t *testing.T, backend string) *cacheEnv {
	t.Helper()
	rcv := usagetest.StartOTLP(t)
	t.Setenv("E2E_OTLP", rcv.URL)
	m := startMock(t, "E2E_CACHE_MOCK", mock.Config{})
	return &cacheEnv{mock: m, otlp: rcv, file: writeTemp(t, "cache.yaml", strings.Replace(cacheFile, "BACKEND", backend, 1))}
}

func sdkFor(g *proc) openai.Client {
	return openai.NewClient(option.WithBaseURL("http://"+g.addr+"/v1"), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))
}

// cachedChat sends one chat request and returns its completion ID and
// x-gw-cache header.
func cachedChat(t *testing.T, c openai.Client, p openai.ChatCompletionNewParams, opts ...option.RequestOption) (string, string) {
	t.Helper()
	var raw *http.Response
	resp, err := c.Chat.Completions.New(context.Background(), p, append(opts, option.WithResponseInto(&raw))...)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != p.Model || resp.Choices[0].Message.Content == "" {
		t.Fatalf("answer %+v", resp)
	}
	return resp.ID, raw.Header.Get("x-gw-cache")
}

func askParams(model, q string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(q)}}
}

// TestCacheExactMemory: miss then hit (same answer, no upstream call),
// what changes the key and what does not, Cache-Control bypasses, a stream
// bypasses, TTL expiry, the Messages, Responses and embeddings callers,
// and the usage records.
func TestCacheExactMemory(t *testing.T) {
	e := newCacheEnv(t, "memory")
	g := startGW(t, e.file)
	c := sdkFor(g)
	calls := func() int64 { return e.mock.Stats().Requests }

	id1, st := cachedChat(t, c, askParams("gpt", "What is a cache?"))
	if st != "miss" {
		t.Fatalf("first: x-gw-cache %q; want miss", st)
	}
	before := calls()
	id2, st := cachedChat(t, c, askParams("gpt", "What is a cache?"))
	if st != "hit" || id2 != id1 || calls() != before {
		t.Fatalf("second: %q id %s (first %s), upstream calls %d→%d; want a hit with the same answer and no call", st, id2, id1, before, calls())
	}
	// `user` and stream:false do not change the key.
	p := askParams("gpt", "What is a cache?")
	p.User = openai.String("someone")
	if id, st := cachedChat(t, c, p); st != "hit" || id != id1 {
		t.Fatalf("with user: %q %s", st, id)
	}
	// The question does; so does a parameter.
	if _, st := cachedChat(t, c, askParams("gpt", "What is a cache, really?")); st != "miss" {
		t.Fatalf("other question: %q", st)
	}
	p = askParams("gpt", "What is a cache?")
	p.Temperature = openai.Float(0.5)
	if _, st := cachedChat(t, c, p); st != "miss" {
		t.Fatalf("other temperature: %q", st)
	}
	// No policy: no header.
	if _, st := cachedChat(t, c, askParams("plain", "What is a cache?")); st != "" {
		t.Fatalf("uncovered alias: x-gw-cache %q", st)
	}

	t.Run("cache-control", func(t *testing.T) {
		// no-cache: fetched fresh (bypass) and stored: the next plain
		// request gets the fresh answer.
		n := calls()
		fresh, st := cachedChat(t, c, askParams("gpt", "What is a cache?"), option.WithHeader("Cache-Control", "no-cache"))
		if st != "bypass" || fresh == id1 || calls() != n+1 {
			t.Fatalf("no-cache: %q id %s", st, fresh)
		}
		if id, st := cachedChat(t, c, askParams("gpt", "What is a cache?")); st != "hit" || id != fresh {
			t.Fatalf("after no-cache: %q %s; want the fresh answer %s", st, id, fresh)
		}
		// no-store: bypass, and nothing is written.
		if _, st := cachedChat(t, c, askParams("gpt", "Never store this"), option.WithHeader("Cache-Control", "max-age=0, No-Store")); st != "bypass" {
			t.Fatalf("no-store: %q", st)
		}
		if _, st := cachedChat(t, c, askParams("gpt", "Never store this")); st != "miss" {
			t.Fatalf("after no-store: %q; want miss", st)
		}
	})

	t.Run("stream-bypasses", func(t *testing.T) {
		n := calls()
		var raw *http.Response
		s := c.Chat.Completions.NewStreaming(context.Background(), askParams("gpt", "What is a cache?"), option.WithResponseInto(&raw))
		chunks := 0
		for s.Next() {
			chunks++
		}
		if err := s.Err(); err != nil || chunks < 2 {
			t.Fatalf("stream: %v, %d chunks", err, chunks)
		}
		if raw.Header.Get("x-gw-cache") != "bypass" || calls() != n+1 {
			t.Fatalf("stream: x-gw-cache %q, upstream calls %d; want bypass and one call", raw.Header.Get("x-gw-cache"), calls()-n)
		}
	})

	t.Run("ttl", func(t *testing.T) {
		id, st := cachedChat(t, c, askParams("short", "Expire me"))
		if st != "miss" {
			t.Fatalf("first: %q", st)
		}
		if id2, st := cachedChat(t, c, askParams("short", "Expire me")); st != "hit" || id2 != id {
			t.Fatalf("within ttl: %q", st)
		}
		time.Sleep(1100 * time.Millisecond)
		if id3, st := cachedChat(t, c, askParams("short", "Expire me")); st != "miss" || id3 == id {
			t.Fatalf("after ttl: %q", st)
		}
	})

	t.Run("messages", func(t *testing.T) {
		ac := anthropic.NewClient(aoption.WithBaseURL("http://"+g.addr), aoption.WithAPIKey("caller-e2e"), aoption.WithMaxRetries(0))
		params := anthropic.MessageNewParams{Model: "gpt", MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is a cache?"))}}
		var raw *http.Response
		m1, err := ac.Messages.New(context.Background(), params, aoption.WithResponseInto(&raw))
		if err != nil || raw.Header.Get("x-gw-cache") != "miss" {
			t.Fatalf("first: %v %q", err, raw.Header.Get("x-gw-cache"))
		}
		m2, err := ac.Messages.New(context.Background(), params, aoption.WithResponseInto(&raw))
		if err != nil || raw.Header.Get("x-gw-cache") != "hit" || m2.ID != m1.ID || m2.Model != "gpt" {
			t.Fatalf("second: %v %q %s/%s", err, raw.Header.Get("x-gw-cache"), m1.ID, m2.ID)
		}
	})

	t.Run("responses", func(t *testing.T) {
		params := responses.ResponseNewParams{Model: "gpt", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What is a cache?")}}
		var raw *http.Response
		r1, err := c.Responses.New(context.Background(), params, option.WithResponseInto(&raw))
		if err != nil || raw.Header.Get("x-gw-cache") != "miss" {
			t.Fatalf("first: %v %q", err, raw.Header.Get("x-gw-cache"))
		}
		r2, err := c.Responses.New(context.Background(), params, option.WithResponseInto(&raw))
		if err != nil || raw.Header.Get("x-gw-cache") != "hit" || r2.ID != r1.ID {
			t.Fatalf("second: %v %q", err, raw.Header.Get("x-gw-cache"))
		}
	})

	t.Run("embeddings", func(t *testing.T) {
		params := openai.EmbeddingNewParams{Model: "emb", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("cache me")}}
		var raw *http.Response
		e1, err := c.Embeddings.New(context.Background(), params, option.WithResponseInto(&raw))
		if err != nil || raw.Header.Get("x-gw-cache") != "miss" || len(e1.Data) != 1 {
			t.Fatalf("first: %v %q", err, raw.Header.Get("x-gw-cache"))
		}
		n := calls()
		e2, err := c.Embeddings.New(context.Background(), params, option.WithResponseInto(&raw))
		if err != nil || raw.Header.Get("x-gw-cache") != "hit" || calls() != n || len(e2.Data[0].Embedding) != len(e1.Data[0].Embedding) {
			t.Fatalf("second: %v %q", err, raw.Header.Get("x-gw-cache"))
		}
	})

	t.Run("usage-records", func(t *testing.T) {
		counts := map[string]int{}
		usagetest.Eventually(t, 10*time.Second, "usage records", func() bool {
			counts = map[string]int{}
			for _, sp := range e.otlp.Spans() {
				st, _ := usagetest.Attr(sp, "gw.usage.cache_status").(string)
				counts[st]++
				switch st {
				case "hit":
					if cost, _ := usagetest.Attr(sp, "gw.usage.cost_usd").(float64); cost != 0 || usagetest.Attr(sp, "gw.usage.total_tokens") != nil ||
						usagetest.Attr(sp, "gw.usage.target_model") != nil {
						t.Fatalf("a hit records cost %v, tokens %v, target %v; want 0, none, none", cost,
							usagetest.Attr(sp, "gw.usage.total_tokens"), usagetest.Attr(sp, "gw.usage.target_model"))
					}
				case "miss":
					if usagetest.Attr(sp, "gw.usage.total_tokens") == nil {
						t.Fatal("a miss records no tokens")
					}
				}
			}
			// hits: gpt ×2, after no-cache, ttl, messages, responses,
			// embeddings; bypasses: no-cache, no-store, the stream.
			return counts["hit"] >= 7 && counts["none"] >= 1 && counts["bypass"] >= 3
		})
		if counts["error"] != 0 || counts["hit"] != 7 || counts["bypass"] != 3 {
			t.Fatalf("cache_status counts %v", counts)
		}
	})
}

// TestCacheRedisShared: two gw processes share one redis-server: an answer
// stored through the first is a hit on the second.
func TestCacheRedisShared(t *testing.T) {
	rs := redistest.Start(t)
	e := newCacheEnv(t, "redis")
	g1 := startGW(t, e.file, "--redis-addr", rs.Addr())
	g2 := startGW(t, e.file, "--redis-addr", rs.Addr())
	id1, st := cachedChat(t, sdkFor(g1), askParams("gpt", "Shared question"))
	if st != "miss" {
		t.Fatalf("g1: %q", st)
	}
	// The write is asynchronous: poll the second replica briefly.
	// A miss on g2 before the write lands stores g2's own answer, which a
	// later hit may then return: either stored answer is a shared hit.
	deadline := time.Now().Add(5 * time.Second)
	stored := map[string]bool{id1: true}
	for {
		n := e.mock.Stats().Requests
		id2, st := cachedChat(t, sdkFor(g2), askParams("gpt", "Shared question"))
		if st == "hit" {
			if !stored[id2] || e.mock.Stats().Requests != n {
				t.Fatalf("g2 hit with answer %s (stored %v) and an upstream call", id2, stored)
			}
			break
		}
		stored[id2] = true
		if time.Now().After(deadline) {
			t.Fatalf("g2 never hit: last %q", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Without a redis address, a redis policy misses with status error.
	g3 := startGW(t, e.file)
	if _, st := cachedChat(t, sdkFor(g3), askParams("gpt", "Shared question")); st != "error" {
		t.Fatalf("no redis configured: %q; want error", st)
	}
	if !strings.Contains(g3.stderr.String(), "shared_store.redis.address is not set") {
		t.Fatal("no warning about the redis policy without a shared store")
	}
}

// TestCacheRedisOutage: redis-server killed under load: every request
// still succeeds (cache_status error or miss), a warning is logged, and
// once redis is back the cache reattaches and hits again.
func TestCacheRedisOutage(t *testing.T) {
	rs := redistest.Start(t)
	e := newCacheEnv(t, "redis")
	g := startGW(t, e.file, "--redis-addr", rs.Addr(), "--cache-redis-probe-interval", "300ms")
	c := sdkFor(g)
	var failed, total atomic.Int64
	var mu sync.Mutex
	seen := map[string]int{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			qs := []string{"q-a", "q-b", "q-c"}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var raw *http.Response
				_, err := c.Chat.Completions.New(context.Background(), askParams("gpt", qs[(i+w)%3]), option.WithResponseInto(&raw))
				total.Add(1)
				if err != nil {
					failed.Add(1)
					continue
				}
				mu.Lock()
				seen[raw.Header.Get("x-gw-cache")]++
				mu.Unlock()
			}
		}(w)
	}
	time.Sleep(500 * time.Millisecond)
	rs.Kill()
	time.Sleep(1500 * time.Millisecond)
	mu.Lock()
	errs := seen["error"]
	mu.Unlock()
	rs.Restart() // empty dataset
	usagetest.Eventually(t, 15*time.Second, "hits after reattach", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen["hit"] > 0 && strings.Contains(g.stderr.String(), "cache: shared store reattached")
	})
	mu.Lock()
	hitsBefore := seen["hit"]
	mu.Unlock()
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d of %d requests failed during the outage", failed.Load(), total.Load())
	}
	if errs == 0 {
		t.Fatalf("no request saw cache_status error while redis was down: %v", seen)
	}
	if seen["hit"] <= hitsBefore {
		t.Fatalf("no hits after reattach: %v", seen)
	}
	if !strings.Contains(g.stderr.String(), "cache: shared store unreachable") {
		t.Fatal("no outage warning in the log")
	}
	t.Logf("x-gw-cache over %d requests: %v", total.Load(), seen)
}

// TestCacheInputGuardrailFirst: the input policy runs before the lookup.
// An answer cached before a reload attached a blocking guardrail is not
// served to a request the guardrail now blocks; the entries survive the
// reload for the requests it lets through.
func TestCacheInputGuardrailFirst(t *testing.T) {
	e := newCacheEnv(t, "memory")
	g := startGW(t, e.file)
	c := sdkFor(g)
	blocked := askParams("gpt", "Tell me about PROJECT-ZEUS")
	if _, st := cachedChat(t, c, blocked); st != "miss" {
		t.Fatalf("first: %q", st)
	}
	if _, st := cachedChat(t, c, askParams("gpt", "Harmless")); st != "miss" {
		t.Fatalf("harmless: %q", st)
	}
	if _, st := cachedChat(t, c, blocked); st != "hit" {
		t.Fatalf("second: %q", st)
	}
	data, err := os.ReadFile(e.file)
	if err != nil {
		t.Fatal(err)
	}
	guarded := string(data) + `guardrails:
  - {name: no-codenames, kind: keyword, hook_point: input, patterns: [{kind: literal, value: PROJECT-ZEUS}]}
guardrail_attachments:
  - {guardrail_id: no-codenames, scope_type: model, scope_id: gpt}
`
	if err := os.WriteFile(e.file, []byte(guarded), 0o600); err != nil {
		t.Fatal(err)
	}
	g.cmd.Process.Signal(syscall.SIGHUP)
	waitStatus(t, g.addr, func(s configStatus) bool { return s.ApplySeq == 2 && s.State == "synced" })
	var raw *http.Response
	_, err = c.Chat.Completions.New(context.Background(), blocked, option.WithResponseInto(&raw))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 422 {
		t.Fatalf("blocked request after the reload: %v; want 422 from the input policy, not the cached answer", err)
	}
	if _, st := cachedChat(t, c, askParams("gpt", "Harmless")); st != "hit" {
		t.Fatalf("harmless after reload: %q; want hit", st)
	}
}
