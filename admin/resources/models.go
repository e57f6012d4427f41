package resources

import (
	"net/netip"
	"strings"
)

// ModelKind is a model's dispatch shape.
type ModelKind uint8

// Dispatch shapes. An embedding model is a direct model with an Embedding block.
const (
	KindDirect ModelKind = iota
	KindRouting
	KindEnsemble
	KindSemantic
)

func (k ModelKind) String() string {
	switch k {
	case KindRouting:
		return "routing"
	case KindEnsemble:
		return "ensemble"
	case KindSemantic:
		return "semantic"
	}
	return "direct"
}

// DefaultUpstreamTimeoutMS is the deployment timeout when upstream.timeout_ms is unset.
const DefaultUpstreamTimeoutMS = 6000000

// Model is one models entry.
type Model struct {
	Index       int
	ID          string
	DisplayName string
	Kind        ModelKind

	// Shared fields; nil pointers mean "not set".
	Timeout       *int64 // ms; 0 disables
	StreamTimeout *int64 // ms; 0 means fall back
	Retries       *int64
	RateLimit     *RateLimit
	AllowedCIDRs  []netip.Prefix
	Cost          *Cost

	// Direct.
	Provider          string
	ModelName         string
	ProviderKeyName   string // as written (provider_key) or resolved from provider_key_id
	ProviderKey       *ProviderKey
	Embedding         *Embedding
	BackgroundCheck   *BackgroundCheck
	Cooldown          Cooldown // Enabled false when absent
	AutoPromptCaching *AutoPromptCaching
	EffortMapping     []EffortRule

	Routing  *Routing
	Ensemble *Ensemble
	Semantic *Semantic

	providerKeyID string // provider_key_id as written, resolved later
}

// IsEmbedding reports a direct model with an embedding block.
func (m *Model) IsEmbedding() bool { return m.Kind == KindDirect && m.Embedding != nil }

// Cost is USD per 1,000 tokens.
type Cost struct {
	InputPer1K, OutputPer1K float64
}

// Embedding marks an embedding model.
type Embedding struct {
	Dimensions int64
	Normalize  bool
}

// BackgroundCheck is a periodic health probe.
type BackgroundCheck struct {
	Enabled          bool
	IntervalSeconds  int64
	TimeoutSeconds   int64
	Prompt           string
	MaxTokens        int64
	StaleAfterSecond int64
	IgnoreStatuses   []int64
}

// Cooldown is a direct model's cooldown block with defaults applied.
type Cooldown struct {
	Enabled            bool
	DefaultSeconds     int64
	MaxSeconds         int64
	HonorRetryAfter    bool
	TriggerStatuses    []int64
	TriggerOnTimeout   bool
	TriggerOnTransport bool
}

// DefaultCooldownStatuses is cooldown.trigger_statuses when unset.
var DefaultCooldownStatuses = []int64{401, 408, 429, 500, 502, 503, 504}

func defaultCooldown() Cooldown {
	return Cooldown{DefaultSeconds: 30, MaxSeconds: 600, HonorRetryAfter: true,
		TriggerStatuses: DefaultCooldownStatuses, TriggerOnTimeout: true, TriggerOnTransport: true}
}

// AutoPromptCaching is the anthropic-only auto_prompt_caching block.
type AutoPromptCaching struct {
	Enabled bool
	TTL     string // "5m" or "1h"
}

// EffortRule maps a caller effort value to an upstream one; To nil removes effort.
type EffortRule struct {
	From string // "" = request without effort, "*" = any other value
	To   *string
}

// Routing is a model group.
type Routing struct {
	Targets            []RoutingTarget
	Strategy           string
	Retries            *int64
	MaxFallbacks       *int64
	RetryOn429         bool
	FallbackOnStatuses []int64
	WhenAllUnavailable string
	HashOn             []HashSource
}

// RoutingTarget is one routing.targets entry.
type RoutingTarget struct {
	ModelName string
	Model     *Model
	Weight    int64 // 0 is treated as 1
	Priority  int64
	Tags      []string
}

// HashSource is one routing.hash_on item.
type HashSource struct {
	Type string // header, cookie, api_key, client_ip
	Name string
}

// Routing strategies.
const (
	StrategyRoundRobin     = "round_robin"
	StrategyConsistentHash = "consistent_hash"
	StrategyFailover       = "failover"
	StrategyLeastCost      = "least_cost"
	StrategyLeastLatency   = "least_latency"
	StrategyLeastBusy      = "least_busy"
)

// Ensemble is a panel plus judge.
type Ensemble struct {
	Panel           []PanelMember
	JudgeName       string
	Judge           *Model
	SynthesisPrompt string
	MinResponses    int64 // resolved default
	TimeoutMS       int64
}

// PanelMember is one ensemble.panel entry.
type PanelMember struct {
	ModelName   string
	Model       *Model
	Temperature *float64
	Seed        *int64
}

// Semantic is a semantic router.
type Semantic struct {
	EmbeddingModelName string
	EmbeddingModel     *Model
	Routes             []SemanticRoute
	DefaultName        string
	Default            *Model
	Threshold          float64
	DistanceMetric     string
	Aggregation        string
	EmbeddingTimeoutMS int64
	OnEmbeddingFailure string // "default", "fail" or "target"
	FailureTargetName  string
	FailureTarget      *Model
}

// SemanticRoute is one semantic.routes entry.
type SemanticRoute struct {
	Name        string
	TargetName  string
	Target      *Model
	Examples    []string
	Description string
	Threshold   float64 // resolved: own or match.threshold
}

var providerNameRE = lazyRE(`^[a-z0-9][A-Za-z0-9._-]{0,63}$`)

var directOnlyFields = []string{"embedding", "background_model_check", "cooldown", "auto_prompt_caching", "effort_mapping"}

func (l *loader) decodeModel(e *entry, o *obj) {
	m := &Model{Index: e.idx}
	m.DisplayName = o.reqStr("display_name")
	e.setID("display_name", m.DisplayName)
	m.ID = DeriveID(KindModel, m.DisplayName)

	// Shape detection: each present shape marker votes; more than one is a mix.
	var shapes []string
	if o.present("provider") || o.present("model_name") || o.present("provider_key") || o.present("provider_key_id") {
		shapes = append(shapes, "direct (provider, model_name, provider_key)")
	}
	for _, s := range []string{"routing", "ensemble", "semantic"} {
		if o.present(s) {
			shapes = append(shapes, s)
		}
	}
	if len(shapes) > 1 {
		o.errf("", "mixes dispatch shapes "+strings.Join(shapes, " and ")+"; use exactly one")
		// Mark everything read so the mix is the one error reported.
		for i := range o.used {
			o.used[i] = true
		}
		return
	}
	switch {
	case o.present("routing"):
		m.Kind = KindRouting
	case o.present("ensemble"):
		m.Kind = KindEnsemble
	case o.present("semantic"):
		m.Kind = KindSemantic
	}
	kind := m.Kind.String()

	// Shared fields with their "accepted only on" rules.
	if m.Kind == KindEnsemble {
		o.reject("timeout", "not accepted on ensemble models (use ensemble.timeout_ms)")
		o.reject("stream_timeout", "not accepted on ensemble models (use ensemble.timeout_ms)")
	} else {
		m.Timeout = o.optInt("timeout", 0)
		m.StreamTimeout = o.optInt("stream_timeout", 0)
	}
	switch m.Kind {
	case KindRouting:
		o.reject("retries", "not accepted on routing models; use routing.retries")
	case KindEnsemble:
		o.reject("retries", "not accepted on ensemble models")
	default:
		m.Retries = o.optInt("retries", 0)
	}
	if rl := o.sub("rate_limit"); rl != nil {
		m.RateLimit = decodeRateLimit(rl, true)
	}
	m.AllowedCIDRs = decodeCIDRs(o, "allowed_cidrs")
	if m.Kind == KindDirect {
		if c := o.sub("cost"); c != nil {
			m.Cost = &Cost{}
			for _, f := range []string{"input_per_1k", "output_per_1k"} {
				if !c.has(f) {
					c.raw(f)
					c.errf(f, "required when cost is set")
				}
			}
			m.Cost.InputPer1K, _ = c.floatRange("input_per_1k", 0, 1e9)
			m.Cost.OutputPer1K, _ = c.floatRange("output_per_1k", 0, 1e9)
			c.finish()
		}
	} else {
		o.reject("cost", "accepted only on direct and embedding models (set it on the models a "+kind+" model dispatches to)")
	}

	switch m.Kind {
	case KindDirect:
		l.decodeDirect(m, o)
	default:
		for _, f := range directOnlyFields {
			o.reject(f, "accepted only on direct models")
		}
		switch m.Kind {
		case KindRouting:
			m.Routing = decodeRouting(o.sub("routing"))
		case KindEnsemble:
			m.Ensemble = decodeEnsemble(o.sub("ensemble"))
		case KindSemantic:
			m.Semantic = decodeSemantic(o.sub("semantic"))
		}
	}
	l.res.Models = append(l.res.Models, m)
}

func (l *loader) decodeDirect(m *Model, o *obj) {
	m.Provider = o.reqStr("provider")
	if m.Provider != "" && !providerNameRE().MatchString(m.Provider) {
		o.errf("provider", "must start with a lowercase letter or digit, then letters, digits, '.', '_' or '-', 1 to 64 characters")
	}
	m.ModelName = o.reqStr("model_name")
	hasName, hasID := o.has("provider_key"), o.has("provider_key_id")
	switch {
	case hasName && hasID:
		o.raw("provider_key")
		o.raw("provider_key_id")
		o.errf("provider_key", "set exactly one of provider_key and provider_key_id, not both")
	case hasName:
		m.ProviderKeyName = o.reqStr("provider_key")
	case hasID:
		m.providerKeyID = o.reqStr("provider_key_id")
	default:
		o.raw("provider_key")
		o.raw("provider_key_id")
		o.errf("provider_key", "required (or provider_key_id)")
	}
	if eo := o.sub("embedding"); eo != nil {
		m.Embedding = &Embedding{Normalize: true}
		if !eo.has("dimensions") {
			eo.raw("dimensions")
			eo.errf("dimensions", "required")
		}
		m.Embedding.Dimensions, _ = eo.intMin("dimensions", 1)
		m.Embedding.Normalize = eo.boolDefault("normalize", true)
		eo.finish()
	}
	if bo := o.sub("background_model_check"); bo != nil {
		bc := &BackgroundCheck{}
		for _, f := range []string{"enabled", "interval_seconds", "timeout_seconds", "prompt", "max_tokens", "stale_after_seconds"} {
			if !bo.has(f) {
				bo.raw(f)
				bo.errf(f, "required when background_model_check is set")
			}
		}
		bc.Enabled, _ = bo.bool("enabled")
		bc.IntervalSeconds, _ = bo.intMin("interval_seconds", 5)
		bc.TimeoutSeconds, _ = bo.intMin("timeout_seconds", 1)
		bc.Prompt, _ = bo.str("prompt")
		bc.MaxTokens, _ = bo.intMin("max_tokens", 1)
		bc.StaleAfterSecond, _ = bo.intMin("stale_after_seconds", 1)
		if sts, ok := bo.intList("ignore_statuses"); ok {
			for i, s := range sts {
				if s < 100 || s > 599 {
					bo.d.errAt(bo.e, indexPath(bo.fieldPath("ignore_statuses"), i), "must be an HTTP status code (100 to 599)")
				}
			}
			bc.IgnoreStatuses = sts
		}
		bo.finish()
		m.BackgroundCheck = bc
	}
	m.Cooldown = defaultCooldown()
	if co := o.sub("cooldown"); co != nil {
		m.Cooldown.Enabled = co.boolDefault("enabled", false)
		if v, ok := co.intMin("default_seconds", 0); ok {
			m.Cooldown.DefaultSeconds = v
		}
		if v, ok := co.intMin("max_seconds", 0); ok {
			m.Cooldown.MaxSeconds = v
		}
		m.Cooldown.HonorRetryAfter = co.boolDefault("honor_retry_after", true)
		if sts, ok := co.intList("trigger_statuses"); ok {
			for i, s := range sts {
				if s < 100 || s > 599 {
					co.d.errAt(co.e, indexPath(co.fieldPath("trigger_statuses"), i), "must be an HTTP status code (100 to 599)")
				}
			}
			m.Cooldown.TriggerStatuses = sts
		}
		m.Cooldown.TriggerOnTimeout = co.boolDefault("trigger_on_timeout", true)
		m.Cooldown.TriggerOnTransport = co.boolDefault("trigger_on_transport", true)
		co.finish()
	}
	if ao := o.sub("auto_prompt_caching"); ao != nil {
		apc := &AutoPromptCaching{TTL: "5m"}
		if m.Provider != "anthropic" {
			o.errf("auto_prompt_caching", "accepted only for provider anthropic")
		}
		if !ao.has("enabled") {
			ao.raw("enabled")
			ao.errf("enabled", "required")
		}
		apc.Enabled, _ = ao.bool("enabled")
		if t, ok := ao.enum("ttl", "5m", "1h"); ok {
			apc.TTL = t
		}
		ao.finish()
		m.AutoPromptCaching = apc
	}
	if eo := o.sub("effort_mapping"); eo != nil {
		for i, k := range eo.keys {
			eo.used[i] = true
			v := resolve(eo.vals[i])
			rule := EffortRule{From: k.Value}
			if !isNull(v) {
				s, _, ok := o.d.scalarString(o.e, joinPath(eo.path, k.Value), v)
				if !ok {
					continue
				}
				rule.To = &s
			}
			m.EffortMapping = append(m.EffortMapping, rule)
		}
	}
}

func decodeRouting(o *obj) *Routing {
	r := &Routing{Strategy: StrategyFailover, WhenAllUnavailable: "fail"}
	if o == nil {
		return r
	}
	defer o.finish()
	targets, ok := o.objs("targets")
	if !ok {
		o.raw("targets")
		o.errf("targets", "required; list at least one target model")
	} else if len(targets) == 0 {
		o.errf("targets", "must hold at least one target")
	}
	for _, t := range targets {
		if t == nil {
			continue
		}
		rt := RoutingTarget{Weight: 1}
		rt.ModelName = t.reqStr("model")
		if w, ok := t.intMin("weight", 0); ok {
			rt.Weight = w
		}
		if rt.Weight == 0 {
			rt.Weight = 1
		}
		if p, ok := t.intMin("priority", -1); ok {
			rt.Priority = p
		}
		rt.Tags, _ = t.strList("tags")
		t.finish()
		r.Targets = append(r.Targets, rt)
	}
	if s, ok := o.enum("strategy", StrategyRoundRobin, StrategyConsistentHash, StrategyFailover, StrategyLeastCost, StrategyLeastLatency, StrategyLeastBusy); ok {
		r.Strategy = s
	}
	r.Retries = o.optInt("retries", 0)
	r.MaxFallbacks = o.optInt("max_fallbacks", 0)
	r.RetryOn429 = o.boolDefault("retry_on_429", false)
	if sts, ok := o.intList("fallback_on_statuses"); ok {
		for i, s := range sts {
			if s < 400 || s > 499 {
				o.d.errAt(o.e, indexPath(o.fieldPath("fallback_on_statuses"), i), "must be a 4xx status (5xx are always retryable)")
			}
		}
		r.FallbackOnStatuses = sts
	}
	if w, ok := o.enum("when_all_unavailable", "fail", "try_anyway"); ok {
		r.WhenAllUnavailable = w
	}
	if o.has("hash_on") && r.Strategy != StrategyConsistentHash {
		o.reject("hash_on", "accepted only with strategy consistent_hash")
		return r
	}
	hs, _ := o.objs("hash_on")
	for _, h := range hs {
		if h == nil {
			continue
		}
		src := HashSource{}
		if !h.has("type") {
			h.raw("type")
			h.errf("type", "required")
		}
		src.Type, _ = h.enum("type", "header", "cookie", "api_key", "client_ip")
		switch src.Type {
		case "header", "cookie":
			src.Name = h.reqStr("name")
			if src.Type == "header" {
				src.Name = strings.ToLower(src.Name)
			}
		case "api_key", "client_ip":
			h.reject("name", "not accepted for type "+src.Type)
		}
		h.finish()
		r.HashOn = append(r.HashOn, src)
	}
	return r
}

func decodeEnsemble(o *obj) *Ensemble {
	en := &Ensemble{}
	if o == nil {
		return en
	}
	defer o.finish()
	panel, ok := o.objs("panel")
	if !ok {
		o.raw("panel")
		o.errf("panel", "required; list at least one member")
	} else if len(panel) == 0 {
		o.errf("panel", "must hold at least one member")
	}
	for _, p := range panel {
		if p == nil {
			continue
		}
		pm := PanelMember{ModelName: p.reqStr("model")}
		if t, ok := p.floatRange("temperature", 0, 2); ok {
			pm.Temperature = &t
		}
		if s, ok := p.int("seed"); ok {
			pm.Seed = &s
		}
		p.float("weight") // accepted but ignored
		p.finish()
		en.Panel = append(en.Panel, pm)
	}
	if j := o.sub("judge"); j != nil {
		en.JudgeName = j.reqStr("model")
		en.SynthesisPrompt, _ = j.str("synthesis_prompt")
		j.finish()
	} else {
		o.errf("judge", "required (judge.model)")
	}
	n := int64(len(en.Panel))
	en.MinResponses = min(2, n)
	if v, ok := o.intMin("min_responses", 1); ok {
		// Above the panel size the value is capped, not rejected (spec):
		// every member answering is the most an ensemble can ask for.
		en.MinResponses = v
		if n > 0 && v > n {
			en.MinResponses = n
		}
	}
	if en.MinResponses < 1 {
		en.MinResponses = 1
	}
	en.TimeoutMS, _ = o.intMin("timeout_ms", 0)
	return en
}

func decodeSemantic(o *obj) *Semantic {
	s := &Semantic{DistanceMetric: "cosine", Aggregation: "max", OnEmbeddingFailure: "default"}
	if o == nil {
		return s
	}
	defer o.finish()
	s.EmbeddingModelName = o.reqStr("embedding_model")
	s.DefaultName = o.reqStr("default")
	if mo := o.sub("match"); mo != nil {
		if !mo.has("threshold") {
			mo.raw("threshold")
			mo.errf("threshold", "required")
		}
		s.Threshold, _ = mo.floatRange("threshold", 0, 1)
		if v, ok := mo.enum("distance_metric", "cosine"); ok {
			s.DistanceMetric = v
		}
		if v, ok := mo.enum("aggregation", "max"); ok {
			s.Aggregation = v
		}
		mo.finish()
	} else {
		o.errf("match", "required (match.threshold)")
	}
	routes, ok := o.objs("routes")
	if !ok {
		o.raw("routes")
		o.errf("routes", "required; list at least one route")
	} else if len(routes) == 0 {
		o.errf("routes", "must hold at least one route")
	}
	seen := map[string]bool{}
	for _, r := range routes {
		if r == nil {
			continue
		}
		sr := SemanticRoute{Threshold: -1}
		sr.Name = r.reqStr("name")
		if sr.Name != "" && seen[sr.Name] {
			r.errf("name", "duplicate route name \""+sr.Name+"\"")
		}
		seen[sr.Name] = true
		sr.TargetName = r.reqStr("target")
		ex, ok := r.strList("examples")
		if !ok && !r.has("examples") {
			r.errf("examples", "required; list at least one utterance")
		} else if len(ex) == 0 && ok {
			r.errf("examples", "must hold at least one utterance")
		}
		for i, x := range ex {
			if strings.TrimSpace(x) == "" {
				r.d.errAt(r.e, indexPath(r.fieldPath("examples"), i), "must not be empty")
			}
		}
		sr.Examples = ex
		sr.Description, _ = r.str("description")
		if t, ok := r.floatRange("threshold", 0, 1); ok {
			sr.Threshold = t
		}
		r.finish()
		s.Routes = append(s.Routes, sr)
	}
	for i := range s.Routes {
		if s.Routes[i].Threshold < 0 {
			s.Routes[i].Threshold = s.Threshold
		}
	}
	s.EmbeddingTimeoutMS, _ = o.intMin("embedding_timeout_ms", 0)
	if n := o.raw("on_embedding_failure"); n != nil {
		path := o.fieldPath("on_embedding_failure")
		switch {
		case n.ShortTag() == "!!str":
			v, _, _ := o.d.scalarString(o.e, path, n)
			if v != "default" && v != "fail" {
				o.errf("on_embedding_failure", "unknown value \""+v+"\"; allowed: default, fail, or {target: <model>}")
			}
			s.OnEmbeddingFailure = v
		default:
			if fo := o.d.newObj(o.e, path, n); fo != nil {
				s.OnEmbeddingFailure = "target"
				s.FailureTargetName = fo.reqStr("target")
				fo.finish()
			}
		}
	}
	return s
}
