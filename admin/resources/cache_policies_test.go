package resources

import (
	"testing"
	"time"
)

func cacheFile(entries string) string { return miscBase + "cache_policies:\n" + entries }

func TestCachePolicyDefaults(t *testing.T) {
	c := miscOK(t, cacheFile("  - {name: all, ttl_seconds: 60}\n")).CachePolicies[0]
	if c.ID != DeriveID(KindCachePolicy, "all") || c.Backend != CacheBackendMemory || c.Match != CacheMatchExact ||
		c.TTL() != time.Minute || c.Models != nil || c.Semantic != nil || c.MaxEntryBytes != 1<<20 || c.Namespace != "all" || !c.Enabled {
		t.Fatalf("got %+v", c)
	}
	if !c.AppliesTo("anything") {
		t.Fatal("absent models must cover every model")
	}
}

func TestCachePolicyFields(t *testing.T) {
	r := miscOK(t, cacheFile(`  - name: sem
    backend: redis
    match: semantic
    ttl_seconds: 600
    models: [gpt, "team-*"]
    semantic: {embedding_model: embed, threshold: 0.9}
    max_entry_bytes: 4096
    namespace: "prod:faq"
    enabled: false
`))
	c := r.CachePolicies[0]
	if c.Backend != CacheBackendRedis || c.Match != CacheMatchSemantic || c.Semantic == nil || c.Semantic.EmbeddingModel == nil ||
		c.Semantic.EmbeddingModel.DisplayName != "embed" || c.Semantic.Threshold != 0.9 || c.MaxEntryBytes != 4096 || c.Namespace != "prod:faq" || c.Enabled {
		t.Fatalf("got %+v", c)
	}
	if c.AppliesTo("gpt") {
		t.Fatal("a disabled policy applies to nothing")
	}
	c.Enabled = true
	for m, want := range map[string]bool{"gpt": true, "team-x": true, "embed": false} {
		if c.AppliesTo(m) != want {
			t.Errorf("AppliesTo(%s): want %v", m, want)
		}
	}
}

func TestCachePolicyRejections(t *testing.T) {
	f := func(entry, want string) {
		t.Helper()
		miscErrLine(t, cacheFile(entry), want)
	}
	at := "cache_policies[0] (name=c): "
	f("  - {name: c}\n", at+"ttl_seconds: required")
	f("  - {name: c, ttl_seconds: 0}\n", at+"ttl_seconds: must be between 1 and 9223372036854775807, got 0")
	f("  - {name: c, ttl_seconds: 1, backend: memcached}\n", at+`backend: unknown value "memcached"; allowed: memory, redis`)
	f("  - {name: c, ttl_seconds: 1, match: fuzzy}\n", at+`match: unknown value "fuzzy"; allowed: exact, semantic`)
	f("  - {name: c, ttl_seconds: 1, models: []}\n", at+"models: must hold at least one model (omit the field to cache every model)")
	f("  - {name: c, ttl_seconds: 1, models: [nope]}\n", at+`models[0]: unknown model "nope"; available: embed, gpt`)
	f("  - {name: c, ttl_seconds: 1, models: [\"a*b*\"]}\n", at+"models[0]: a glob may hold a single '*'")
	f("  - {name: c, ttl_seconds: 1, match: semantic}\n", at+"semantic: required with match semantic (semantic.embedding_model, semantic.threshold)")
	f("  - {name: c, ttl_seconds: 1, semantic: {embedding_model: embed, threshold: 0.5}}\n", at+"semantic: accepted only with match semantic")
	f("  - {name: c, ttl_seconds: 1, match: exact, semantic: {embedding_model: embed, threshold: 0.5}}\n", at+"semantic: accepted only with match semantic")
	f("  - {name: c, ttl_seconds: 1, match: semantic, semantic: {embedding_model: embed}}\n", at+"semantic.threshold: required (0.0 to 1.0)")
	f("  - {name: c, ttl_seconds: 1, match: semantic, semantic: {embedding_model: embed, threshold: 1.5}}\n", at+"semantic.threshold: must be between 0 and 1")
	f("  - {name: c, ttl_seconds: 1, match: semantic, semantic: {threshold: 0.5}}\n", at+"semantic.embedding_model: required")
	f("  - {name: c, ttl_seconds: 1, match: semantic, semantic: {embedding_model: gpt, threshold: 0.5}}\n", at+`semantic.embedding_model: model "gpt" has no embedding block; available embedding models: embed`)
	f("  - {name: c, ttl_seconds: 1, match: semantic, semantic: {embedding_model: nope, threshold: 0.5}}\n", at+`semantic.embedding_model: unknown embedding model "nope"; available: embed`)
	f("  - {name: c, ttl_seconds: 1, match: semantic, semantic: {embedding_model: embed, threshold: 0.5, k: 3}}\n", at+"semantic.k: unknown field")
	f("  - {name: c, ttl_seconds: 1, max_entry_bytes: 0}\n", at+"max_entry_bytes: must be between 1 and 9223372036854775807, got 0")
	f("  - {name: c, ttl_seconds: 1, namespace: \"a b\"}\n", at+"namespace: must be 1 to 64 letters, digits, '_', '.', ':' or '-'")
	f("  - {name: c, ttl_seconds: 1, stream: true}\n", at+"stream: unknown field")
}
