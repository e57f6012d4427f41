package balancer

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Target is one routing target as the integrator maps it from the routing
// model's routing.targets entry and the direct model it names.
type Target struct {
	// ID is the direct model's derived ID: the consistent_hash seed and the
	// Registry key, so placement and state survive reloads and reordering.
	ID       string
	Weight   int64    // ≤ 0 is treated as 1; values above MaxWeight are clamped
	Priority int64    // higher tiers first; -1 is the backup tier
	Tags     []string // eligibility tags
	// Cost is input_per_1k + output_per_1k, for least_cost. Use math.Inf(1)
	// for a model without a cost block (it sorts last); NaN counts as +Inf.
	Cost float64
	// Cooldown is the direct model's cooldown block; nil disables cooldown.
	Cooldown *CooldownConfig
}

// Limits on a group.
const (
	MaxTargets = 1<<16 - 2 // targets per group (consistent_hash packs index+1 in 16 bits)
	MaxWeight  = 1 << 24   // larger weights are clamped
)

// Options configure NewGroup.
type Options struct {
	// Strategy is a routing.strategy name; "" means failover.
	Strategy string
	// MaxAttempts bounds what Order returns (1 + routing.max_fallbacks);
	// 0 means every eligible target of the tier.
	MaxAttempts int
	// Registry provides the per-model states; nil gives the group private
	// states (tests, tools).
	Registry *Registry
}

// Errors returned by NewGroup.
var (
	ErrNoTargets      = errors.New("balancer: a group needs at least one target")
	ErrTooManyTargets = errors.New("balancer: too many targets in a group")
	ErrStrategy       = errors.New("balancer: unknown strategy")
)

// Group is the compiled, immutable target table of one routing model, built
// once per snapshot. Its methods are safe for concurrent use; the mutable
// parts are the strategy's counters and the shared States.
type Group struct {
	targets []Target
	states  []*State
	words   int // Set length covering every target

	tiers []tier // priority descending

	all      Set
	tagged   bool           // some target has tags
	tagIDs   map[string]int // tag → index into tagSets
	tagSets  []Set
	defaults Set // targets tagged "default"; nil when none

	cooling []int // targets with cooldown enabled

	name  string
	strat Strategy
	limit int
}

// tier is the targets sharing one priority.
type tier struct {
	priority int64
	set      Set
	members  []int // ascending (declared order)
}

// Request is the per-request input of Order and Pick. Reuse one per request
// context (its scratch buffers are kept): set the exported fields, leave the
// rest alone. Not safe for concurrent use.
type Request struct {
	// Key is the consistent_hash key (see HashKey); requests without one are
	// spread by weight.
	Key []byte
	// Tags is the raw TagsHeader value; empty means an untagged request.
	Tags []byte
	// Skip holds targets the caller rules out: unhealthy, cooling down (see
	// Group.MarkCooling), outside allowed_cidrs, or already tried.
	Skip Set

	elig  Set
	tagw  Set
	ranks []uint64
	one   []int
}

// Reset clears the exported fields and keeps the scratch.
func (r *Request) Reset() {
	r.Key, r.Tags, r.Skip = nil, nil, r.Skip[:0]
}

// NewGroup compiles targets under opt. Targets are indexed by their position.
func NewGroup(targets []Target, opt Options) (*Group, error) {
	if len(targets) == 0 {
		return nil, ErrNoTargets
	}
	if len(targets) > MaxTargets {
		return nil, fmt.Errorf("%w: %d, at most %d", ErrTooManyTargets, len(targets), MaxTargets)
	}
	name := opt.Strategy
	if name == "" {
		name = StrategyFailover
	}
	newStrategy, ok := strategies[name]
	if !ok {
		return nil, fmt.Errorf("%w %q; known: %v", ErrStrategy, name, Strategies())
	}
	n := len(targets)
	g := &Group{
		targets: make([]Target, n),
		states:  make([]*State, n),
		words:   (n + 63) >> 6,
		name:    name,
		limit:   n,
	}
	if opt.MaxAttempts > 0 && opt.MaxAttempts < n {
		g.limit = opt.MaxAttempts
	}
	for i, t := range targets {
		t.Weight = min(max(t.Weight, 1), MaxWeight)
		if math.IsNaN(t.Cost) {
			t.Cost = math.Inf(1)
		}
		t.Tags = slices.Clone(t.Tags)
		g.targets[i] = t
		if opt.Registry != nil {
			g.states[i] = opt.Registry.State(t.ID)
		} else {
			g.states[i] = new(State)
		}
		g.all = g.all.Add(i)
		if t.Cooldown != nil && t.Cooldown.Enabled {
			g.cooling = append(g.cooling, i)
		}
	}
	g.compileTiers()
	g.compileTags()
	g.strat = newStrategy(g)
	return g, nil
}

func (g *Group) compileTiers() {
	prios := make([]int64, 0, 4)
	for _, t := range g.targets {
		if !slices.Contains(prios, t.Priority) {
			prios = append(prios, t.Priority)
		}
	}
	slices.Sort(prios)
	slices.Reverse(prios)
	g.tiers = make([]tier, len(prios))
	for ti, p := range prios {
		tr := &g.tiers[ti]
		tr.priority = p
		tr.set = make(Set, g.words)
		for i, t := range g.targets {
			if t.Priority == p {
				tr.members = append(tr.members, i)
				tr.set = tr.set.Add(i)
			}
		}
	}
}

func (g *Group) compileTags() {
	g.tagIDs = make(map[string]int)
	for i, t := range g.targets {
		for _, tag := range t.Tags {
			g.tagged = true
			id, ok := g.tagIDs[tag]
			if !ok {
				id = len(g.tagSets)
				g.tagIDs[tag] = id
				g.tagSets = append(g.tagSets, make(Set, g.words))
			}
			g.tagSets[id] = g.tagSets[id].Add(i)
		}
	}
	if id, ok := g.tagIDs["default"]; ok {
		g.defaults = g.tagSets[id]
	}
}

// Len returns the number of targets.
func (g *Group) Len() int { return len(g.targets) }

// Target returns target i as compiled (weight defaulted and clamped). The
// caller must not modify it.
func (g *Group) Target(i int) *Target { return &g.targets[i] }

// State returns target i's shared state.
func (g *Group) State(i int) *State { return g.states[i] }

// Strategy returns the strategy name.
func (g *Group) Strategy() string { return g.name }

// Order writes the attempt order into out[:0] and returns it: the pick first,
// then failover candidates, at most Options.MaxAttempts. It covers only the
// highest-priority tier that has a usable target (tag-eligible and not in
// req.Skip); it is empty when no tier has one. To reach lower tiers after
// failures, add the failed targets to req.Skip and call Order (or Pick)
// again: a lower tier is used only once the higher ones are all skipped.
// Allocation-free once out and req's scratch have grown.
func (g *Group) Order(req *Request, out []int) []int {
	out = out[:0]
	c, ok := g.candidates(req, g.limit)
	if !ok {
		return out
	}
	return g.strat.Order(req, c, out)
}

// Pick returns the first target Order would return, or -1 when no target is
// usable. Calling Pick again with the failed targets added to req.Skip walks
// the same failover path one attempt at a time, which is cheaper than Order
// when most requests succeed at once.
func (g *Group) Pick(req *Request) int {
	c, ok := g.candidates(req, 1)
	if !ok {
		return -1
	}
	req.one = g.strat.Order(req, c, req.one[:0])
	if len(req.one) == 0 {
		panic("BUG: balancer: strategy returned no target for a non-empty tier")
	}
	return req.one[0]
}

// Eligible writes the tag-eligible targets of every tier into out[:0] in
// declared order, ignoring req.Skip: the order routing.when_all_unavailable
// try_anyway uses once Order comes back empty.
func (g *Group) Eligible(req *Request, out []int) []int {
	return g.narrow(req).appendMembers(out[:0], len(g.targets))
}

// candidates narrows by tags, then returns the usable targets of the highest
// tier that has any.
func (g *Group) candidates(req *Request, limit int) (Candidates, bool) {
	ts := g.narrow(req)
	if ts == nil {
		return Candidates{}, false
	}
	// Fast path - one tier, no narrowing, nothing skipped: the tier's own set.
	if len(g.tiers) == 1 && len(req.Skip) == 0 && &ts[0] == &g.all[0] {
		return Candidates{Set: g.tiers[0].set, Tier: 0, Full: true, Limit: limit}, true
	}
	e := req.elig.sized(g.words)
	req.elig = e
	for ti := range g.tiers {
		tr := g.tiers[ti].set
		var any uint64
		full := true
		for w := range e {
			x := tr[w] & ts[w] &^ req.Skip.word(w)
			e[w] = x
			any |= x
			full = full && x == tr[w]
		}
		if any != 0 {
			return Candidates{Set: e, Tier: ti, Full: full, Limit: limit}, true
		}
	}
	return Candidates{}, false
}

// narrow applies the tag rules and returns the tag-eligible set (g.all,
// g.defaults, a tag set or req scratch), or nil when none is eligible:
//   - no target has tags: every target;
//   - a tagged request: targets sharing at least one tag, else targets
//     tagged "default" (none: nothing eligible);
//   - an untagged request: targets tagged "default", else every target.
func (g *Group) narrow(req *Request) Set {
	if !g.tagged {
		return g.all
	}
	var acc Set
	tagged := false
	for rest := req.Tags; len(rest) > 0; {
		var tok []byte
		tok, rest = nextTag(rest)
		if len(tok) == 0 {
			continue
		}
		tagged = true
		id, ok := g.tagIDs[string(tok)]
		if !ok {
			continue
		}
		if acc == nil {
			acc = req.tagw.sized(g.words)
			req.tagw = acc
			clear(acc)
		}
		for w, x := range g.tagSets[id] {
			acc[w] |= x
		}
	}
	switch {
	case acc != nil:
		return acc
	case g.defaults != nil:
		return g.defaults
	case tagged:
		return nil
	}
	return g.all
}

// nextTag splits the first comma-separated item off list, trimming spaces
// and tabs.
func nextTag(list []byte) (tok, rest []byte) {
	i := 0
	for i < len(list) && list[i] != ',' {
		i++
	}
	tok, rest = list[:i], list[min(i+1, len(list)):]
	for len(tok) > 0 && (tok[0] == ' ' || tok[0] == '\t') {
		tok = tok[1:]
	}
	for len(tok) > 0 && (tok[len(tok)-1] == ' ' || tok[len(tok)-1] == '\t') {
		tok = tok[:len(tok)-1]
	}
	return tok, rest
}

// Acquire counts an attempt on target i in flight (least_busy reads it); the
// caller must call Release(i) exactly once when the attempt ends.
func (g *Group) Acquire(i int) { g.states[i].Acquire() }

// Release ends an attempt counted by Acquire(i).
func (g *Group) Release(i int) { g.states[i].Release() }

// Observe records a successful attempt's latency on target i (least_latency).
func (g *Group) Observe(i int, d time.Duration) { g.states[i].Observe(d) }

// Trip applies target i's cooldown block to failure f at now and returns the
// cooldown started (0 if none). See State.Trip.
func (g *Group) Trip(i int, now time.Time, f Failure) time.Duration {
	return g.states[i].Trip(now, f, g.targets[i].Cooldown)
}

// MarkCooling adds the targets cooling down at now to skip and returns it.
// It reads one atomic per target with cooldown enabled.
func (g *Group) MarkCooling(skip Set, now time.Time) Set {
	for _, i := range g.cooling {
		if g.states[i].CoolingDown(now) {
			skip = skip.Add(i)
		}
	}
	return skip
}
