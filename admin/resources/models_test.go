package resources

import (
	"strings"
	"testing"
)

const modelsBase = `_format_version: "1"
provider_keys:
  - display_name: oa
    api_key: ${OPENAI_KEY}
  - display_name: an
    api_key: ${ANTHROPIC_KEY}
    provider: anthropic
models:
  - display_name: gpt
    provider: openai
    model_name: gpt-4o
    provider_key: oa
  - display_name: mini
    provider: openai
    model_name: gpt-4o-mini
    provider_key: oa
  - display_name: emb
    provider: openai
    model_name: text-embedding-3-small
    provider_key: oa
    embedding: {dimensions: 1536}
`

func TestModelErrors(t *testing.T) {
	f := func(extra, want string) {
		t.Helper()
		loadErr(t, modelsBase+extra, want)
	}
	const at = "models[3] (display_name=x): "
	// Shapes.
	f("  - display_name: x\n    provider: openai\n    model_name: a\n    provider_key: oa\n    routing: {targets: [{model: gpt}]}\n",
		at+"mixes dispatch shapes direct (provider, model_name, provider_key) and routing; use exactly one")
	f("  - display_name: x\n    routing: {targets: [{model: gpt}]}\n    semantic: {}\n", at+"mixes dispatch shapes routing and semantic")
	f("  - display_name: x\n    provider: openai\n    model_name: a\n", at+"provider_key: required (or provider_key_id)")
	f("  - display_name: x\n    model_name: a\n    provider_key: oa\n", at+"provider: required")
	f("  - display_name: x\n    provider: OpenAI\n    model_name: a\n    provider_key: oa\n", at+"provider: must start with a lowercase letter or digit")
	f("  - display_name: x\n    provider: \"-x\"\n    model_name: a\n    provider_key: oa\n", at+"provider: must start with a lowercase letter or digit")
	f("  - display_name: x\n    provider: "+strings.Repeat("a", 65)+"\n    model_name: a\n    provider_key: oa\n", at+"provider: must start")
	f("  - display_name: x\n    provider: openai\n    model_name: a\n    provider_key: oa\n    provider_key_id: abc\n", at+"provider_key: set exactly one of provider_key and provider_key_id")
	f("  - display_name: x\n    provider: openai\n    model_name: a\n    provider_key: nope\n", at+`provider_key: unknown provider key "nope"; available: an, oa`)
	f("  - display_name: x\n    provider: openai\n    model_name: a\n    provider_key_id: 00000000-0000-5000-8000-000000000000\n", at+"provider_key_id: no provider key has this derived ID")
	// Accepted-only-on rules.
	f("  - display_name: x\n    ensemble: {panel: [{model: gpt}], judge: {model: gpt}}\n    timeout: 5\n", at+"timeout: not accepted on ensemble models")
	f("  - display_name: x\n    routing: {targets: [{model: gpt}]}\n    retries: 2\n", at+"retries: not accepted on routing models; use routing.retries")
	f("  - display_name: x\n    ensemble: {panel: [{model: gpt}], judge: {model: gpt}}\n    retries: 1\n", at+"retries: not accepted on ensemble models")
	f("  - display_name: x\n    routing: {targets: [{model: gpt}]}\n    cost: {input_per_1k: 1, output_per_1k: 1}\n", at+"cost: accepted only on direct and embedding models")
	for _, fld := range []string{"embedding: {dimensions: 3}", "background_model_check: {}", "cooldown: {enabled: true}", "auto_prompt_caching: {enabled: true}", "effort_mapping: {low: high}"} {
		name := fld[:strings.IndexByte(fld, ':')]
		f("  - display_name: x\n    routing: {targets: [{model: gpt}]}\n    "+fld+"\n", at+name+": accepted only on direct models")
	}
	// Numbers and ranges.
	f("  - display_name: x\n    provider: openai\n    model_name: a\n    provider_key: oa\n    timeout: -1\n", at+"timeout: must be between 0 and")
	f("  - display_name: x\n    provider: openai\n    model_name: a\n    provider_key: oa\n    timeout: \"100\"\n", at+"timeout: must be an integer, got a string")
	f("  - display_name: x\n    provider: openai\n    model_name: a\n    provider_key: oa\n    cost: {input_per_1k: 1}\n", at+"cost.output_per_1k: required when cost is set")
	f("  - display_name: x\n    provider: openai\n    model_name: a\n    provider_key: oa\n    embedding: {normalize: false}\n", at+"embedding.dimensions: required")
	f("  - display_name: x\n    provider: openai\n    model_name: a\n    provider_key: oa\n    background_model_check: {enabled: true, interval_seconds: 4, timeout_seconds: 5, prompt: hi, max_tokens: 1, stale_after_seconds: 60}\n", at+"background_model_check.interval_seconds: must be between 5 and")
	f("  - display_name: x\n    provider: openai\n    model_name: a\n    provider_key: oa\n    background_model_check: {enabled: true, interval_seconds: 10}\n", at+"background_model_check.prompt: required when background_model_check is set")
	f("  - display_name: x\n    provider: openai\n    model_name: a\n    provider_key: oa\n    background_model_check: {enabled: true, interval_seconds: 10, timeout_seconds: 5, prompt: hi, max_tokens: 1, stale_after_seconds: 60, ignore_statuses: [99]}\n", at+"background_model_check.ignore_statuses[0]: must be an HTTP status code")
	f("  - display_name: x\n    provider: openai\n    model_name: a\n    provider_key: oa\n    cooldown: {trigger_statuses: [700]}\n", at+"cooldown.trigger_statuses[0]: must be an HTTP status code")
	f("  - display_name: x\n    provider: openai\n    model_name: a\n    provider_key: oa\n    auto_prompt_caching: {enabled: true}\n", at+"auto_prompt_caching: accepted only for provider anthropic")
	f("  - display_name: x\n    provider: anthropic\n    model_name: a\n    provider_key: an\n    auto_prompt_caching: {enabled: true, ttl: 2h}\n", at+`auto_prompt_caching.ttl: unknown value "2h"; allowed: 5m, 1h`)
	f("  - display_name: x\n    provider: anthropic\n    model_name: a\n    provider_key: an\n    auto_prompt_caching: {ttl: 1h}\n", at+"auto_prompt_caching.enabled: required")
	f("  - display_name: x\n    provider: openai\n    model_name: a\n    provider_key: oa\n    allowed_cidrs: [10.0.0.1]\n", at+"allowed_cidrs[0]: must be a CIDR")
	f("  - display_name: x\n    provider: openai\n    model_name: a\n    provider_key: oa\n    rate_limit: {rpm: 0}\n", at+"rate_limit.rpm: must be between 1 and")
	f("  - display_name: x\n    provider: openai\n    model_name: a\n    provider_key: oa\n    rate_limit: {rpw: 1}\n", at+"rate_limit.rpw: unknown field")
	f("  - display_name: x\n    provider: openai\n    model_name: a\n    provider_key: oa\n    effort_mapping: {low: 1}\n", at+"effort_mapping.low: must be a string, got an integer")
	// Routing.
	f("  - display_name: x\n    routing: {}\n", at+"routing.targets: required")
	f("  - display_name: x\n    routing: {targets: []}\n", at+"routing.targets: must hold at least one target")
	f("  - display_name: x\n    routing: {targets: [{model: gpt-x}]}\n", at+`routing.targets[0].model: unknown model "gpt-x"; available: emb, gpt, mini`)
	f("  - display_name: x\n    routing: {targets: [{model: gpt}]}\n  - display_name: y\n    routing: {targets: [{model: x}]}\n", `models[4] (display_name=y): routing.targets[0].model: model "x" is a routing model; a direct model is required`)
	f("  - display_name: x\n    routing: {targets: [{model: gpt, weight: -1}]}\n", at+"routing.targets[0].weight: must be between 0 and")
	f("  - display_name: x\n    routing: {targets: [{model: gpt, priority: -2}]}\n", at+"routing.targets[0].priority: must be between -1 and")
	f("  - display_name: x\n    routing: {targets: [{model: gpt}], strategy: random}\n", at+`routing.strategy: unknown value "random"`)
	f("  - display_name: x\n    routing: {targets: [{model: gpt}], fallback_on_statuses: [500]}\n", at+"routing.fallback_on_statuses[0]: must be a 4xx status")
	f("  - display_name: x\n    routing: {targets: [{model: gpt}], when_all_unavailable: maybe}\n", at+"routing.when_all_unavailable: unknown value")
	f("  - display_name: x\n    routing: {targets: [{model: gpt}], hash_on: [{type: api_key}]}\n", at+"routing.hash_on: accepted only with strategy consistent_hash")
	f("  - display_name: x\n    routing: {targets: [{model: gpt}], strategy: consistent_hash, hash_on: [{type: header}]}\n", at+"routing.hash_on[0].name: required")
	f("  - display_name: x\n    routing: {targets: [{model: gpt}], strategy: consistent_hash, hash_on: [{type: api_key, name: a}]}\n", at+"routing.hash_on[0].name: not accepted for type api_key")
	// Ensemble.
	f("  - display_name: x\n    ensemble: {panel: [], judge: {model: gpt}}\n", at+"ensemble.panel: must hold at least one member")
	f("  - display_name: x\n    ensemble: {panel: [{model: gpt}]}\n", at+"ensemble.judge: required")
	f("  - display_name: x\n    ensemble: {panel: [{model: nope}], judge: {model: gpt}}\n", at+`ensemble.panel[0].model: unknown model "nope"`)
	// Semantic.
	sem := "  - display_name: x\n    semantic:\n      embedding_model: %s\n      default: gpt\n      match: {threshold: %s}\n      routes: [{name: r, target: mini, examples: [hi]}]\n"
	f(strings.Replace(strings.Replace(sem, "%s", "gpt", 1), "%s", "0.5", 1), at+`semantic.embedding_model: model "gpt" has no embedding block; available embedding models: emb`)
	f(strings.Replace(strings.Replace(sem, "%s", "emb", 1), "%s", "1.5", 1), at+"semantic.match.threshold: must be between 0 and 1")
	f("  - display_name: x\n    semantic: {embedding_model: emb, default: gpt, match: {}, routes: [{name: r, target: mini, examples: [hi]}]}\n", at+"semantic.match.threshold: required")
	f("  - display_name: x\n    semantic: {embedding_model: emb, default: gpt, match: {threshold: 0.5, distance_metric: dot}, routes: [{name: r, target: mini, examples: [hi]}]}\n", at+`semantic.match.distance_metric: unknown value "dot"; allowed: cosine`)
	f("  - display_name: x\n    semantic: {embedding_model: emb, default: gpt, match: {threshold: 0.5}, routes: [{name: r, target: mini, examples: []}]}\n", at+"semantic.routes[0].examples: must hold at least one utterance")
	f("  - display_name: x\n    semantic: {embedding_model: emb, default: gpt, match: {threshold: 0.5}, routes: [{name: r, target: mini, examples: [a]}], on_embedding_failure: retry}\n", at+`semantic.on_embedding_failure: unknown value "retry"`)
	f("  - display_name: x\n    semantic: {embedding_model: emb, default: gpt, match: {threshold: 0.5}, routes: [{name: r, target: mini, examples: [a]}], on_embedding_failure: {target: nope}}\n", at+`semantic.on_embedding_failure.target: unknown model "nope"`)
}

func TestModelShapes(t *testing.T) {
	r := mustLoad(t, modelsBase+`  - display_name: grp
    timeout: 1000
    stream_timeout: 200
    routing:
      strategy: consistent_hash
      targets:
        - {model: gpt, weight: 3, priority: 1, tags: [fast]}
        - {model: mini, weight: 0, priority: -1}
      retries: 2
      max_fallbacks: 1
      retry_on_429: true
      fallback_on_statuses: [404, 409]
      when_all_unavailable: try_anyway
      hash_on: [{type: header, name: X-User}, {type: api_key}]
  - display_name: panel
    ensemble:
      panel: [{model: gpt, temperature: 0.2, seed: 7, weight: 3}, {model: mini}, {model: gpt}]
      judge: {model: gpt, synthesis_prompt: "merge"}
      timeout_ms: 3000
  - display_name: capped
    ensemble: {panel: [{model: gpt}, {model: mini}], judge: {model: gpt}, min_responses: 5}
  - display_name: solo
    ensemble: {panel: [{model: gpt}], judge: {model: gpt}}
  - display_name: router
    retries: 1
    semantic:
      embedding_model: emb
      default: gpt
      match: {threshold: 0.8}
      routes:
        - {name: code, target: mini, examples: ["write code"], threshold: 0.9}
        - {name: chat, target: gpt, examples: ["hello"]}
      on_embedding_failure: {target: mini}
  - display_name: claude
    provider: anthropic
    model_name: claude-sonnet-4-5
    provider_key: an
    retries: 2
    cost: {input_per_1k: 0.003, output_per_1k: 0.015}
    cooldown: {enabled: true, trigger_statuses: [429]}
    auto_prompt_caching: {enabled: true}
    effort_mapping: {low: minimal, "*": medium, "": ~}
    background_model_check: {enabled: true, interval_seconds: 30, timeout_seconds: 5, prompt: ping, max_tokens: 1, stale_after_seconds: 120, ignore_statuses: [429]}
    allowed_cidrs: [10.0.0.0/8, "2001:db8::/32"]
    rate_limit: {rps: 5, tpm: 10000, concurrency: 4}
`)
	byName := map[string]*Model{}
	for _, m := range r.Models {
		byName[m.DisplayName] = m
	}
	g := byName["grp"].Routing
	if g.Strategy != StrategyConsistentHash || len(g.Targets) != 2 || g.Targets[1].Weight != 1 || g.Targets[1].Priority != -1 || g.Targets[0].Model != byName["gpt"] {
		t.Fatalf("routing: %+v", g)
	}
	if g.HashOn[0].Name != "x-user" || g.HashOn[1].Type != "api_key" || *g.Retries != 2 || *g.MaxFallbacks != 1 || !g.RetryOn429 || g.WhenAllUnavailable != "try_anyway" {
		t.Fatalf("routing options: %+v", g)
	}
	en := byName["panel"].Ensemble
	if en.MinResponses != 2 || en.Judge != byName["gpt"] || *en.Panel[0].Seed != 7 || en.TimeoutMS != 3000 {
		t.Fatalf("ensemble: %+v", en)
	}
	// min_responses above the panel size is capped (spec), and the default
	// is min(2, panel size).
	if got := byName["capped"].Ensemble.MinResponses; got != 2 {
		t.Fatalf("capped min_responses = %d; want 2", got)
	}
	if got := byName["solo"].Ensemble.MinResponses; got != 1 {
		t.Fatalf("solo min_responses = %d; want 1", got)
	}
	s := byName["router"].Semantic
	if s.Routes[0].Threshold != 0.9 || s.Routes[1].Threshold != 0.8 || s.FailureTarget != byName["mini"] || s.EmbeddingModel != byName["emb"] {
		t.Fatalf("semantic: %+v", s)
	}
	c := byName["claude"]
	if !c.Cooldown.Enabled || c.Cooldown.DefaultSeconds != 30 || c.Cooldown.MaxSeconds != 600 || len(c.Cooldown.TriggerStatuses) != 1 {
		t.Fatalf("cooldown: %+v", c.Cooldown)
	}
	if c.AutoPromptCaching.TTL != "5m" || len(c.EffortMapping) != 3 || c.EffortMapping[2].To != nil || c.EffortMapping[2].From != "" {
		t.Fatalf("apc/effort: %+v %+v", c.AutoPromptCaching, c.EffortMapping)
	}
	if !byName["emb"].IsEmbedding() || !byName["emb"].Embedding.Normalize {
		t.Fatal("embedding defaults")
	}
	if !byName["gpt"].Cooldown.TriggerOnTimeout || byName["gpt"].Cooldown.Enabled {
		t.Fatal("cooldown defaults on a model without the block")
	}
}
