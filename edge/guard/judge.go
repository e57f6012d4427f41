package guard

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"gw/sse/rawjson"
)

// HitAction is what a guardrail hit did (enforced) or would have done
// (monitor), as recorded on the usage record and counted in
// gw_guardrail_hits_total.
type HitAction uint8

const (
	HitBlock                 HitAction = iota // block mode: content_filter
	HitMask                                   // block mode: texts rewritten
	HitBlockedFailClosed                      // the check could not complete; fail_open false
	HitBlockedBufferExceeded                  // a held stream passed max_buffer_bytes (fail closed)
	HitMaskUnsupported                        // a mask hit where the route cannot rewrite content
	HitWouldBlock                             // monitor: a block, or a failed check with fail_open false
	HitWouldMask                              // monitor: a mask
	HitWouldMaskUnsupported                   // monitor: a mask the route could not have applied
	numHitActions
)

var hitNames = [numHitActions]string{"block", "mask", "blocked_fail_closed", "blocked_buffer_exceeded",
	"mask_unsupported", "would_block", "would_mask", "would_mask_unsupported"}

func (a HitAction) String() string { return hitNames[a] }

// Bypass reasons (guardrail_bypassed_reason, gw_guardrail_bypasses_total{reason}).
const (
	BypassCheckFailed    = "check_failed"           // fail_open: the check could not complete
	BypassKindNotBuilt   = "kind_not_built"         // fail_open: the kind is not in this build
	BypassBufferExceeded = "output_buffer_exceeded" // on_buffer_exceeded: fail_open
	BypassUnsupported    = "unsupported_route"      // output_fail_open: the route cannot be judged (native streams)
	BypassUnreadable     = "unreadable_content"     // fail_open: a body or stream event that is not JSON
)

var (
	latencyIn   = metrics.NewHistogram(`gw_guardrail_latency_seconds{phase="input"}`)
	latencyOut  = metrics.NewHistogram(`gw_guardrail_latency_seconds{phase="output"}`)
	bypassTotal = map[string]*metrics.Counter{}
)

func init() {
	for _, r := range []string{BypassCheckFailed, BypassKindNotBuilt, BypassBufferExceeded, BypassUnsupported, BypassUnreadable} {
		bypassTotal[r] = metrics.NewCounter(`gw_guardrail_bypasses_total{reason="` + r + `"}`)
	}
}

// ObserveLatency records the time one phase's checks took.
func ObserveLatency(p Phase, d time.Duration) {
	if p == Input {
		latencyIn.Update(d.Seconds())
	} else {
		latencyOut.Update(d.Seconds())
	}
}

// Hit is one recorded guardrail hit. Never carries the matched value.
type Hit struct {
	Guardrail string `json:"guardrail"`
	Action    string `json:"action"`
}

// Outcome is a request's guardrail outcome for its usage record.
type Outcome struct {
	Applied           []string // guardrails that ran, each once
	Enforced          []Hit
	Monitor           []Hit
	BypassedReason    string // the first bypass
	BlockedFailClosed bool   // rejected because a guardrail could not evaluate
}

func (o *Outcome) reset() {
	o.Applied, o.Enforced, o.Monitor = o.Applied[:0], o.Enforced[:0], o.Monitor[:0]
	o.BypassedReason, o.BlockedFailClosed = "", false
}

func (o *Outcome) applied(name string) {
	for _, n := range o.Applied {
		if n == name {
			return
		}
	}
	o.Applied = append(o.Applied, name)
}

// hit records st's hit a once per (guardrail, action) and counts it.
func (o *Outcome) hit(st *Stage, a HitAction) {
	list := &o.Enforced
	if a >= HitWouldBlock {
		list = &o.Monitor
	}
	st.hits[a].Inc()
	name := a.String()
	for _, h := range *list {
		if h.Guardrail == st.G.Name && h.Action == name {
			return
		}
	}
	*list = append(*list, Hit{Guardrail: st.G.Name, Action: name})
}

// Bypass records a bypass with reason (counted every time, recorded once).
func (o *Outcome) Bypass(reason string) {
	if c := bypassTotal[reason]; c != nil {
		c.Inc()
	}
	if o.BypassedReason == "" {
		o.BypassedReason = reason
	}
}

// Decision is the engine's answer for one judged request, answer or window.
type Decision uint8

const (
	Pass        Decision = iota // nothing to do
	Masked                      // some texts were rewritten: Exec.Changed says which
	Blocked                     // a policy block: 422 content_filter (in-band after the commit point)
	Unavailable                 // a fail-closed guardrail could not evaluate: 422 guardrail_unavailable
)

// Exec is the per-request state of the engine: the merged chain, the
// texts being judged and the outcome. It lives in the request's pooled
// state and keeps its buffers' capacity between requests.
type Exec struct {
	Chain   Chain
	Outcome Outcome
	// Message is the text of a block safe to show the caller (a custom
	// script's reason), empty for the generic one.
	Message string
	// Err is the last check error and ErrGuardrail the guardrail that
	// returned it (for the operator's log; never matched values).
	Err          error
	ErrGuardrail string

	req     Request
	v       Verdict
	over    [][]byte // per text: the rewritten value
	changed []bool   // per text: rewritten
	fixed   []bool   // per text: cannot be rewritten (signed content)
	latest  []bool   // per text: in the latest turn (input_messages: latest_turn)
	sub     []Text   // the latest-turn view
	subReq  Request
	subIdx  []int
	// Concurrent groups (judgeGroup): per member verdict, error, request.
	gv   []Verdict
	gerr []error
	greq []*Request
}

// Reset clears e for a new request, keeping capacity.
func (e *Exec) Reset() {
	e.Chain.Input, e.Chain.Output = e.Chain.Input[:0], e.Chain.Output[:0]
	e.Outcome.reset()
	e.Message, e.Err, e.ErrGuardrail = "", nil, ""
	e.clearTexts()
}

func (e *Exec) clearTexts() {
	e.req.Texts = e.req.Texts[:0]
	e.changed, e.fixed, e.latest = e.changed[:0], e.fixed[:0], e.latest[:0]
}

// Texts are the texts being judged; Changed(i) tells which were rewritten.
func (e *Exec) Texts() []Text { return e.req.Texts }

// Changed reports whether text i was rewritten by a mask.
func (e *Exec) Changed(i int) bool { return e.changed[i] }

// Replace rewrites text i as a mask would (for callers that judge texts
// themselves, and tests).
func (e *Exec) Replace(i int, data []byte) {
	for len(e.over) < len(e.req.Texts) {
		e.over = append(e.over, nil)
	}
	e.over[i] = append(e.over[i][:0], data...)
	e.req.Texts[i].Data = e.over[i]
	e.changed[i] = true
}

// AddText appends one text to judge. fixed marks content the route cannot
// rewrite; latest marks texts of the latest turn.
func (e *Exec) AddText(t Text, fixed, latest bool) {
	e.req.Texts = append(e.req.Texts, t)
	e.changed = append(e.changed, false)
	e.fixed = append(e.fixed, fixed)
	e.latest = append(e.latest, latest)
}

// Judge runs stages (one phase of the merged chain) over the texts added
// since the last clear, in order: a block stops the chain, a mask rewrites
// the texts the next stages see, monitor stages only record, and a check
// that cannot complete is decided by the stage's fail-open setting
// (fail_open on input, output_fail_open on output; keyword and pii carry
// fail_open on both, resolved by the loader). ctx bounds the whole call;
// stages with timeout_ms get their own deadline (remote kinds: per call).
//
// Ordering rule: adjacent stages whose checkers are Concurrent (detection
// only, waiting on a backend) run at the same time, since none of them
// can change the texts another sees; their verdicts are then applied in
// chain order exactly as a sequential run would apply them: the first
// block or fail-closed error in chain order decides, and the stages after
// it are neither recorded as applied nor counted (their backends may still
// have been called). Any other stage is a barrier: it runs alone, after
// every stage before it and before every stage after it, so a rewrite is
// always seen by the stages that follow it.
func (e *Exec) Judge(ctx context.Context, p Phase, model string, stages []*Stage) Decision {
	if len(e.req.Texts) == 0 {
		for _, st := range stages {
			e.Outcome.applied(st.G.Name)
		}
		return Pass
	}
	start := time.Now()
	defer func() { ObserveLatency(p, time.Since(start)) }()
	for len(e.over) < len(e.req.Texts) {
		e.over = append(e.over, nil)
	}
	dec := Pass
	for i := 0; i < len(stages); {
		n := 1
		for n < len(stages)-i && stages[i].conc && stages[i+n].conc {
			n++
		}
		if n > 1 {
			if d := e.judgeGroup(ctx, p, model, stages[i:i+n]); d == Blocked || d == Unavailable {
				return d
			} else if d == Masked {
				dec = Masked
			}
			i += n
			continue
		}
		st := stages[i]
		i++
		e.Outcome.applied(st.G.Name)
		req, view := e.request(p, st)
		if req == nil {
			continue
		}
		req.Phase, req.Model = p, model
		e.v.Reset()
		switch d := e.apply(st, p, check(ctx, st, req, &e.v), &e.v, view); d {
		case Blocked, Unavailable:
			return d
		case Masked:
			dec = Masked
		}
	}
	return dec
}

// request returns what st judges: every text, or for an input stage with
// input_messages latest_turn the latest turn's non-system texts (nil when
// there are none: the stage has nothing to judge). view reports the
// latter (mask indexes are then into the view).
func (e *Exec) request(p Phase, st *Stage) (req *Request, view bool) {
	if p != Input || !st.latest {
		return &e.req, false
	}
	e.sub, e.subIdx = e.sub[:0], e.subIdx[:0]
	for i, t := range e.req.Texts {
		if e.latest[i] && t.Role != RoleSystem {
			e.sub = append(e.sub, t)
			e.subIdx = append(e.subIdx, i)
		}
	}
	if len(e.sub) == 0 {
		return nil, true
	}
	e.subReq.Texts = e.sub
	return &e.subReq, true
}

// judgeGroup runs adjacent Concurrent stages at once and applies their
// verdicts in chain order (see Judge's ordering rule).
func (e *Exec) judgeGroup(ctx context.Context, p Phase, model string, stages []*Stage) Decision {
	n := len(stages)
	for len(e.gv) < n {
		e.gv = append(e.gv, Verdict{})
	}
	e.gerr, e.greq = e.gerr[:0], e.greq[:0]
	// The texts do not change inside the group, so every latest_turn stage
	// sees the same view: build it once, in e.subReq.
	var latest *Request
	for _, st := range stages {
		var req *Request
		if p == Input && st.latest {
			if latest == nil {
				latest, _ = e.request(p, st)
				if latest == nil {
					latest = &noTexts
				}
			}
			req = latest
		} else {
			req = &e.req
		}
		if req != &noTexts {
			req.Phase, req.Model = p, model
		}
		e.gerr = append(e.gerr, nil)
		e.greq = append(e.greq, req)
	}
	var wg sync.WaitGroup
	for k := 1; k < n; k++ {
		if e.greq[k] == &noTexts {
			continue
		}
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			e.gv[k].Reset()
			e.gerr[k] = check(ctx, stages[k], e.greq[k], &e.gv[k])
		}(k)
	}
	if e.greq[0] != &noTexts {
		e.gv[0].Reset()
		e.gerr[0] = check(ctx, stages[0], e.greq[0], &e.gv[0])
	}
	wg.Wait()
	dec := Pass
	for k, st := range stages {
		e.Outcome.applied(st.G.Name)
		if e.greq[k] == &noTexts {
			continue
		}
		switch d := e.apply(st, p, e.gerr[k], &e.gv[k], e.greq[k] != &e.req); d {
		case Blocked, Unavailable:
			return d
		case Masked:
			dec = Masked
		}
	}
	return dec
}

// noTexts marks a group member with nothing to judge.
var noTexts Request

// apply records st's result (err, or the verdict v) and returns Blocked or
// Unavailable when it stops the chain, Masked when it rewrote texts.
func (e *Exec) apply(st *Stage, p Phase, err error, v *Verdict, view bool) Decision {
	if err != nil && errors.Is(err, ErrReleased) { // released.go: passes whatever fail_open says
		e.Outcome.Bypass(BypassTimedRelease)
		return Pass
	}
	if err != nil {
		e.Err, e.ErrGuardrail = err, st.G.Name
		failOpen := st.G.FailOpen
		if p == Output {
			failOpen = st.G.OutputFailOpen
		}
		reason := BypassCheckFailed
		if errors.Is(err, ErrKindNotBuilt) {
			reason = BypassKindNotBuilt
		}
		switch {
		case failOpen:
			e.Outcome.Bypass(reason)
		case st.monitor: // monitor: a failure always passes; fail_open false records would_block
			e.Outcome.hit(st, HitWouldBlock)
		default:
			e.Outcome.hit(st, HitBlockedFailClosed)
			e.Outcome.BlockedFailClosed = true
			return Unavailable
		}
		return Pass
	}
	switch v.Action {
	case Block:
		if st.monitor {
			e.Outcome.hit(st, HitWouldBlock)
			return Pass
		}
		e.Outcome.hit(st, HitBlock)
		e.Message = v.Message
		return Blocked
	case Rewrite:
		unsupported, applied := false, false
		for _, m := range v.Masks {
			i := m.Index
			if view {
				if i < 0 || i >= len(e.subIdx) {
					continue
				}
				i = e.subIdx[i]
			}
			if i < 0 || i >= len(e.req.Texts) {
				continue // a checker's bug must not crash the request
			}
			if e.fixed[i] {
				unsupported = true
				continue
			}
			if st.monitor {
				continue
			}
			e.over[i] = append(e.over[i][:0], m.Data...)
			e.req.Texts[i].Data = e.over[i]
			e.changed[i] = true
			applied = true
		}
		switch {
		case st.monitor && unsupported:
			e.Outcome.hit(st, HitWouldMaskUnsupported)
		case st.monitor:
			e.Outcome.hit(st, HitWouldMask)
		default:
			if unsupported {
				e.Outcome.hit(st, HitMaskUnsupported)
			}
			if applied {
				e.Outcome.hit(st, HitMask)
				return Masked
			}
		}
	}
	return Pass
}

// Unreadable applies the fail-open rules of stages to content the engine
// cannot read (a body or a stream event that is not JSON): for each stage
// it is a check that could not complete, so a fail-closed stage rejects
// (Unavailable) and the others pass it with a bypass (monitor: would_block)
// recorded. Such content is never passed unjudged in silence.
func (e *Exec) Unreadable(p Phase, stages []*Stage) Decision {
	for _, st := range stages {
		e.Outcome.applied(st.G.Name)
		failOpen := st.G.FailOpen
		if p == Output {
			failOpen = st.G.OutputFailOpen
		}
		switch {
		case failOpen:
			e.Outcome.Bypass(BypassUnreadable)
		case st.monitor:
			e.Outcome.hit(st, HitWouldBlock)
		default:
			e.Outcome.hit(st, HitBlockedFailClosed)
			e.Outcome.BlockedFailClosed = true
			return Unavailable
		}
	}
	return Pass
}

// unreadable reports a stream event whose data is not JSON, or holds two
// spellings of one name in an object ("content" and "Content": a Go client
// reads the last, others the exact one, so no single reading can be
// judged). Empty data (an SSE keep-alive) carries nothing and is not
// unreadable.
func unreadable(data []byte) bool {
	if len(bytes.TrimSpace(data)) == 0 {
		return false
	}
	valid, folded := rawjson.ValidNames(data)
	return !valid || folded != nil
}

// check runs one checker, with the stage's own deadline when it has one.
func check(ctx context.Context, st *Stage, req *Request, v *Verdict) error {
	if st.timeout > 0 {
		cctx, cancel := context.WithTimeout(ctx, st.timeout)
		defer cancel()
		return st.Checker.Check(cctx, req, v)
	}
	return st.Checker.Check(ctx, req, v)
}

// ClearTexts drops the texts added so far, keeping the outcome: a caller
// that judges the request and then the answer of one call with the same
// Exec (passthrough routes) starts the answer's texts afresh.
func (e *Exec) ClearTexts() { e.clearTexts() }
