package edge

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/openai"
	"gw/adapters/upstream"
	"gw/admin/snapshot"
	"gw/edge/guard"
	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// buffered dispatches a non-streaming chat call through the plan's attempts:
// retries on the same target, then failover to the next, until one answers
// or every allowed attempt failed.
func (p *Proxy) buffered(ctx *fasthttp.RequestCtx, c *call) {
	var fail lastFailure
	it := p.newAttemptIter(c, ctx)
	for t, up := it.next(&fail); t != nil; t, up = it.next(&fail) {
		for try := 0; try <= t.Retries; try++ {
			req, client := p.buildRequest(ctx, c, t, up)
			if req == nil {
				if c.credentialFailed(t, &fail) {
					break // no credential for this target: the next one
				}
				return
			}
			resp := fasthttp.AcquireResponse()
			sent := time.Now()
			st := t.Plan.State
			if st != nil {
				st.Acquire() // in-flight count for least_busy
			}
			err := client.Do(req, resp, c.capTimeout(t.Timeout))
			if st != nil {
				st.Release()
			}
			took := time.Since(sent)
			c.upstreamDur += took
			fasthttp.ReleaseRequest(req)
			status := resp.StatusCode()
			if err == nil && status < 300 && !c.textAnswer() && !looksLikeObject(resp.Body()) {
				// A success gw cannot read is the upstream's failure, not
				// an answer to relay: retry and failover rules apply.
				fail = lastFailure{kind: kindInvalid, reason: "the upstream answered " + strconv.Itoa(status) + " with a body that is not JSON"}
				c.noteFailure(&fail)
				c.observe(t, &fail, 0)
				fasthttp.ReleaseResponse(resp)
				continue
			}
			if err == nil && status < 300 {
				c.upTTFT = took // a buffered answer's first byte came with the rest
				c.observe(t, nil, c.upTTFT)
				p.writeBuffered(ctx, c, resp, up)
				fasthttp.ReleaseResponse(resp)
				return
			}
			if err == nil && !retryable(c.dispatchPlan(), status) {
				c.observe(t, &lastFailure{kind: upstream.KindStatus, status: status, retryAfter: string(resp.Header.Peek("Retry-After"))}, 0)
				relayError(ctx, c.surf, status, resp.Body(), resp.Header.ContentType(), appendBackoff(nil, &resp.Header))
				fasthttp.ReleaseResponse(resp)
				c.errClass = "upstream_status"
				return
			}
			if err != nil {
				fail = p.transportFailure(c, t, err)
			} else {
				fail = lastFailure{kind: upstream.KindStatus, status: status, body: append(fail.body[:0], resp.Body()...),
					ctype: append(fail.ctype[:0], resp.Header.ContentType()...), retryAfter: string(resp.Header.Peek("Retry-After")),
					backoff: appendBackoff(fail.backoff[:0], &resp.Header)}
			}
			c.noteFailure(&fail)
			c.observe(t, &fail, 0)
			fasthttp.ReleaseResponse(resp)
		}
	}
	p.answerFailed(ctx, c, &it, &fail)
}

// writeBuffered relays a successful upstream answer with the alias in
// `model`, converted to the caller's surface when it is not chat.
func (p *Proxy) writeBuffered(ctx *fasthttp.RequestCtx, c *call, resp *fasthttp.Response, up *snapshot.Upstream) {
	if c.up != nil {
		p.writeUpload(ctx, c, resp) // upload.go
		return
	}
	body := resp.Body()
	bb := bodyBufPool.Get().(*[]byte)
	defer bodyBufPool.Put(bb)
	if c.native {
		// The upstream speaks the caller's format: only `model` changes
		// (an endpoint answer in the upstream's own format is first
		// converted by its adapter: endpoint_answer.go).
		var ok bool
		if body, ok = p.endpointAnswer(ctx, c, resp, up, body); !ok {
			return
		}
		if c.surf.nativeUsage != nil {
			c.usage, c.haveUsage = c.surf.nativeUsage(body)
		}
		if c.outputOn() && c.surf != surfCount { // output policy
			var ok bool
			if body, ok = p.guardAnswer(ctx, c, body, c.surf.guardNative); !ok {
				return
			}
		}
		if _, _, ok := rawjson.Get(body, "model"); ok { // count_tokens answers carry none
			*bb = openai.RewriteModel((*bb)[:0], body, c.plan.AliasJSON)
		} else {
			*bb = append((*bb)[:0], body...)
		}
		ctx.SetStatusCode(resp.StatusCode())
		ctx.SetContentType("application/json")
		c.respBytes = len(*bb)
		*bb = ctx.Response.SwapBody(*bb)[:0]
		c.ttfb = time.Since(c.start)
		return
	}
	if rf := openai.ReasoningField(up.Key.Response.ReasoningField); rf != "" && up.Protocol == "" {
		rb := bodyBufPool.Get().(*[]byte)
		defer bodyBufPool.Put(rb)
		if out, ok := openai.RenameReasoning((*rb)[:0], body, rf); ok {
			*rb, body = out, out // response.reasoning_field: reasoning where gw reads it
		}
	}
	if pr := protocolOf(up.Protocol); pr != nil {
		// An upstream of another protocol: its answer becomes a chat
		// completion first.
		cb := bodyBufPool.Get().(*[]byte)
		defer bodyBufPool.Put(cb)
		out, err := pr.toChat((*cb)[:0], body, c.plan.AliasBytes)
		if err != nil {
			c.surf.writeError(ctx, fasthttp.StatusBadGateway, "server_error", "bad_upstream_response", "cannot convert the upstream answer: "+err.Error())
			c.errClass = "conversion"
			return
		}
		*cb = out
		body = out
	}
	usageRead := false
	if c.outputOn() { // output policy, on the chat form of the answer
		usageRead = true
		if u, ok := openai.ExtractUsage(body); ok {
			c.usage, c.haveUsage = u, true // billed even when blocked
		}
		var ok bool
		if body, ok = p.guardAnswer(ctx, c, body, guard.ChatAnswer); !ok {
			return
		}
	}
	var judge adapters.Usage
	panel := false
	if c.ensembleAnswer() { // ensemble_usage.go: the answer's usage covers the panel
		eb := bodyBufPool.Get().(*[]byte)
		defer bodyBufPool.Put(eb)
		if out, own, ok := appendPanelUsage((*eb)[:0], body, &c.addUsage); ok {
			*eb, body, judge, panel = out, out, own, true
		}
	}
	if c.surf.fromChat != nil {
		out, u, err := c.surf.fromChat((*bb)[:0], body, c)
		if err != nil {
			c.surf.writeError(ctx, fasthttp.StatusBadGateway, "server_error", "bad_upstream_response", "cannot convert the upstream answer: "+err.Error())
			c.errClass = "conversion"
			return
		}
		*bb = out
		c.usage, c.haveUsage = chatUsage(u), true
		ctx.SetStatusCode(resp.StatusCode())
		ctx.SetContentType("application/json")
	} else {
		if usageRead || panel { // the usage is known: only model changes
			*bb = openai.RewriteModel((*bb)[:0], body, c.plan.AliasJSON)
		} else {
			out, u, ok := openai.RewriteModelUsage((*bb)[:0], body, c.plan.AliasJSON)
			if *bb = out; ok {
				c.usage, c.haveUsage = u, true
			}
		}
		ctx.SetStatusCode(resp.StatusCode())
		ctx.Response.Header.SetContentTypeBytes(resp.Header.ContentType())
	}
	if panel {
		c.usage, c.haveUsage = judge, true
	}
	// The answer was built in bb: it becomes the response body as it is
	// (the response's empty buffer goes back to the pool in its place)
	// instead of being copied once more.
	c.respBytes = len(*bb)
	*bb = ctx.Response.SwapBody(*bb)[:0]
	c.ttfb = time.Since(c.start)
}

// chatUsage converts a transcoder's usage record.
func chatUsage(u transcode.Usage) adapters.Usage {
	return adapters.Usage{Prompt: u.Prompt, Completion: u.Completion, Total: u.Total, Cached: u.Cached, Reasoning: u.Reasoning}
}

// messagesUsage reads the usage of an Anthropic message body in chat terms.
func messagesUsage(body []byte) (adapters.Usage, bool) {
	usage, kind, ok := rawjson.Get(body, "usage")
	if !ok || kind != rawjson.Object {
		return adapters.Usage{}, false
	}
	var u adapters.Usage
	addMessagesUsage(&u, usage)
	return u, true
}

// addMessagesUsage adds an Anthropic usage object's counts to u: prompt
// tokens include cache reads and writes; total is kept consistent.
func addMessagesUsage(u *adapters.Usage, usage []byte) {
	num := func(k string) int64 {
		v, kind, ok := rawjson.Get(usage, k)
		if !ok || kind != rawjson.Number {
			return 0
		}
		n, _ := rawjson.ParseInt(v)
		return n
	}
	if in := num("input_tokens"); in > 0 || u.Prompt == 0 {
		cached := num("cache_read_input_tokens")
		if in+cached+num("cache_creation_input_tokens") > 0 {
			u.Prompt = in + cached + num("cache_creation_input_tokens")
			u.Cached = cached
		}
	}
	if out := num("output_tokens"); out > 0 {
		u.Completion = out
	}
	u.Total = u.Prompt + u.Completion
}

// looksLikeObject reports whether an upstream success body is a JSON object
// as far as its first and last bytes tell. Every buffered answer gw relays
// is one; what upstreams send instead (an HTML error page from a proxy, an
// empty body, plain text) fails here at no cost. A body that passes but is
// malformed inside fails the conversion or reaches the caller as the
// upstream wrote it; a full validation would scan every byte of every
// answer on the hot path.
func looksLikeObject(b []byte) bool {
	i, j := 0, len(b)-1
	for i <= j && isSpace(b[i]) {
		i++
	}
	for j >= i && isSpace(b[j]) {
		j--
	}
	return i < j && b[i] == '{' && b[j] == '}'
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
