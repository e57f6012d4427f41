package edge

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/openai"
	"gw/adapters/upstream"
	"gw/edge/guard"
	"gw/sse"
	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// relayState is the per-stream state of a relayed chat stream. Pooled.
type relayState struct {
	p        *Proxy
	c        *call
	corker   corker // the caller's connection, when it can hold the last batch (flushLast)
	reqBytes int
	wrote    bool   // WriteTo ran (see CloseWithError)
	wbuf     []byte // events waiting for one chunked write

	// Write coalescing (see relay): w is WriteTo's writer; hooked is set
	// while the upstream connection's idle hook (idleFn, s.idle bound once)
	// flushes wbuf; gone once a write to the caller failed.
	w      io.Writer
	idleFn func() bool
	hooked bool
	gone   bool

	rd      eventSource // the upstream's events (SSE unless proto says otherwise)
	proto   *upProtocol // the upstream's protocol; nil: chat completions
	resp    *fasthttp.Response
	pending []byte // events read before the commit point, already rewritten
	out     []byte // one outgoing event
	tmp     []byte // scratch for the usage-field removal
	panel   []byte // scratch for an ensemble's usage chunk (ensemble_usage.go)
	sawDone bool
	gap     time.Duration
	marker  string           // response.stream_done_marker of the provider key
	reason  string           // the key's response.reasoning_field member, moved to reasoning_content
	rbuf    []byte           // chunk with it moved
	conv    transcode.Stream // chat chunks → the caller's surface; nil for chat callers
	convRel func(transcode.Stream)

	native bool // the upstream serves the caller's surface: events relayed as they are
	// Native Responses streams: what a response.failed gw appends continues.
	seq         int64  // the last sequence_number seen
	respID      []byte // the response's id (JSON literal)
	respCreated []byte // its created_at (JSON literal)

	// An upstream of another protocol (proto): its events become chat
	// chunks first.
	up    upStream
	upBuf []byte // converted chat frames not yet consumed
	upOff int
	// A direct chain (stream_direct.go): up feeds conv without chat frames.
	direct  directUp
	dirDone bool // the upstream ended before the commit point

	// Output policy (guard_output.go): nil when no output guardrail applies.
	gs     *guard.ChatStream
	ns     *guard.NativeStream
	gEnded bool  // the upstream ended; what gs held is judged
	gErr   error // how it ended (nil: [DONE])
	gDec   guard.Decision
	gDone  bool // a guarded native stream ended before its commit point
}

// errStreamErrored ends a stream whose upstream already reported an in-band
// error (its error frame was relayed): no further frame is written.
var errStreamErrored = errors.New("edge: upstream stream reported an error")

// next returns the next chat-completions chunk payload of the upstream
// stream ("[DONE]" included): the upstream's own events, or — for a
// upstream of another protocol — the chat chunks its events convert to.
func (s *relayState) next() ([]byte, error) {
	if s.gs != nil {
		return s.guardedNext()
	}
	return s.rawNext()
}

// rawNext is next without the output policy.
func (s *relayState) rawNext() ([]byte, error) {
	if s.up == nil {
		ev, err := s.rd.Next()
		if s.reason != "" && err == nil {
			if out, ok := openai.RenameReasoning(s.rbuf[:0], ev.Data, s.reason); ok {
				s.rbuf = out
				return out, nil
			}
		}
		return ev.Data, err
	}
	for {
		if s.upOff < len(s.upBuf) {
			frame := s.upBuf[s.upOff:]
			end := bytes.Index(frame, frameSep)
			if end < 0 {
				end = len(frame)
			}
			s.upOff += min(end+len(frameSep), len(frame))
			return bytes.TrimPrefix(frame[:end], dataPrefix), nil
		}
		s.upBuf, s.upOff = s.upBuf[:0], 0
		ev, err := s.rd.Next()
		if errors.Is(err, io.EOF) && !(s.resp.Header.ContentLength() == -1 && upstream.PeerClosed(s.resp)) {
			if s.up.Err() != nil {
				return nil, errStreamErrored
			}
			s.upBuf = s.up.End(s.upBuf)
			if len(s.upBuf) == 0 {
				return nil, io.EOF
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		s.upBuf, _ = s.up.Event(s.upBuf, ev.Name, ev.Data)
	}
}

// ready reports whether another chunk is ready without reading.
func (s *relayState) ready() bool {
	if s.gs != nil && s.gs.Pending() || s.ns != nil && s.ns.Pending() {
		return true
	}
	if s.up != nil && s.upOff < len(s.upBuf) {
		return true
	}
	return s.rd.Pending()
}

var (
	frameSep   = []byte("\n\n")
	dataPrefix = []byte("data: ")
)

var relayPool = sync.Pool{New: func() any {
	s := &relayState{pending: make([]byte, 0, 1024), out: make([]byte, 0, 1024), tmp: make([]byte, 0, 1024)}
	s.idleFn = s.idle
	return s
}}

func (s *relayState) release() {
	if s.rd != nil {
		s.proto.closeSource(s.rd, s.native)
	}
	if s.resp != nil {
		// A body read to its end returns the connection to the pool; closing
		// an unfinished body closes the connection, which is how a caller
		// leaving (or a failed stream) cancels the upstream call.
		upstream.CloseStream(s.resp)
		fasthttp.ReleaseResponse(s.resp)
	}
	if s.conv != nil {
		s.convRel(s.conv)
		s.conv, s.convRel = nil, nil
	}
	if s.up != nil {
		s.proto.release(s.up)
		s.up = nil
	}
	s.upBuf, s.upOff, s.native = s.upBuf[:0], 0, false
	s.direct, s.dirDone = nil, false
	s.gs, s.ns, s.gEnded, s.gErr, s.gDec, s.gDone = nil, nil, false, nil, guard.Pass, false
	s.rd, s.proto, s.resp, s.p, s.c = nil, nil, nil, nil, nil
	s.pending, s.out, s.tmp, s.wbuf = s.pending[:0], s.out[:0], s.tmp[:0], s.wbuf[:0]
	s.sawDone, s.gap, s.marker, s.wrote = false, 0, "", false
	s.reason, s.rbuf = "", s.rbuf[:0]
	s.w, s.hooked, s.gone, s.corker = nil, false, false, nil
	s.seq, s.respID, s.respCreated = 0, s.respID[:0], s.respCreated[:0]
	relayPool.Put(s)
}

var (
	streamCT     = []byte("text/event-stream")
	hdrCacheCtl  = []byte("Cache-Control")
	valNoCache   = []byte("no-cache")
	hdrAccelBuf  = []byte("X-Accel-Buffering")
	valNo        = []byte("no")
	errorPrefix  = []byte(`{"error"`)
	maxErrorBody = int64(1 << 20)
)

// prefetch outcomes.
const (
	preContent = iota // a content event was read: commit
	preEmpty          // the stream ended without content
	preTimeout        // the gap timeout elapsed
	preFailed         // transport failure or an error event
	preBlocked        // the output policy blocked before the commit point
)

// stream dispatches a streaming chat call. Until the first content event
// arrives nothing is written to the caller, so every failure up to that
// commit point can still be retried or failed over and answered with a
// proper status (502 for an empty stream, 504 for a timeout).
func (p *Proxy) stream(ctx *fasthttp.RequestCtx, c *call) {
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
			c.holdBusy(t.Plan.State) // in-flight until the stream ends (least_busy)
			err := client.DoStream(req, resp, c.capTimeout(t.StreamTimeout))
			fasthttp.ReleaseRequest(req)
			if err != nil {
				c.upstreamDur += time.Since(sent)
				c.dropBusy()
				fail = p.transportFailure(c, t, err)
				c.noteFailure(&fail)
				c.observe(t, &fail, 0)
				fasthttp.ReleaseResponse(resp)
				continue
			}
			status := resp.StatusCode()
			if status >= 300 {
				c.dropBusy()
				body, _ := io.ReadAll(io.LimitReader(resp.BodyStream(), maxErrorBody))
				c.upstreamDur += time.Since(sent)
				ctype := append([]byte(nil), resp.Header.ContentType()...)
				retryAfter := string(resp.Header.Peek("Retry-After"))
				backoff := appendBackoff(nil, &resp.Header)
				upstream.CloseStream(resp)
				fasthttp.ReleaseResponse(resp)
				if !retryable(c.dispatchPlan(), status) {
					c.observe(t, &lastFailure{kind: upstream.KindStatus, status: status, retryAfter: retryAfter}, 0)
					relayError(ctx, c.surf, status, body, ctype, backoff)
					c.errClass = "upstream_status"
					return
				}
				fail = lastFailure{kind: upstream.KindStatus, status: status, body: body, ctype: ctype, retryAfter: retryAfter, backoff: backoff}
				c.noteFailure(&fail)
				c.observe(t, &fail, 0)
				continue
			}
			s := relayPool.Get().(*relayState)
			s.resp, s.gap, s.marker = resp, t.StreamTimeout, up.Key.Response.StreamDoneMarker
			s.proto = protocolOf(up.Protocol)
			if !c.native && up.Protocol == "" {
				s.reason = openai.ReasoningField(up.Key.Response.ReasoningField)
			}
			s.rd = s.proto.openSource(resp.BodyStream(), c.native)
			switch {
			case c.native:
				s.native = true // the upstream speaks the caller's format: relay events as they are
				if c.outputOn() {
					s.ns = &c.g.ns
					s.ns.Reset(context.Background(), &c.g.e, c.plan.Alias, c.g.e.Chain.Output, c.surf.guardStream)
				}
			default:
				if c.surf.newStream != nil {
					s.conv, s.convRel = c.surf.newStream(c), c.surf.releaseStream
				}
				if s.proto != nil {
					s.up = s.proto.acquire(c.plan.AliasBytes)
				}
				if c.outputOn() {
					s.gs = &c.g.cs
					s.gs.Reset(context.Background(), &c.g.e, c.plan.Alias, c.g.e.Chain.Output)
				}
				s.direct = s.directChain(c)
			}
			outcome, ferr := p.prefetch(c, s)
			c.upstreamDur += time.Since(sent)
			if outcome == preBlocked {
				s.guardReject(ctx, c)
				s.release()
				c.dropBusy()
				return
			}
			if outcome == preContent {
				c.upTTFT = time.Since(sent)
				c.observe(t, nil, c.upTTFT)
				p.commit(ctx, c, s)
				return
			}
			s.release()
			c.dropBusy()
			switch outcome {
			case preEmpty:
				fail = lastFailure{kind: kindNoContent, reason: "the upstream stream ended without content"}
			case preTimeout:
				fail = lastFailure{kind: upstream.KindTimeout}
			default:
				if ferr.status != 0 {
					fail = lastFailure{kind: upstream.KindStatus, status: ferr.status, body: ferr.body, ctype: []byte("application/json")}
					if !retryable(c.dispatchPlan(), ferr.status) {
						// An in-band error with a status (errStatus) follows the
						// rules of that status as an HTTP answer: a 429 fails
						// over only with retry_on_429.
						c.observe(t, &fail, 0)
						relayError(ctx, c.surf, fail.status, fail.body, fail.ctype, nil)
						c.errClass = "upstream_status"
						return
					}
				} else {
					fail = lastFailure{kind: upstream.KindTransport, reason: "the upstream stream failed before any content"}
				}
			}
			c.noteFailure(&fail)
			c.observe(t, &fail, 0)
		}
	}
	p.answerFailed(ctx, c, &it, &fail)
}

// prefetchErr carries an upstream error event seen before the commit point.
type prefetchErr struct {
	status int
	body   []byte
}

// prefetch reads events until the first one with content, keeping the
// rewritten events in s.pending.
func (p *Proxy) prefetch(c *call, s *relayState) (int, prefetchErr) {
	if s.native {
		return p.prefetchNative(c, s)
	}
	if s.direct != nil {
		return p.prefetchDirect(c, s)
	}
	for {
		if dl := c.readDeadline(s.gap); !dl.IsZero() {
			upstream.SetReadDeadline(s.resp, dl)
		}
		data, err := s.next()
		if err != nil {
			if errors.Is(err, errGuardBlocked) {
				return preBlocked, prefetchErr{}
			}
			if errors.Is(err, io.EOF) && !(s.resp.Header.ContentLength() == -1 && upstream.PeerClosed(s.resp)) {
				return preEmpty, prefetchErr{}
			}
			if upstream.IsTimeout(err) {
				return preTimeout, prefetchErr{}
			}
			return preFailed, prefetchErr{}
		}
		if sse.IsDone(data) {
			return preEmpty, prefetchErr{}
		}
		if bytes.HasPrefix(data, errorPrefix) {
			return preFailed, prefetchErr{status: s.errStatus(), body: append([]byte(nil), data...)}
		}
		if s.processChunk(c, data) {
			s.pending = append(s.pending, s.out...)
		}
		if hasContent(data) {
			return preContent, prefetchErr{}
		}
	}
}

// processChunk turns one upstream chunk into the caller's event in s.out:
// the usage chunk gw forced is consumed (usage recorded) and not relayed,
// the `usage:null` field a forced include_usage adds is removed, and
// `model` becomes the alias. It reports whether s.out holds an event.
func (s *relayState) processChunk(c *call, data []byte) bool {
	s.out = s.out[:0]
	var judge adapters.Usage
	panel := false
	if c.ensembleAnswer() && openai.IsUsageOnlyChunk(data) { // ensemble_usage.go
		if d, own, ok := appendPanelUsage(s.panel[:0], data, &c.addUsage); ok {
			s.panel, data, judge, panel = d, d, own, true
		}
	}
	if s.conv != nil {
		out, err := s.conv.Event(s.out, nil, data)
		s.out = out
		if u, ok := s.conv.Usage(); ok {
			c.usage, c.haveUsage = chatUsage(u), true
		}
		if panel {
			c.usage, c.haveUsage = judge, true
		}
		if err != nil {
			c.errClass = "upstream_error_event"
		}
		return len(s.out) > 0
	}
	// Fast path - one walk over the chunk instead of three (see editChunk).
	if out, ok := editChunk(append(s.out, "data: "...), data, c.plan.AliasJSON, c.in.ForceUsage); ok {
		s.out = append(out, "\n\n"...)
		return true
	}
	s.out = s.out[:0]
	// Slow path - the usage chunk, and every chunk editChunk leaves alone.
	if openai.IsUsageOnlyChunk(data) {
		if u, ok := openai.ExtractUsage(data); ok {
			c.usage, c.haveUsage = u, true
		}
		if panel {
			c.usage, c.haveUsage = judge, true
		}
		if c.in.ForceUsage {
			return false
		}
	} else if c.in.ForceUsage {
		if d, err := rawjson.Delete(s.tmp[:0], data, "usage"); err == nil {
			s.tmp = d
			data = d
		}
	}
	s.out = append(s.out, "data: "...)
	s.out = openai.RewriteModel(s.out, data, c.plan.AliasJSON)
	s.out = append(s.out, "\n\n"...)
	return true
}

// hasContent reports whether a chunk carries something the caller sees:
// delta content, a refusal, reasoning, tool calls or a finish reason.
func hasContent(data []byte) bool {
	choices, kind, ok := rawjson.Get(data, "choices")
	if !ok || kind != rawjson.Array {
		return false
	}
	found := false
	_ = rawjson.ForEachElem(choices, func(_ int, ch []byte, k rawjson.Kind) bool {
		if k != rawjson.Object {
			return true
		}
		if fr, fk, ok := rawjson.Get(ch, "finish_reason"); ok && fk == rawjson.String && len(fr) > 2 {
			found = true
			return false
		}
		delta, dk, ok := rawjson.Get(ch, "delta")
		if !ok || dk != rawjson.Object {
			return true
		}
		_ = rawjson.ForEachKey(delta, func(key, val []byte, vk rawjson.Kind) bool {
			switch {
			case vk == rawjson.String && len(val) > 2 && (rawjson.NameIs(key, "content") || rawjson.NameIs(key, "refusal") ||
				rawjson.NameIs(key, "reasoning_content") || rawjson.NameIs(key, "reasoning")):
				found = true
			case vk == rawjson.Array && rawjson.NameIs(key, "tool_calls"):
				found = true
			case vk == rawjson.Object && rawjson.NameIs(key, "function_call"):
				found = true
			}
			return !found
		})
		return !found
	})
	return found
}

// commit sends the 200 and the SSE headers and hands the rest of the stream
// to fasthttp as the response body. fasthttp writes it from the
// connection's own goroutine through relayState.WriteTo — each Write is one
// flushed chunk — so no pipe or extra goroutine sits between the upstream
// and the caller.
//
// Lifetime: from here on s (and c) belong to fasthttp's response until its
// one closing call, CloseWithError, which comes after WriteTo returns (or
// instead of it when the response is never written). Only that call may
// record the stream and return s and c to their pools: fasthttp still holds
// s between WriteTo and the close, and a pooled s reused by another stream
// in that gap would be ended by this stream's close.
func (p *Proxy) commit(ctx *fasthttp.RequestCtx, c *call, s *relayState) {
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.Response.Header.SetContentTypeBytes(streamCT)
	ctx.Response.Header.SetBytesKV(hdrCacheCtl, valNoCache)
	ctx.Response.Header.SetBytesKV(hdrAccelBuf, valNo)
	setOverhead(ctx, c)
	c.ttfb = time.Since(c.start)
	s.p, s.c, s.reqBytes, s.wrote = p, c, requestBytes(ctx, c), false
	s.corker, _ = ctx.Conn().(corker)
	c.committed = true
	ctx.Response.SetBodyStream(s, -1)
}

// SupportsBodyWriteTo tells fasthttp to write the body through WriteTo.
func (s *relayState) SupportsBodyWriteTo() bool { return true }

// Read is never used (fasthttp prefers WriteTo); it ends the body at once.
func (s *relayState) Read([]byte) (int, error) { return 0, io.EOF }

// WriteTo relays the stream; w flushes every Write as one chunk. It does
// not release anything: see commit.
func (s *relayState) WriteTo(w io.Writer) (int64, error) {
	n := s.c.respBytes
	s.wrote, s.w = true, w
	s.hooked = upstream.SetIdleHook(s.resp, s.idleFn, s.gap)
	s.c.status = s.p.relay(w, s.c, s)
	if s.hooked {
		upstream.SetIdleHook(s.resp, nil, 0)
		s.hooked = false
	}
	return int64(s.c.respBytes - n), nil
}

// idle is the upstream connection's idle hook during the relay: the
// upstream has nothing more ready, so what is batched goes out now.
func (s *relayState) idle() bool { return s.flush(s.w, s.c) }

// flushAt bounds a batch when the upstream keeps delivering faster than
// the relay reads: a batch this large is written without waiting for the
// upstream to pause.
const flushAt = 8<<10 - 64

// batched ends the handling of one event: with the idle hook the batch
// waits until the upstream has nothing more ready (or grows to flushAt);
// without it, the batch is written unless another complete event is already
// buffered. false when the caller left.
func (s *relayState) batched(w io.Writer, c *call) bool {
	if s.hooked && len(s.wbuf) < flushAt || !s.hooked && s.ready() {
		return !s.gone
	}
	return s.flush(w, c)
}

// drainAfterEnd bounds how long a stream whose last event was relayed waits
// for the rest of the upstream body (normally the chunked terminator, sent
// with the last event): reading it returns the connection to the pool.
const drainAfterEnd = time.Second

// finish reads the upstream body past the stream's last event to its end
// (the chunked terminator or Content-Length), so that CloseStream returns
// the connection to the keep-alive pool instead of closing it. With the
// idle hook set, the batched last event is written as soon as the read
// would wait. A body that does not end soon (or carries more than a few
// stray events) is left unfinished, and its connection is closed.
func (s *relayState) finish() {
	d := drainAfterEnd
	if s.gap > 0 && s.gap < d {
		d = s.gap
	}
	if s.hooked {
		upstream.SetIdleHook(s.resp, s.idleFn, d)
	} else {
		upstream.SetReadDeadline(s.resp, time.Now().Add(d))
	}
	for range 8 {
		if _, err := s.rd.Next(); err != nil {
			return
		}
	}
}

// CloseWithError is fasthttp's last call on the body stream, made exactly
// once: after WriteTo with the error of the final write (the terminating
// chunk), or without any WriteTo when the response was never written (the
// caller left before the first byte). It records the stream and releases
// its state. A stream whose end did not reach the caller is recorded as
// 499, not as the 200 the relay saw.
func (s *relayState) CloseWithError(err error) error {
	c := s.c
	if !s.wrote || (err != nil && c.status == fasthttp.StatusOK) {
		c.status, c.errClass = 499, "client_gone"
	}
	p, reqBytes := s.p, s.reqBytes
	s.release()
	p.record(c, methodPost, []byte(c.surf.path), reqBytes, true)
	releaseCall(c)
	return nil
}

var methodPost = []byte("POST")

// Mid-stream failure frames: chat callers get an error data frame and no [DONE].
var (
	frameTimeout  = []byte("data: {\"error\":{\"type\":\"server_error\",\"code\":\"stream_timeout\",\"message\":\"the upstream stream stalled longer than stream_timeout\"}}\n\n")
	frameBroken   = []byte("data: {\"error\":{\"type\":\"server_error\",\"code\":\"upstream_stream_error\",\"message\":\"the upstream stream failed\"}}\n\n")
	frameNoMarker = []byte("data: {\"error\":{\"type\":\"server_error\",\"code\":\"upstream_stream_error\",\"message\":\"the upstream stream ended without its [DONE] marker\"}}\n\n")
	frameDone     = []byte("data: [DONE]\n\n")
)

// relay copies the stream to the caller event by event and returns the
// status to record: 200, 504 (gap timeout), 502 (upstream failure) or 499
// (the caller left). Every w.Write is flushed to the caller as one chunk;
// events already buffered together are written together.
func (p *Proxy) relay(w io.Writer, c *call, s *relayState) int {
	if s.native {
		return p.relayNative(w, c, s)
	}
	if s.direct != nil {
		return p.relayDirect(w, c, s)
	}
	s.wbuf = append(s.wbuf[:0], s.pending...)
	if !s.batched(w, c) {
		return 499
	}
	for {
		if s.gap > 0 && !s.hooked { // hooked: the connection applies the gap (SetIdleHook)
			upstream.SetReadDeadline(s.resp, time.Now().Add(s.gap))
		}
		data, err := s.next()
		if errors.Is(err, errGuardBlocked) {
			s.guardFail(c)
			s.flushLast(w, c)
			return fasthttp.StatusUnprocessableEntity
		}
		if errors.Is(err, errStreamErrored) {
			c.errClass = "upstream_error_event"
			s.flushLast(w, c)
			return fasthttp.StatusBadGateway
		}
		if err != nil {
			if s.gone {
				return 499
			}
			if errors.Is(err, io.EOF) && s.resp.Header.ContentLength() == -1 && upstream.PeerClosed(s.resp) {
				err = io.ErrUnexpectedEOF // a chunked body cut off by the peer, not its end
			}
			var frame []byte
			status := fasthttp.StatusOK
			code := ""
			switch {
			case errors.Is(err, io.EOF) && s.marker == "required":
				frame, status, c.errClass, code = frameNoMarker, fasthttp.StatusBadGateway, "upstream_no_done", transcode.CodeUpstreamStreamFail
			case errors.Is(err, io.EOF):
				frame = frameDone // marker none or optional: the caller still gets its [DONE]
			case upstream.IsTimeout(err):
				frame, status, c.errClass, code = frameTimeout, fasthttp.StatusGatewayTimeout, "stream_timeout", transcode.CodeTimeout
			default:
				frame, status, c.errClass, code = frameBroken, fasthttp.StatusBadGateway, "upstream_stream_error", transcode.CodeUpstreamStreamFail
			}
			if s.conv != nil {
				if code == "" {
					s.wbuf = s.conv.End(s.wbuf)
				} else {
					s.wbuf = s.conv.Fail(s.wbuf, code, "the upstream stream failed")
				}
			} else {
				s.wbuf = append(s.wbuf, frame...)
			}
			s.flushLast(w, c)
			return status
		}
		if sse.IsDone(data) {
			if s.conv != nil {
				s.wbuf, _ = s.conv.Event(s.wbuf, nil, data)
				s.wbuf = s.conv.End(s.wbuf)
			} else {
				s.wbuf = append(s.wbuf, frameDone...)
			}
			s.finish()
			if !s.flushLast(w, c) {
				return 499
			}
			return fasthttp.StatusOK
		}
		if bytes.HasPrefix(data, errorPrefix) && s.conv == nil {
			s.wbuf = append(append(append(s.wbuf, "data: "...), data...), "\n\n"...)
			c.errClass = "upstream_error_event"
		} else if s.processChunk(c, data) {
			s.wbuf = append(s.wbuf, s.out...)
		} else {
			continue
		}
		// Events that arrived together leave in one write, and no event ever
		// waits for a later read (see batched).
		if !s.batched(w, c) {
			return 499
		}
	}
}

// corker is a caller connection that can hold its next write for the one
// after it (rawsock.Conn.Cork).
type corker interface{ Cork() }

// flushLast writes the stream's last batch. The caller's connection holds
// it for fasthttp's chunked terminator, written right after the relay
// returns, so both leave in one write(2) instead of two.
func (s *relayState) flushLast(w io.Writer, c *call) bool {
	if s.corker != nil && len(s.wbuf) > 0 && !s.gone {
		s.corker.Cork()
	}
	return s.flush(w, c)
}

// flush writes the batched events as one chunk; false when the caller left.
func (s *relayState) flush(w io.Writer, c *call) bool {
	if s.gone {
		return false
	}
	if len(s.wbuf) == 0 {
		return true
	}
	if _, err := w.Write(s.wbuf); err != nil {
		c.errClass = "client_gone"
		s.gone = true
		return false
	}
	c.respBytes += len(s.wbuf)
	s.wbuf = s.wbuf[:0]
	return true
}
