package edge

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/admin/snapshot"
	"gw/edge/usage"
	"gw/sse/rawjson"
)

// Ensemble models (spec "Ensemble model"; docs/ROUTING.md#ensemble).
//
// The request passes authenticate, read, plan, limits and the input policy
// once, as for any alias. At the dispatch stage every panel member gets
// its own buffered chat call, all at once: the caller's chat body (its
// conversion on Messages and Responses, masks applied) with `stream`
// false and the member's temperature/seed, dispatched by buffered — the
// same attempts, retries, cooldown and adapters as a chat request to the
// member's alias — on a private request context, so nothing reaches the
// caller. Each member call, and then the judge call, is bounded by
// ensemble.timeout_ms (call.deadline caps every attempt's timeout).
//
// When every member has answered or failed, and at least min_responses
// answered, the judge is dispatched on the caller's own call and context:
// c.plan stays the ensemble alias (the answer's `model`, the usage
// record's `model`), c.route is the judge's plan (the attempts). The
// judge therefore answers buffered or streamed in the caller's wire
// format, and the output policy judges its answer — the final answer —
// as it would any answer. Members never see output guardrails.
//
// Accounting: a member that failed adds its zero-token failed_attempt
// records (one per attempt, as a routing failover does) to the request;
// the members that answered add their tokens and cost (each at its own
// model's price) to the final record, whose target_model is the judge.
// Token limits settle with that sum; request windows and concurrency are
// charged once, for the caller's request (member calls are not separate
// caller requests, and members' own rate_limit blocks are not charged).

// hdrEnsembleMembers names the members whose answers the judge got, in
// panel order, comma-separated.
var hdrEnsembleMembers = []byte("x-gw-ensemble-members")

// defaultSynthesisPrompt is the judge's system prompt unless
// ensemble.judge.synthesis_prompt replaces it.
const defaultSynthesisPrompt = "You are the judge of a panel of AI assistants. The conversation below ends with " +
	"candidate answers to its last request, written independently by different assistants. Write the single best " +
	"answer to that request: keep what the candidates agree on, settle their disagreements by reasoning about " +
	"which is correct, fix their mistakes, and keep useful details only one of them noticed. Answer the user " +
	"directly, as if you wrote the answer yourself; do not mention the candidates, the panel or these instructions."

// errNoMessages: a chat body without messages (the read stage rejects
// those, so the judge never meets one).
var errNoMessages = errors.New("edge: the chat body has no messages array")

// ensembleServable is the plan stage's check for an ensemble alias: only
// chat-shaped surfaces can be answered by a panel, and count_tokens gets
// gw's own estimate (no member is asked).
func (p *Proxy) ensembleServable(ctx *fasthttp.RequestCtx, c *call) bool {
	switch {
	case !c.plan.Servable:
		c.surf.writeError(ctx, fasthttp.StatusNotImplemented, "invalid_request_error", "not_implemented",
			"the judge or too few panel members of ensemble model `"+c.plan.Alias+"` can be served by this build")
		return false
	case c.surf == surfCount:
		p.countLocally(ctx, c)
		return false
	case c.surf.endpoint != adapters.EndpointNone:
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "unsupported_model",
			"ensemble model `"+c.plan.Alias+"` serves chat completions, Messages and Responses only")
		return false
	case c.convErr != "":
		// A body without a chat form (a native-only feature) cannot be
		// given to a panel.
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_request", c.convErr)
		return false
	}
	return true
}

// member is one panel member's call and outcome. Pooled with its run.
type member struct {
	ctx      fasthttp.RequestCtx // private: the member's answer lands here
	body     []byte              // the member's chat body
	scratch  [2][]byte           // memberBody's edits
	text     []byte              // the answer's text
	ok       bool
	usage    adapters.Usage
	cost     float64
	status   int
	msg      string // why it failed (fixed phrases, no upstream text)
	failures [maxRecordedFailures]failedAttempt
	nFail    int
	mc       *call
}

// ensembleRun is the per-request state of an ensemble dispatch. Pooled.
type ensembleRun struct {
	members []member
	wg      sync.WaitGroup
	judge   []byte    // the judge's chat body
	jtmp    [2][]byte // judgeBody's scratch
	hdr     []byte    // x-gw-ensemble-members
}

var ensemblePool = sync.Pool{New: func() any { return new(ensembleRun) }}

func acquireEnsembleRun(n int) *ensembleRun {
	r := ensemblePool.Get().(*ensembleRun)
	if cap(r.members) < n {
		r.members = make([]member, n)
	}
	r.members = r.members[:n]
	return r
}

func releaseEnsembleRun(r *ensembleRun) {
	for i := range r.members {
		m := &r.members[i]
		m.ctx.Request.Reset()
		m.ctx.Response.Reset()
		m.body, m.text = m.body[:0], m.text[:0]
		m.ok, m.usage, m.cost, m.status, m.msg, m.nFail, m.mc = false, adapters.Usage{}, 0, 0, "", 0, nil
	}
	r.judge, r.hdr = r.judge[:0], r.hdr[:0]
	ensemblePool.Put(r)
}

// ensemble is the dispatch stage of an ensemble alias: the members, then
// the judge (see the file comment).
func (p *Proxy) ensemble(ctx *fasthttp.RequestCtx, c *call) {
	ep := c.plan.Ensemble
	r := acquireEnsembleRun(len(ep.Members))
	defer releaseEnsembleRun(r)
	var deadline time.Time
	if ep.Timeout > 0 {
		deadline = time.Now().Add(ep.Timeout)
	}
	sent := time.Now()
	for i := range r.members {
		m := &r.members[i]
		// Each member reads its own copy of the caller's headers (for
		// forward_client_headers): the caller's are not read concurrently.
		ctx.Request.Header.CopyTo(&m.ctx.Request.Header)
		m.mc = p.memberCall(c, &ep.Members[i], m, deadline)
		r.wg.Add(1)
		go p.runMember(m, &r.wg)
	}
	r.wg.Wait()
	c.upstreamDur += time.Since(sent)

	answered := 0
	for i := range r.members {
		m := &r.members[i]
		p.collectMember(c, &ep.Members[i], m)
		if m.ok {
			answered++
		}
	}
	// event_id is <request_id>.<attempt>: the final record's attempt
	// number follows every member failure record's.
	c.attempts = max(c.attempts, c.nFailures)
	c.memberFs = c.nFailures // a member's failure is never the final record
	r.hdr = appendMemberNames(r.hdr[:0], ep, r.members)
	if answered < ep.MinResponses {
		c.attempts++
		p.ensembleFailed(ctx, c, r, answered)
		if len(r.hdr) > 0 {
			ctx.Response.Header.SetBytesKV(hdrEnsembleMembers, r.hdr)
		}
		return
	}
	ctx.Response.Header.SetBytesKV(hdrEnsembleMembers, r.hdr)

	body, err := judgeBody(r.judge[:0], &r.jtmp, c.body, ep.Prompt, r.members)
	if err != nil {
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_json", "the request body must be a JSON object")
		return
	}
	r.judge = body
	// The judge runs on the caller's call: c.plan names the answer,
	// c.route walks the judge's attempts. r.judge goes back to the pool
	// on return: c.body is the caller's again then (nothing reads it
	// after the upstream request is built, a committed stream neither).
	callerBody := c.body
	defer func() { c.body, c.in.Body = callerBody, nil }()
	c.route, c.chatOnly, c.body, c.in.Body = ep.Judge, true, body, body
	c.deadline = time.Time{}
	if ep.Timeout > 0 {
		c.deadline = time.Now().Add(ep.Timeout)
	}
	if c.cr.Stream {
		p.stream(ctx, c)
	} else {
		p.buffered(ctx, c)
	}
	if !c.committed {
		// An error answer resets the response: keep the header on it.
		ctx.Response.Header.SetBytesKV(hdrEnsembleMembers, r.hdr)
	}
}

// memberCall prepares the member's own call: the caller's identity and
// address, the member's plan, its body, the deadline.
func (p *Proxy) memberCall(c *call, em *snapshot.EnsembleMember, m *member, deadline time.Time) *call {
	mc := acquireCall()
	mc.surf, mc.start, mc.snap, mc.caller, mc.plan = surfChat, time.Now(), c.snap, c.caller, em.Plan
	mc.ip, mc.ipOK, mc.deadline, mc.chatOnly = c.ip, c.ipOK, deadline, true
	m.body = memberBody(m.body[:0], &m.scratch, c.body, em)
	mc.body = m.body
	mc.cr.Model = append(mc.cr.modelBuf[:0], em.Plan.Alias...)
	mc.in.Body = m.body
	mc.in.ClientHeaders = &m.ctx.Request.Header
	mc.in.CallerCredential = c.in.CallerCredential // the same request's headers
	fillVars(&mc.in.Vars, c.caller.Key, em.Plan.Alias)
	return mc
}

// runMember dispatches one member call (its own goroutine).
func (p *Proxy) runMember(m *member, wg *sync.WaitGroup) {
	defer wg.Done()
	p.buffered(&m.ctx, m.mc)
}

// collectMember reads a finished member call into m and the caller's
// call: its answer text and usage, or its failure records. It runs after
// every member finished, on the caller's goroutine.
func (p *Proxy) collectMember(c *call, em *snapshot.EnsembleMember, m *member) {
	mc := m.mc
	defer releaseCall(mc)
	m.status = m.ctx.Response.StatusCode()
	answered := m.status == fasthttp.StatusOK
	if answered {
		if text, ok := answerText(m.text[:0], m.ctx.Response.Body()); ok {
			m.text, m.ok = text, true
		} else {
			// Only tool calls, or an empty text: nothing for the judge,
			// but the tokens were generated and are billed below.
			m.msg = "the answer has no text"
			m.status = fasthttp.StatusBadGateway
			mc.errClass = "empty_answer"
		}
	}
	if answered {
		u := mc.usage
		if u.Total == 0 {
			u.Total = u.Prompt + u.Completion
		}
		m.usage = u
		if t := mc.target; mc.haveUsage && t != nil && t.Model.Cost != nil {
			m.cost = usage.Cost(u.Prompt, u.Completion, u.Reasoning, u.Total, t.Model.Cost.InputPer1K, t.Model.Cost.OutputPer1K)
		}
		a := &c.addUsage
		a.Prompt, a.Completion, a.Reasoning, a.Cached, a.Total = a.Prompt+u.Prompt, a.Completion+u.Completion, a.Reasoning+u.Reasoning, a.Cached+u.Cached, a.Total+u.Total
		c.addCost += m.cost
	}
	// Every failed attempt of the member, and its final failure when no
	// attempt record says it already (a non-retryable status, a member
	// that answered without text, the deadline before any attempt),
	// becomes a zero-token record of the caller's request.
	c.attempts += mc.attempts
	n := mc.nFailures
	for i := 0; i < n; i++ {
		c.addFailure(mc.failures[i])
	}
	if m.ok {
		return
	}
	last := failedAttempt{at: time.Now(), target: em.Plan, status: m.status, class: mc.errClass, msg: m.msg}
	if mc.target != nil {
		last.target = mc.target
	}
	if n > 0 && mc.failures[n-1].status == m.status && m.msg == "" {
		last = mc.failures[n-1] // the last attempt's record is the member's outcome
	} else {
		if last.class == "" {
			last.class = "upstream_status"
		}
		c.addFailure(last)
	}
	if m.msg == "" {
		m.msg = last.msg
		if m.msg == "" {
			m.msg = "upstream returned " + strconv.Itoa(m.status)
		}
	}
}

// addFailure records a member's failed attempt on the caller's call.
func (c *call) addFailure(f failedAttempt) {
	if c.nFailures < len(c.failures) {
		c.failures[c.nFailures] = f
		c.nFailures++
	}
}

// ensembleFailed answers 502 when fewer than min_responses members
// answered, naming each member's failure (gw's fixed phrases and upstream
// statuses, never upstream bodies or credentials).
func (p *Proxy) ensembleFailed(ctx *fasthttp.RequestCtx, c *call, r *ensembleRun, answered int) {
	ep := c.plan.Ensemble
	b := make([]byte, 0, 160)
	b = append(b, "ensemble model `"...)
	b = append(b, c.plan.Alias...)
	b = append(b, "`: "...)
	b = strconv.AppendInt(b, int64(answered), 10)
	b = append(b, " of "...)
	b = strconv.AppendInt(b, int64(len(ep.Members)), 10)
	b = append(b, " panel members answered, "...)
	b = strconv.AppendInt(b, int64(ep.MinResponses), 10)
	b = append(b, " required"...)
	sep := byte(':')
	for i := range r.members {
		m := &r.members[i]
		if m.ok {
			continue
		}
		b = append(b, sep, ' ')
		sep = ';'
		b = append(b, ep.Members[i].Plan.Alias...)
		b = append(b, ": "...)
		b = append(b, m.msg...)
	}
	c.target = nil // the final record is the ensemble's, not a member's
	c.errClass = "ensemble_insufficient_responses"
	c.surf.writeError(ctx, fasthttp.StatusBadGateway, "server_error", "ensemble_insufficient_responses", string(b))
}

// memberBody appends the member's chat body: the caller's, buffered
// (stream and stream_options removed), with the member's temperature and
// seed when the panel entry sets them. Each edit copies into one of the
// two scratch buffers, which are kept for the next request.
func memberBody(dst []byte, scratch *[2][]byte, body []byte, em *snapshot.EnsembleMember) []byte {
	cur, step := body, 0
	apply := func(out []byte, err error) {
		if err == nil {
			scratch[step&1], cur = out, out
			step++
		}
	}
	if _, _, ok := rawjson.Get(body, "stream"); ok {
		apply(rawjson.Delete(scratch[step&1][:0], cur, "stream"))
	}
	if _, _, ok := rawjson.Get(body, "stream_options"); ok {
		apply(rawjson.Delete(scratch[step&1][:0], cur, "stream_options"))
	}
	if em.Temperature != nil {
		apply(rawjson.Set(scratch[step&1][:0], cur, "temperature", em.Temperature))
	}
	if em.Seed != nil {
		apply(rawjson.Set(scratch[step&1][:0], cur, "seed", em.Seed))
	}
	return append(dst, cur...)
}

// answerText appends the text of a chat completion's first choice.
func answerText(dst, body []byte) ([]byte, bool) {
	choices, kind, ok := rawjson.Get(body, "choices")
	if !ok || kind != rawjson.Array {
		return dst, false
	}
	found := false
	_ = rawjson.ForEachElem(choices, func(_ int, ch []byte, k rawjson.Kind) bool {
		if k != rawjson.Object {
			return true
		}
		content, ck, ok := rawjson.GetPath(ch, "message", "content")
		if !ok || ck != rawjson.String {
			return false
		}
		if out, err := rawjson.AppendUnquote(dst, content); err == nil && len(out) > len(dst) {
			dst, found = out, true
		}
		return false
	})
	return dst, found
}

// judgeBody appends the judge's chat body: the caller's chat body (its
// parameters and stream settings kept) whose messages are the synthesis
// prompt as a system message, the caller's conversation, and a last user
// message holding the members' answers.
// scratch holds the messages and the answers text between requests.
func judgeBody(dst []byte, scratch *[2][]byte, body []byte, prompt string, members []member) ([]byte, error) {
	msgs, kind, ok := rawjson.Get(body, "messages")
	if !ok || kind != rawjson.Array {
		return dst, errNoMessages
	}
	if prompt == "" {
		prompt = defaultSynthesisPrompt
	}
	mb := append(scratch[0][:0], `[{"role":"system","content":`...)
	mb = rawjson.AppendQuote(mb, prompt)
	mb = append(mb, '}')
	inner := trimArray(msgs)
	if len(inner) > 0 {
		mb = append(mb, ',')
		mb = append(mb, inner...)
	}
	mb = append(mb, `,{"role":"user","content":`...)
	text := append(scratch[1][:0], "Candidate answers to the last request:"...)
	n := 0
	for i := range members {
		m := &members[i]
		if !m.ok {
			continue
		}
		n++
		text = append(text, "\n\n### Answer "...)
		text = strconv.AppendInt(text, int64(n), 10)
		text = append(text, "\n\n"...)
		text = append(text, m.text...)
	}
	mb = rawjson.AppendQuoteBytes(mb, text)
	mb = append(mb, "}]"...)
	scratch[0], scratch[1] = mb, text
	return rawjson.Set(dst, body, "messages", mb)
}

// trimArray returns the elements of a JSON array literal without its
// brackets (and surrounding space).
func trimArray(arr []byte) []byte {
	i, j := 0, len(arr)
	for i < j && arr[i] != '[' {
		i++
	}
	for j > i && arr[j-1] != ']' {
		j--
	}
	if j-i < 2 {
		return nil
	}
	in := arr[i+1 : j-1]
	for len(in) > 0 && isSpace(in[0]) {
		in = in[1:]
	}
	for len(in) > 0 && isSpace(in[len(in)-1]) {
		in = in[:len(in)-1]
	}
	return in
}

// appendMemberNames appends the aliases of the members that answered.
func appendMemberNames(dst []byte, ep *snapshot.EnsemblePlan, members []member) []byte {
	for i := range members {
		if !members[i].ok {
			continue
		}
		if len(dst) > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, ep.Members[i].Plan.Alias...)
	}
	return dst
}

// dispatchPlan is the plan whose attempts dispatch walks: the judge of an
// ensemble alias, otherwise the alias itself.
func (c *call) dispatchPlan() *snapshot.Plan {
	if c.route != nil {
		return c.route
	}
	return c.plan
}

// pastDeadline reports whether an ensemble call's deadline has passed.
func (c *call) pastDeadline() bool {
	return !c.deadline.IsZero() && !time.Now().Before(c.deadline)
}

// capTimeout bounds an attempt's timeout (0: none) by the call's
// deadline; a deadline always applies, at least 1 ns, so a spent one
// times the attempt out instead of disabling its timeout.
func (c *call) capTimeout(d time.Duration) time.Duration {
	if c.deadline.IsZero() {
		return d
	}
	left := max(time.Until(c.deadline), time.Nanosecond)
	if d == 0 || left < d {
		return left
	}
	return d
}

// readDeadline is the read deadline of a stream before its commit point:
// the gap timeout, bounded by the call's deadline (zero: none).
func (c *call) readDeadline(gap time.Duration) time.Time {
	var dl time.Time
	if gap > 0 {
		dl = time.Now().Add(gap)
	}
	if !c.deadline.IsZero() && (dl.IsZero() || c.deadline.Before(dl)) {
		dl = c.deadline
	}
	return dl
}
