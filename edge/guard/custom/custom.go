// Package custom is the `custom` guardrail kind: an operator's ES module
// exporting checkInput and/or checkOutput, run in an embedded QuickJS
// (modernc.org/quickjs, pure Go) with timeout_ms enforced over the whole
// hook call and max_memory_bytes over the runtime's heap. The result
// contract is documented in docs/GUARDRAILS_CUSTOM.md.
package custom

import (
	"context"
	"errors"
	"io"
	"runtime"
	"sort"
	"strings"
	"time"

	"gw/admin/resources"
	"gw/edge/guard"
)

// Interface guards.
var (
	_ guard.Checker = (*Checker)(nil)
	_ guard.Hooks   = (*Checker)(nil)
	_ io.Closer     = (*Checker)(nil)
)

// Checker runs one custom guardrail's script. It is safe for concurrent
// use: each call borrows a warm runtime from the guardrail's pool.
type Checker struct {
	name    string
	timeout time.Duration
	hooks   [2]bool
	secrets []string // values only, for scrubbing
	pool    *pool
}

// New compiles and evaluates g's module once, in the first runtime of the
// pool, so a syntax error, a module that exports neither hook, a hook that
// is not a function, or a top-level that throws, loops or runs out of
// memory is a load error here. The error never carries a secret's value.
//
// The result is a *Checker, which also implements guard.Hooks and
// io.Closer. Its runtimes live outside the Go heap: call Close when the
// snapshot that holds it is retired (a cleanup closes them anyway once the
// Checker is unreachable).
func New(g *resources.Guardrail) (guard.Checker, error) {
	opts, ok := g.Options.(*resources.CustomScriptOptions)
	if !ok || opts == nil {
		return nil, errors.New("cannot build custom guardrail \"" + g.Name + "\": options are not custom script options")
	}
	timeout := time.Duration(g.TimeoutMS) * time.Millisecond
	if g.TimeoutMS <= 0 {
		timeout = time.Duration(resources.DefaultGuardrailTimeoutMS) * time.Millisecond
	}
	mem := opts.MaxMemoryBytes
	if mem <= 0 {
		mem = resources.DefaultCustomMaxMemoryBytes
	}
	cfg := &config{name: g.Name, source: opts.Script, memory: uintptr(mem), timeout: timeout}
	names := make([]string, 0, len(opts.Secrets))
	for k := range opts.Secrets {
		names = append(names, k)
	}
	sort.Strings(names)
	c := &Checker{name: g.Name, timeout: timeout}
	for _, k := range names {
		v := opts.Secrets[k].Reveal()
		cfg.secrets = append(cfg.secrets, k, v)
		if v != "" {
			c.secrets = append(c.secrets, v)
		}
	}
	first, err := newRuntime(cfg, time.Now().Add(timeout))
	if err != nil {
		return nil, err
	}
	c.hooks = first.hooks
	c.pool = newPool(cfg, PoolSize(), first)
	runtime.AddCleanup(c, func(p *pool) { p.close() }, c.pool)
	return c, nil
}

// PoolSize is the most runtimes one guardrail keeps: two per P, so every
// core can run a hook while another call's runtime is being replaced.
func PoolSize() int { return max(2, 2*runtime.GOMAXPROCS(0)) }

// Runs reports whether the module exports the hook of phase p.
func (c *Checker) Runs(p guard.Phase) bool { return int(p) < len(c.hooks) && c.hooks[p] }

// Check runs the hook of req.Phase on req.Texts. timeout_ms bounds the
// whole call, from waiting for a runtime to reading the result; ctx may
// shorten it or cancel it. A runtime that was stopped (timeout, memory,
// cancel) is discarded and a fresh one started in the background.
func (c *Checker) Check(ctx context.Context, req *guard.Request, v *guard.Verdict) error {
	if !c.Runs(req.Phase) {
		return nil // no hook for this phase: nothing to judge
	}
	deadline := time.Now().Add(c.timeout)
	ctxFirst := false
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, ctxFirst = d, true
	}
	r, err := c.pool.get(ctx, deadline)
	if err != nil {
		return c.fail(ctx, ctxFirst, err)
	}
	var enc string
	var broken bool
	if ctx.Done() == nil {
		enc, broken, err = r.call(req.Phase, req.Model, req.Texts, deadline)
	} else {
		enc, broken, err = c.callCancellable(ctx, r, req, deadline)
	}
	c.pool.put(r, broken)
	if err != nil {
		return c.fail(ctx, ctxFirst, err)
	}
	if e := DecodeResult(enc, req.Texts, v); e != nil {
		return c.fail(ctx, ctxFirst, e)
	}
	if v.Action == guard.Block && len(c.secrets) > 0 {
		v.Message = scrub(v.Message, c.secrets)
		if scrub(v.Rule, c.secrets) != v.Rule {
			v.Rule = DefaultRule // a rule is a label: no partial redaction
		}
	}
	return nil
}

// callCancellable is call with the caller's context able to stop the
// script at once. The interrupt must not outlive the call: a late one would
// stop the next request that borrows this runtime, so a fired interrupt is
// waited for before the runtime goes back to the pool.
func (c *Checker) callCancellable(ctx context.Context, r *jsRuntime, req *guard.Request, deadline time.Time) (string, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		r.vm.Interrupt()
		r.dog.poke()
		close(fired)
	})
	enc, broken, err := r.call(req.Phase, req.Model, req.Texts, deadline)
	if !stop() {
		<-fired
	}
	return enc, broken, err
}

// fail names the guardrail in err. A stop caused by the caller's context
// (cancelled, or its deadline came before timeout_ms) reports the
// context's error rather than a timeout of the script.
func (c *Checker) fail(ctx context.Context, ctxFirst bool, err error) error {
	e := &Error{Err: err}
	var se *Error
	if errors.As(err, &se) {
		cp := *se
		e = &cp
	}
	e.Guardrail = c.name
	if e.Err == ErrTimeout {
		if ctx.Err() != nil {
			e.Err = ctx.Err()
		} else if ctxFirst {
			e.Err = context.DeadlineExceeded
		}
	}
	return e
}

// Close releases the guardrail's runtimes. Calls in flight finish; later
// calls fail with ErrClosed.
func (c *Checker) Close() error {
	c.pool.close()
	return nil
}

// Retire frees the warm runtimes: the snapshot that compiled c was
// replaced. Calls still made through c work, each on a runtime of its own
// (a cold start), and keep nothing afterwards.
func (c *Checker) Retire() { c.pool.retire() }

// Started reports how many runtimes the checker has started (the first in
// New included): a figure for tests and metrics of pool churn.
func (c *Checker) Started() int64 { return c.pool.started.Load() }

// scrub replaces secret values in s: a script may put one in a block
// reason, which the caller would see.
func scrub(s string, secrets []string) string {
	for _, v := range secrets {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, "[REDACTED]")
		}
	}
	return s
}
