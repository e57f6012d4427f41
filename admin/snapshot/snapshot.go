// Package snapshot compiles validated resources into the immutable lookup
// tables the request path reads, and holds the active one behind an
// atomic pointer. A request loads the pointer once and uses that snapshot to
// the end; a reload builds a new snapshot off to the side and swaps it.
package snapshot

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"math"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"gw/adapters"
	"gw/adapters/registry"
	"gw/adapters/upstream"
	"gw/admin/resources"
	"gw/balancer"
)

// Options are deployment settings that take part in compilation.
type Options struct {
	// UpstreamTimeout is the deployment default (upstream.timeout_ms); 0 disables.
	UpstreamTimeout time.Duration
	// Pool supplies upstream clients (shared across snapshots). nil skips
	// adapter compilation (validation-only use).
	Pool *upstream.Pool
	// Adapters are the deployment-wide adapter settings.
	Adapters adapters.Options
	// Balancer holds the per-model state that outlives snapshots (cooldown,
	// latency EWMA, in-flight counts), keyed by derived ID. nil gives each
	// snapshot private state (tests, validation).
	Balancer *balancer.Registry
	// Guardrails compiles the guardrail chains of every attached scope into
	// the edge's checkers (edge/guard, injected by cmd/gw so admin imports
	// no edge package). An error (a custom script that does not compile)
	// fails the load. nil leaves guardrails uncompiled and on the
	// unenforced list.
	Guardrails GuardrailCompiler
	// Prepare runs on a compiled snapshot before it is published: work that
	// needs the compiled upstreams and may call them (the example vectors
	// of semantic routers and semantic guardrails, edge.SemanticPreparer,
	// injected by cmd/gw). An error fails the load, so the previous
	// snapshot keeps serving. nil, or a nil Pool, skips it.
	Prepare func(*Snapshot) error
}

// GuardrailCompiler compiles per-scope guardrail chains; the values are the
// edge's compiled chains, opaque here. Scopes absent from the result run
// nothing. Built reports whether a kind runs in this build (the others
// stay on the unenforced list and answer per their fail-open settings).
type GuardrailCompiler interface {
	Compile(map[resources.GuardrailScope]*resources.GuardrailChain) (map[resources.GuardrailScope]any, error)
	Built(kind string) bool
}

// Upstream is a provider key compiled for dispatch.
type Upstream struct {
	Key     *resources.ProviderKey
	Adapter adapters.Adapter // nil when Err is set
	Client  *upstream.Client
	// Protocol is the wire format of the upstream's answers to chat calls:
	// "" for chat completions, "messages" for the Anthropic Messages API.
	Protocol string
	// Native holds, per caller surface the key serves natively (the `apis`
	// rules), the client of that surface's base URL; nil means the surface
	// is converted to chat completions.
	Native [adapters.NumSurfaces]*upstream.Client
	// Err is set when the key's adapter family is not implemented in this
	// build (adapters.ErrUnsupported); requests to its models get 501.
	Err error
	// Caps are the caller endpoints beyond chat the adapter builds.
	Caps adapters.Caps
}

// DefaultOptions returns the spec defaults.
func DefaultOptions() Options {
	return Options{UpstreamTimeout: resources.DefaultUpstreamTimeoutMS * time.Millisecond}
}

// Snapshot is one compiled resource file. Immutable after Compile.
type Snapshot struct {
	Resources *resources.Resources

	// guards are the compiled guardrail chains, kept for Retire.
	guards map[resources.GuardrailScope]any

	// Plans maps a caller-facing alias to its dispatch plan.
	Plans map[string]*Plan
	// PlanList holds every plan in file order; Plan.Index indexes it.
	PlanList []*Plan
	// Callers maps the SHA-256 of a caller key to the caller.
	Callers map[[32]byte]*Caller
	// CallersByName maps a caller key display_name to the caller.
	CallersByName map[string]*Caller
	// Upstreams holds every provider key compiled (also keys no model uses:
	// passthrough routes inject their credentials); empty without a pool.
	Upstreams map[*resources.ProviderKey]*Upstream

	// Guardrails maps each attached scope (model, api_key, team, mcp_server,
	// passthrough_route by canonical name) to its ordered input/output chains.
	Guardrails map[resources.GuardrailScope]*resources.GuardrailChain
	// MCPGuards are the compiled guardrail chains attached to MCP servers,
	// by server name (edge/mcp judges tool arguments and results with them).
	MCPGuards map[string]any
	// OIDC is the JWT verifier order (by issuer, then issuer-less HMAC providers).
	OIDC *resources.OIDCVerifiers
	// JWT maps verified tokens to callers (jwt_subject bindings, claim_mappings).
	JWT *JWTTable

	// Unenforced lists what the resources configure without runtime effect
	// in this build (see Unenforced).
	Unenforced []Unenforced

	Options Options
	// CompiledAt is when Compile ran (the `created` of /v1/models entries).
	CompiledAt time.Time
}

// Plan is the precomputed dispatch plan of one model alias.
type Plan struct {
	Index      int
	Alias      string
	AliasJSON  []byte // the alias as a JSON string literal, for response rewriting
	AliasBytes []byte // the alias as bytes, for transcoders
	ID         string
	Model      *resources.Model
	Kind       resources.ModelKind
	// Servable is false for aliases this build cannot answer (semantic
	// models, adapters not built); /v1/models leaves them out.
	Servable bool

	// Direct models: the upstream model name and its JSON literal, and the
	// compiled provider key (nil when Options.Pool is nil).
	UpstreamModel     string
	UpstreamModelJSON []byte
	Upstream          *Upstream
	// Effort is the compiled effort_mapping; nil when off.
	Effort *EffortMap
	// State is the direct model's shared balancer state (cooldown, latency,
	// in-flight); Cooldown its compiled cooldown block, nil when disabled.
	State    *balancer.State
	Cooldown *balancer.CooldownConfig

	// Routing models: the compiled target group (Targets index = group
	// index), the consistent-hash key sources and when_all_unavailable.
	Group              *balancer.Group
	HashOn             []balancer.HashSource
	WhenAllUnavailable string

	// Resolved through own → group → deployment; 0 means no deadline.
	Timeout       time.Duration
	StreamTimeout time.Duration
	Retries       int

	// Targets of a routing model, each with timeouts resolved through the
	// target's own value, then the group slot, then the deployment default.
	Targets []Target
	// Attempts is the dispatch order: a direct model is its own single
	// target; a routing model's targets are ordered by priority (higher
	// first), then declared order — the failover strategy.
	Attempts []Target
	// MaxFallbacks bounds the further targets tried after the first fails.
	MaxFallbacks int
	// RetryOn429 and FallbackOn extend the retryable statuses (5xx, transport
	// and timeout failures are always retryable).
	RetryOn429 bool
	FallbackOn []int

	AllowedCIDRs []netip.Prefix

	// Endpoints are the caller endpoints beyond chat the alias serves
	// (compileEndpoints).
	Endpoints adapters.Caps

	// Ensemble is the compiled panel and judge of an ensemble model; nil
	// for the other kinds (ensemble.go).
	Ensemble *EnsemblePlan

	// Guard is the compiled guardrail chain attached to this alias (see
	// Options.Guardrails); nil when none.
	Guard any

	// Semantic routers: Routes holds one target per semantic.routes entry
	// in declared order, then `default`, then the on_embedding_failure
	// target when one is set; timeouts and retries resolve through the
	// target's own value, then the router's slot, then the deployment
	// default. Semantic is the edge's compiled router (vectors and all),
	// set by Options.Prepare; until then the alias is not servable.
	Routes   []Target
	Semantic any

	// Cache is the response cache policy covering this alias (cache.go);
	// nil when none.
	Cache *CacheRule
}

// Target is one resolved routing target.
type Target struct {
	Plan          *Plan // the direct model's own plan
	Weight        int
	Priority      int
	Tags          []string
	Timeout       time.Duration
	StreamTimeout time.Duration
	Retries       int
}

// Caller is one caller key with its grants pre-expanded.
type Caller struct {
	Key *resources.APIKey
	// AllowAll is set when allowed_models contains "*".
	AllowAll bool
	// grants is a bitset over Plan.Index.
	grants []uint64
	// Guard and TeamGuard are the compiled guardrail chains attached to the
	// key and to its team_id (see Options.Guardrails); nil when none.
	Guard, TeamGuard any
}

// Allowed reports whether the caller may use plan p.
func (c *Caller) Allowed(p *Plan) bool {
	if c.AllowAll {
		return true
	}
	w := p.Index >> 6
	return w < len(c.grants) && c.grants[w]&(1<<(uint(p.Index)&63)) != 0
}

// Visible returns the plans the caller may use, in file order.
func (s *Snapshot) Visible(c *Caller) []*Plan {
	out := make([]*Plan, 0, len(s.PlanList))
	for _, p := range s.PlanList {
		if c.Allowed(p) {
			out = append(out, p)
		}
	}
	return out
}

// Lookup returns the caller for a presented plaintext key, or nil.
// The key is hashed here; callers never keep or log the plaintext.
func (s *Snapshot) Lookup(key []byte) *Caller {
	return s.Callers[sha256.Sum256(key)]
}

// Compile builds a snapshot from validated resources. It fails only when a
// provider key cannot be compiled for its adapter (for example an api_base the
// upstream client cannot use); the caller keeps the previous snapshot then.
func Compile(res *resources.Resources, opt Options) (*Snapshot, error) {
	s := &Snapshot{
		Resources:     res,
		Plans:         make(map[string]*Plan, len(res.Models)),
		PlanList:      make([]*Plan, 0, len(res.Models)),
		Callers:       make(map[[32]byte]*Caller, len(res.APIKeys)),
		CallersByName: make(map[string]*Caller, len(res.APIKeys)),
		Options:       opt,
		CompiledAt:    time.Now(),
	}
	ups, err := compileUpstreams(res, opt)
	if err != nil {
		return nil, err
	}
	s.Upstreams = ups
	reg := opt.Balancer
	if reg == nil {
		reg = balancer.NewRegistry()
	}
	byModel := make(map[*resources.Model]*Plan, len(res.Models))
	for i, m := range res.Models {
		p := &Plan{
			Index:        i,
			Alias:        m.DisplayName,
			AliasJSON:    jsonString(m.DisplayName),
			AliasBytes:   []byte(m.DisplayName),
			ID:           m.ID,
			Model:        m,
			Kind:         m.Kind,
			AllowedCIDRs: m.AllowedCIDRs,
		}
		if m.Kind == resources.KindDirect {
			p.UpstreamModel = m.ModelName
			p.UpstreamModelJSON = jsonString(m.ModelName)
			p.Upstream = ups[m.ProviderKey]
			p.Effort = compileEffort(m.EffortMapping)
			p.State = reg.State(m.ID)
			p.Cooldown = compileCooldown(&m.Cooldown)
		}
		p.Timeout = resolveTimeout(m.Timeout, nil, opt.UpstreamTimeout)
		p.StreamTimeout = resolveStreamTimeout(m.StreamTimeout, nil, m.Timeout, nil, opt.UpstreamTimeout)
		if m.Retries != nil {
			p.Retries = int(*m.Retries)
		}
		s.Plans[p.Alias] = p
		s.PlanList = append(s.PlanList, p)
		byModel[m] = p
	}
	for _, p := range s.PlanList {
		m := p.Model
		if m.Kind != resources.KindRouting {
			continue
		}
		r := m.Routing
		for _, t := range r.Targets {
			tm := t.Model
			tp := byModel[tm]
			tt := Target{Plan: tp, Weight: int(t.Weight), Priority: int(t.Priority), Tags: t.Tags}
			tt.Timeout = resolveTimeout(tm.Timeout, m.Timeout, opt.UpstreamTimeout)
			tt.StreamTimeout = resolveStreamTimeout(tm.StreamTimeout, m.StreamTimeout, tm.Timeout, m.Timeout, opt.UpstreamTimeout)
			switch {
			case tm.Retries != nil:
				tt.Retries = int(*tm.Retries)
			case r.Retries != nil:
				tt.Retries = int(*r.Retries)
			}
			p.Targets = append(p.Targets, tt)
		}
	}
	for _, p := range s.PlanList {
		if p.Kind == resources.KindSemantic {
			compileRoutes(p, byModel, opt.UpstreamTimeout)
		}
	}
	for _, p := range s.PlanList {
		if p.Kind == resources.KindEnsemble {
			p.Ensemble = compileEnsemble(p.Model.Ensemble, byModel)
		}
		compileAttempts(p)
		if p.Kind == resources.KindRouting {
			if err := compileGroup(p, reg); err != nil {
				return nil, err
			}
		}
	}
	for _, p := range s.PlanList {
		p.Servable = servable(p)
	}
	if err := compileEndpoints(s.PlanList); err != nil {
		return nil, err
	}
	compileCache(res, s.PlanList)
	s.compileCallers(res)
	s.Guardrails = res.GuardrailChains()
	if opt.Guardrails != nil {
		if err := s.compileGuardrails(opt.Guardrails); err != nil {
			return nil, err
		}
	}
	s.OIDC = res.OIDCVerifiers()
	s.compileJWT(res)
	s.Unenforced = unenforced(res, s.PlanList, opt.Guardrails)
	if opt.Prepare != nil && opt.Pool != nil {
		if err := opt.Prepare(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// compileRoutes fills the Routes of a semantic router plan.
func compileRoutes(p *Plan, byModel map[*resources.Model]*Plan, deployment time.Duration) {
	m, sem := p.Model, p.Model.Semantic
	add := func(tm *resources.Model) {
		tp := byModel[tm]
		if tp == nil {
			panic("BUG: snapshot: semantic target of " + p.Alias + " has no plan")
		}
		t := Target{Plan: tp, Weight: 1}
		t.Timeout = resolveTimeout(tm.Timeout, m.Timeout, deployment)
		t.StreamTimeout = resolveStreamTimeout(tm.StreamTimeout, m.StreamTimeout, tm.Timeout, m.Timeout, deployment)
		switch {
		case tm.Retries != nil:
			t.Retries = int(*tm.Retries)
		case m.Retries != nil:
			t.Retries = int(*m.Retries)
		}
		p.Routes = append(p.Routes, t)
	}
	for i := range sem.Routes {
		add(sem.Routes[i].Target)
	}
	add(sem.Default)
	if sem.FailureTarget != nil {
		add(sem.FailureTarget)
	}
}

// compileGuardrails compiles the chains and hangs each on what its scope
// names, so a request finds its chains without a lookup.
func (s *Snapshot) compileGuardrails(gc GuardrailCompiler) error {
	compiled, err := gc.Compile(s.Guardrails)
	if err != nil {
		return err
	}
	s.guards = compiled
	for scope, ch := range compiled {
		switch scope.Type {
		case resources.GuardrailScopeModel:
			if p := s.Plans[scope.Name]; p != nil {
				p.Guard = ch
			}
		case resources.GuardrailScopeAPIKey:
			if c := s.CallersByName[scope.Name]; c != nil {
				c.Guard = ch
			}
		case resources.GuardrailScopeMCPServer:
			if s.MCPGuards == nil {
				s.MCPGuards = make(map[string]any)
			}
			s.MCPGuards[scope.Name] = ch
		case resources.GuardrailScopeTeam:
			for _, c := range s.CallersByName {
				if c.Key.TeamID == scope.Name {
					c.TeamGuard = ch
				}
			}
		}
	}
	return nil
}

// servable reports whether this build can answer requests for p: a direct
// model whose adapter exists, or a routing group with such a target.
// An ensemble needs its judge and min_responses members servable.
// Semantic models are not built.
func servable(p *Plan) bool {
	switch p.Kind {
	case resources.KindEnsemble:
		return servableEnsemble(p)
	case resources.KindDirect:
		return p.Model.ProviderKey != nil && registry.Built(p.Model.ProviderKey.Adapter)
	case resources.KindRouting:
		for _, t := range p.Targets {
			if servable(t.Plan) {
				return true
			}
		}
	}
	return false
}

// compileUpstreams builds one adapter and client per provider key.
func compileUpstreams(res *resources.Resources, opt Options) (map[*resources.ProviderKey]*Upstream, error) {
	out := make(map[*resources.ProviderKey]*Upstream, len(res.ProviderKeys))
	if opt.Pool == nil {
		return out, nil
	}
	for _, pk := range res.ProviderKeys {
		u := &Upstream{Key: pk}
		out[pk] = u
		cfg := adapterConfig(pk)
		a, err := registry.New(cfg, opt.Adapters)
		if errors.Is(err, adapters.ErrUnsupported) {
			u.Err = err
			continue
		}
		if err != nil {
			return nil, errors.New("provider_keys[" + strconv.Itoa(pk.Index) + "] (display_name=" + pk.DisplayName + "): cannot compile adapter: " + err.Error())
		}
		base, err := registry.BaseURL(cfg)
		if err != nil {
			return nil, errors.New("provider_keys[" + strconv.Itoa(pk.Index) + "] (display_name=" + pk.DisplayName + "): api_base: required for adapter " + pk.Adapter)
		}
		c, err := opt.Pool.Client(cfg.Target(base))
		if err != nil {
			return nil, errors.New("provider_keys[" + strconv.Itoa(pk.Index) + "] (display_name=" + pk.DisplayName + "): api_base: " + err.Error())
		}
		u.Adapter, u.Client = a, c
		u.Caps = adapters.CapsOf(a)
		if pr, ok := a.(adapters.Protocoler); ok {
			u.Protocol = pr.Protocol()
		}
		if nb, ok := a.(adapters.NativeBuilder); ok {
			for s := adapters.SurfaceResponses; s < adapters.NumSurfaces; s++ {
				nbase := nb.NativeBase(s)
				if nbase == "" {
					continue
				}
				if u.Native[s], err = opt.Pool.Client(nativeTarget(cfg, base, nbase)); err != nil {
					return nil, errors.New("provider_keys[" + strconv.Itoa(pk.Index) + "] (display_name=" + pk.DisplayName + "): apis base: " + err.Error())
				}
			}
		}
	}
	return out, nil
}

// nativeTarget is the client target of a native surface's base URL.
// resolve_addresses belong to api_base's host: they carry over only when the
// surface's base has that same scheme, host and port.
func nativeTarget(cfg *registry.Config, base, nbase string) upstream.Target {
	t := cfg.Target(nbase)
	a, errA := url.Parse(base)
	b, errB := url.Parse(nbase)
	if errA != nil || errB != nil || a.Scheme != b.Scheme || a.Host != b.Host {
		t.ResolveAddresses = nil
	}
	return t
}

// resolveTimeout applies the own → group → deployment chain; 0 disables.
func resolveTimeout(own, group *int64, deployment time.Duration) time.Duration {
	switch {
	case own != nil:
		return time.Duration(*own) * time.Millisecond
	case group != nil:
		return time.Duration(*group) * time.Millisecond
	}
	return deployment
}

// resolveStreamTimeout: own stream_timeout (0 or absent falls back), then the
// group/router stream_timeout, then the effective timeout, then the deployment default.
func resolveStreamTimeout(own, group, ownTimeout, groupTimeout *int64, deployment time.Duration) time.Duration {
	if own != nil && *own > 0 {
		return time.Duration(*own) * time.Millisecond
	}
	if group != nil && *group > 0 {
		return time.Duration(*group) * time.Millisecond
	}
	return resolveTimeout(ownTimeout, groupTimeout, deployment)
}

func (s *Snapshot) compileCallers(res *resources.Resources) {
	words := (len(s.PlanList) + 63) >> 6
	// Many keys share the same globs; expand each distinct glob once.
	globCache := map[string][]int{}
	expand := func(g string) []int {
		if idx, ok := globCache[g]; ok {
			return idx
		}
		var idx []int
		for _, p := range s.PlanList {
			if resources.GlobMatch(g, p.Alias) {
				idx = append(idx, p.Index)
			}
		}
		globCache[g] = idx
		return idx
	}
	for _, k := range res.APIKeys {
		c := &Caller{Key: k}
		for _, g := range k.AllowedModels {
			if g == "*" {
				c.AllowAll = true
				break
			}
		}
		if !c.AllowAll && len(k.AllowedModels) > 0 {
			c.grants = make([]uint64, words)
			for _, g := range k.AllowedModels {
				if !hasStar(g) {
					if p := s.Plans[g]; p != nil {
						c.grants[p.Index>>6] |= 1 << (uint(p.Index) & 63)
					}
					continue
				}
				for _, i := range expand(g) {
					c.grants[i>>6] |= 1 << (uint(i) & 63)
				}
			}
		}
		s.Callers[k.Hash] = c
		s.CallersByName[k.DisplayName] = c
	}
}

func hasStar(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '*' {
			return true
		}
	}
	return false
}

// SortedAliases returns the aliases in lexical order (for listings).
func (s *Snapshot) SortedAliases() []string {
	out := make([]string, 0, len(s.PlanList))
	for _, p := range s.PlanList {
		out = append(out, p.Alias)
	}
	sort.Strings(out)
	return out
}

// Holder publishes the active snapshot.
type Holder struct {
	p atomic.Pointer[Snapshot]
}

// Load returns the active snapshot, or nil before the first successful load.
func (h *Holder) Load() *Snapshot { return h.p.Load() }

// Store swaps in s.
func (h *Holder) Store(s *Snapshot) { h.p.Store(s) }

// Retire tells what s compiled that s is no longer current (the holder
// serves a newer snapshot): resources kept warm for it, such as the JS
// runtimes of custom guardrails, are freed now rather than whenever the
// collector finds s unreachable. Requests still running on s finish.
func (s *Snapshot) Retire() {
	for _, ch := range s.guards {
		if r, ok := ch.(interface{ Retire() }); ok {
			r.Retire()
		}
	}
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// compileAttempts fills p.Attempts and the retry policy.
func compileAttempts(p *Plan) {
	switch p.Kind {
	case resources.KindDirect:
		p.Attempts = []Target{{Plan: p, Weight: 1, Timeout: p.Timeout, StreamTimeout: p.StreamTimeout, Retries: p.Retries}}
	case resources.KindRouting:
		p.Attempts = append([]Target(nil), p.Targets...)
		sort.SliceStable(p.Attempts, func(i, j int) bool { return p.Attempts[i].Priority > p.Attempts[j].Priority })
		r := p.Model.Routing
		p.MaxFallbacks = len(p.Attempts) - 1
		if r.MaxFallbacks != nil && int(*r.MaxFallbacks) < p.MaxFallbacks {
			p.MaxFallbacks = int(*r.MaxFallbacks)
		}
		p.RetryOn429 = r.RetryOn429
		for _, st := range r.FallbackOnStatuses {
			p.FallbackOn = append(p.FallbackOn, int(st))
		}
	}
}

// compileCooldown converts a model's cooldown block; nil when disabled.
func compileCooldown(c *resources.Cooldown) *balancer.CooldownConfig {
	if !c.Enabled {
		return nil
	}
	var st balancer.StatusSet
	for _, code := range c.TriggerStatuses {
		st.Add(int(code))
	}
	return &balancer.CooldownConfig{
		Enabled: true, Default: time.Duration(c.DefaultSeconds) * time.Second, Max: time.Duration(c.MaxSeconds) * time.Second,
		HonorRetryAfter: c.HonorRetryAfter, Statuses: st, OnTimeout: c.TriggerOnTimeout, OnTransport: c.TriggerOnTransport,
	}
}

// compileGroup builds the balancer group of a routing plan.
func compileGroup(p *Plan, reg *balancer.Registry) error {
	r := p.Model.Routing
	targets := make([]balancer.Target, len(p.Targets))
	for i, t := range p.Targets {
		m := t.Plan.Model
		cost := math.Inf(1)
		if m.Cost != nil {
			cost = m.Cost.InputPer1K + m.Cost.OutputPer1K
		}
		targets[i] = balancer.Target{ID: m.ID, Weight: int64(t.Weight), Priority: int64(t.Priority), Tags: t.Tags, Cost: cost, Cooldown: t.Plan.Cooldown}
	}
	g, err := balancer.NewGroup(targets, balancer.Options{Strategy: r.Strategy, MaxAttempts: 1 + p.MaxFallbacks, Registry: reg})
	if err != nil {
		return errors.New("models[" + strconv.Itoa(p.Model.Index) + "] (display_name=" + p.Alias + "): routing: " + err.Error())
	}
	p.Group = g
	p.WhenAllUnavailable = r.WhenAllUnavailable
	for _, h := range r.HashOn {
		src, err := balancer.ParseHashSource(h.Type, h.Name)
		if err != nil {
			return errors.New("models[" + strconv.Itoa(p.Model.Index) + "] (display_name=" + p.Alias + "): routing.hash_on: " + err.Error())
		}
		p.HashOn = append(p.HashOn, src)
	}
	return nil
}

// ScopeGuard returns the compiled guardrail chain attached to scope (a
// passthrough route, an A2A agent ...), nil when none is.
func (s *Snapshot) ScopeGuard(scope resources.GuardrailScope) any { return s.guards[scope] }
