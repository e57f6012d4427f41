package guard

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"gw/admin/resources"
)

// Constructor compiles one guardrail of a kind into its Checker. An error
// fails the snapshot load; its text should name the field at fault
// ("`script`: ...") and must never carry a secret or a matched value.
type Constructor func(g *resources.Guardrail) (Checker, error)

// Table maps a guardrail kind to its constructor. It is built in
// edge/guard/kinds (which imports every kind built) and injected where
// chains are compiled, so this package imports no kind.
type Table map[string]Constructor

// ErrKindNotBuilt is the error of a guardrail whose kind this build cannot
// run: its fail_open / output_fail_open settings decide, it is never skipped.
var ErrKindNotBuilt = errors.New("guard: this guardrail kind is not built")

// CallDeadlines is implemented by remote checkers that apply timeout_ms
// to each backend call themselves (spec: "time limit per backend call, not
// for the whole check"; presidio makes one analyzer call per text and the
// chunked kinds one call per chunk): the engine then sets no deadline of
// its own around their Check.
type CallDeadlines interface{ CallDeadlines() }

// Concurrent is implemented by checkers that may run at the same time as
// adjacent Concurrent stages of a chain (Judge's ordering rule): they never
// rewrite texts and spend their time waiting on a backend. Concurrent
// returns false for a configuration that can rewrite (presidio with a mask
// action).
type Concurrent interface{ Concurrent() bool }

// notBuilt is the checker of a kind missing from the Table.
type notBuilt struct{}

func (notBuilt) Check(context.Context, *Request, *Verdict) error { return ErrKindNotBuilt }

// Stage is one compiled guardrail of a chain. Immutable.
type Stage struct {
	G       *resources.Guardrail
	Checker Checker
	// rank orders stages of every scope alike (created_at earliest first,
	// entries without it last, ties in file order), so merging the chains
	// of several scopes keeps the spec's evaluation order.
	rank    int
	latest  bool // input_messages: latest_turn
	monitor bool
	conc    bool          // the checker is Concurrent: may run beside its Concurrent neighbours
	timeout time.Duration // custom: the deadline of the whole check (remote kinds time each call themselves)
	// hits counts gw_guardrail_hits_total{guardrail,action} per HitAction.
	hits [numHitActions]*metrics.Counter
}

// Name is the guardrail's name (metric labels, hit records).
func (s *Stage) Name() string { return s.G.Name }

// Chain is the compiled guardrails of one scope, or of one request once
// the scopes it matches are merged: Input and Output in evaluation order.
type Chain struct {
	Input  []*Stage
	Output []*Stage
}

// Empty reports whether c runs nothing.
func (c *Chain) Empty() bool { return c == nil || len(c.Input)+len(c.Output) == 0 }

// Retirer is implemented by checkers holding resources worth freeing as
// soon as the snapshot that compiled them is replaced (warm JS runtimes,
// whose memory the collector does not see), not when the collector finds
// them. A retired checker must keep working: requests that started on the
// old snapshot finish through it.
type Retirer interface{ Retire() }

// Retire retires every checker of c that holds such resources.
func (c *Chain) Retire() {
	for _, list := range [2][]*Stage{c.Input, c.Output} {
		for _, st := range list {
			if r, ok := st.Checker.(Retirer); ok {
				r.Retire()
			}
		}
	}
}

// Compiled is what Compile returns per attached scope.
type Compiled map[resources.GuardrailScope]*Chain

// Compile builds one Chain per attached scope. Every guardrail is compiled
// once, whatever the number of scopes it is attached to. A kind's
// constructor error fails the whole compile with the entry and field
// named; a kind absent from t compiles to a checker that always fails
// (ErrKindNotBuilt), so its fail-open settings decide at run time.
func Compile(chains map[resources.GuardrailScope]*resources.GuardrailChain, t Table) (Compiled, error) {
	// One rank over every attached guardrail.
	var all []*resources.Guardrail
	seen := map[*resources.Guardrail]bool{}
	for _, ch := range chains {
		for _, list := range [2][]*resources.Guardrail{ch.Input, ch.Output} {
			for _, g := range list {
				if !seen[g] {
					seen[g] = true
					all = append(all, g)
				}
			}
		}
	}
	SortGuardrails(all)
	stages := make(map[*resources.Guardrail]*Stage, len(all))
	var errs []error
	for i, g := range all {
		st := &Stage{G: g, rank: i, latest: g.InputMessages == resources.InputMessagesLatestTurn,
			monitor: g.Monitor(), timeout: time.Duration(g.TimeoutMS) * time.Millisecond}
		if ctor := t[g.Kind]; ctor != nil {
			ck, err := ctor(g)
			if err != nil {
				errs = append(errs, errors.New("cannot compile guardrails["+strconv.Itoa(g.Index)+"] (name="+g.Name+"): "+err.Error()))
				continue
			}
			st.Checker = ck
		} else {
			st.Checker = notBuilt{}
		}
		if _, ok := st.Checker.(CallDeadlines); ok {
			st.timeout = 0
		}
		if c, ok := st.Checker.(Concurrent); ok && c.Concurrent() {
			st.conc = true
		}
		for a := HitAction(0); a < numHitActions; a++ {
			st.hits[a] = metrics.GetOrCreateCounter(`gw_guardrail_hits_total{guardrail="` + escapeLabel(g.Name) + `",action="` + a.String() + `"}`)
		}
		stages[g] = st
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := make(Compiled, len(chains))
	for scope, ch := range chains {
		c := &Chain{}
		for _, g := range ch.Input {
			if st := stages[g]; runs(st, Input) {
				c.Input = append(c.Input, st)
			}
		}
		for _, g := range ch.Output {
			if st := stages[g]; runs(st, Output) {
				c.Output = append(c.Output, st)
			}
		}
		if !c.Empty() {
			out[scope] = c
		}
	}
	return out, nil
}

// runs reports whether st judges phase p: a checker implementing Hooks
// may opt out of a phase (a custom script without checkOutput).
func runs(st *Stage, p Phase) bool {
	if h, ok := st.Checker.(Hooks); ok {
		return h.Runs(p)
	}
	return true
}

// SortGuardrails orders gs for evaluation: created_at earliest first,
// entries without it last, ties in file order (the loader's order).
func SortGuardrails(gs []*resources.Guardrail) {
	sort.SliceStable(gs, func(i, j int) bool {
		a, b := gs[i], gs[j]
		switch az, bz := a.CreatedAt.IsZero(), b.CreatedAt.IsZero(); {
		case az != bz:
			return bz
		case !az && !a.CreatedAt.Equal(b.CreatedAt):
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return a.Index < b.Index
	})
}

// Merge sets dst to the union of up to three scope chains (model alias,
// caller key, team) in evaluation order, a guardrail attached to several
// of them once. dst's slices are reused: no allocation once warm. It
// returns false when nothing runs, the common case, after one nil check
// per scope.
func Merge(dst *Chain, a, b, c *Chain) bool {
	dst.Input, dst.Output = dst.Input[:0], dst.Output[:0]
	n := 0
	var only *Chain
	for _, x := range [3]*Chain{a, b, c} {
		if x != nil {
			n++
			only = x
		}
	}
	switch n {
	case 0:
		return false
	case 1:
		// Fast path - one scope: its chain as is (read only).
		dst.Input = append(dst.Input, only.Input...)
		dst.Output = append(dst.Output, only.Output...)
		return true
	}
	dst.Input = mergeStages(dst.Input, a, b, c, Input)
	dst.Output = mergeStages(dst.Output, a, b, c, Output)
	return true
}

func mergeStages(dst []*Stage, a, b, c *Chain, p Phase) []*Stage {
	var lists [3][]*Stage
	for i, x := range [3]*Chain{a, b, c} {
		if x == nil {
			continue
		}
		if p == Input {
			lists[i] = x.Input
		} else {
			lists[i] = x.Output
		}
	}
	var pos [3]int
	last := -1
	for {
		best := -1
		for i := range lists {
			if pos[i] < len(lists[i]) && (best < 0 || lists[i][pos[i]].rank < lists[best][pos[best]].rank) {
				best = i
			}
		}
		if best < 0 {
			return dst
		}
		st := lists[best][pos[best]]
		pos[best]++
		if st.rank != last { // attached to several scopes: once
			dst = append(dst, st)
			last = st.rank
		}
	}
}

// escapeLabel escapes a Prometheus label value.
func escapeLabel(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\', '"':
			b = append(b, '\\', s[i])
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, s[i])
		}
	}
	return string(b)
}

// Compile implements the snapshot's guardrail compiler hook
// (snapshot.GuardrailCompiler) over this table.
func (t Table) Compile(chains map[resources.GuardrailScope]*resources.GuardrailChain) (map[resources.GuardrailScope]any, error) {
	c, err := Compile(chains, t)
	if err != nil {
		return nil, err
	}
	out := make(map[resources.GuardrailScope]any, len(c))
	for k, v := range c {
		out[k] = v
	}
	return out, nil
}

// Built reports whether kind has a constructor in t.
func (t Table) Built(kind string) bool { return t[kind] != nil }

// Of returns the chain a snapshot holds for a scope (nil when none).
func Of(v any) *Chain {
	c, _ := v.(*Chain)
	return c
}
