package edge

import (
	"context"
	"errors"

	"github.com/valyala/fasthttp"

	"gw/edge/guard"
	"gw/sse"
	"gw/sse/rawjson"
	"gw/sse/respconv"
)

// The output policy stage: the guardrails of the request's merged output
// chain judge the answer before its bytes reach the caller.
//
//   - A buffered answer (guardAnswer) is judged whole: a block answers 422
//     content_filter, a mask rewrites the answer.
//   - A converted stream (every stream whose chat-completions pivot passes
//     through relayState.next) is judged delta by delta: guard.ChatStream
//     holds text, reasoning and tool-argument deltas in a sliding window
//     and releases them once judged. The commit point moves with it: gw
//     commits the stream when the first judged content is released, so a
//     block before that is still a 422; after it, the stream ends with the
//     caller format's in-band error.
//   - A native stream (the caller's format relayed as is) goes through
//     guard.NativeStream: each event is held until the text it carries is
//     judged and then relayed, unchanged unless a mask hit its block (then
//     its deltas and the Responses events repeating their text carry the
//     masked text; signed or encrypted reasoning records mask_unsupported);
//     a block ends it like a converted stream.

// outputOn reports whether an output chain applies to c.
func (c *call) outputOn() bool { return c.g.on && len(c.g.e.Chain.Output) > 0 }

// guardAnswer judges a buffered answer of format f and returns the body to
// write (body itself, or its masked form). On a block it answers the
// caller and returns false.
func (p *Proxy) guardAnswer(ctx *fasthttp.RequestCtx, c *call, body []byte, f guard.Format) ([]byte, bool) {
	g := &c.g
	if err := g.x.Extract(&g.e, f, body); err != nil {
		// A body the engine cannot read cannot be judged (the read stage
		// validated requests; an upstream answer may still be garbage): the
		// chain's fail-open rules decide, never silence.
		if g.e.Unreadable(guard.Output, g.e.Chain.Output) >= guard.Blocked {
			c.errClass = "guardrail_unavailable"
			c.surf.writeError(ctx, fasthttp.StatusUnprocessableEntity, "invalid_request_error", codeUnavailable, msgUnavailable)
			return nil, false
		}
		return body, true
	}
	d := g.e.Judge(context.Background(), guard.Output, c.plan.Alias, g.e.Chain.Output)
	p.logGuardErr(c)
	switch d {
	case guard.Blocked:
		c.errClass = "guardrail_blocked"
		c.surf.writeError(ctx, fasthttp.StatusUnprocessableEntity, "invalid_request_error", codeFilter, blockMessage(&g.e, msgBlockedOutput))
		return nil, false
	case guard.Unavailable:
		c.errClass = "guardrail_unavailable"
		c.surf.writeError(ctx, fasthttp.StatusUnprocessableEntity, "invalid_request_error", codeUnavailable, msgUnavailable)
		return nil, false
	case guard.Masked:
		g.ans = g.x.Rewrite(g.ans[:0], &g.e)
		return g.ans, true
	}
	return body, true
}

// errGuardBlocked ends a guarded stream: s.gDec says why.
var errGuardBlocked = errors.New("edge: the stream was blocked by guardrail policy")

var doneMarker = []byte("[DONE]")

// guardedNext is next() through the output policy: upstream chunks go
// into the window filter; what it releases comes out. The upstream's end
// (or failure) first judges everything held.
func (s *relayState) guardedNext() ([]byte, error) {
	for {
		if d, ok := s.gs.Next(); ok {
			return d, nil
		}
		if s.gEnded {
			if s.gErr != nil {
				return nil, s.gErr
			}
			return doneMarker, nil
		}
		data, err := s.rawNext()
		if err != nil || sse.IsDone(data) {
			s.gEnded, s.gErr = true, err
			if d := s.gs.End(); d >= guard.Blocked {
				s.gDec = d
				return nil, errGuardBlocked
			}
			continue
		}
		if d := s.gs.Push(data); d >= guard.Blocked {
			s.gDec = d
			return nil, errGuardBlocked
		}
	}
}

// guardCode is the error code and message of a guarded stream's block.
func (s *relayState) guardCode(c *call) (code, msg string) {
	if s.gDec == guard.Unavailable {
		return codeUnavailable, msgUnavailable
	}
	return codeFilter, blockMessage(&c.g.e, msgBlockedOutput)
}

// guardReject answers a stream blocked before its commit point: 422.
func (s *relayState) guardReject(ctx *fasthttp.RequestCtx, c *call) {
	code, msg := s.guardCode(c)
	c.errClass = "guardrail_blocked"
	if code == codeUnavailable {
		c.errClass = "guardrail_unavailable"
	}
	c.surf.writeError(ctx, fasthttp.StatusUnprocessableEntity, "invalid_request_error", code, msg)
}

// guardFail appends the in-band end of a stream blocked after its commit
// point, in the caller's format.
func (s *relayState) guardFail(c *call) {
	code, msg := s.guardCode(c)
	c.errClass = "guardrail_blocked"
	if code == codeUnavailable {
		c.errClass = "guardrail_unavailable"
	}
	switch {
	case s.native && c.surf == surfResponses:
		s.wbuf = respconv.AppendFailed(s.wbuf, s.seq+1, s.respID, s.respCreated, c.plan.AliasJSON, code, msg)
		return
	case s.native: // Messages: an error event, type invalid_request_error with error.code
		s.wbuf = append(s.wbuf, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"code\":"...)
		s.wbuf = rawjson.AppendQuote(s.wbuf, code)
		s.wbuf = append(s.wbuf, `,"message":`...)
		s.wbuf = rawjson.AppendQuote(s.wbuf, msg)
		s.wbuf = append(s.wbuf, "}}\n\n"...)
		return
	case s.conv != nil:
		s.wbuf = s.conv.Fail(s.wbuf, code, msg)
		return
	}
	s.wbuf = append(s.wbuf, `data: {"error":{"type":"invalid_request_error","code":`...)
	s.wbuf = rawjson.AppendQuote(s.wbuf, code)
	s.wbuf = append(s.wbuf, `,"message":`...)
	s.wbuf = rawjson.AppendQuote(s.wbuf, msg)
	s.wbuf = append(s.wbuf, "}}\n\n"...)
}

// nextEvent returns the next event of a native stream: the upstream's, or
// through the output policy the next one it released.
func (s *relayState) nextEvent() (sse.Event, error) {
	if s.ns == nil {
		return s.rd.Next()
	}
	for {
		if name, data, ok := s.ns.Next(); ok {
			return sse.Event{Name: name, Data: data}, nil
		}
		if s.gEnded {
			return sse.Event{}, s.gErr
		}
		ev, err := s.rd.Next()
		if err != nil {
			s.gEnded, s.gErr = true, err
			if d := s.ns.End(); d >= guard.Blocked {
				s.gDec = d
				return sse.Event{}, errGuardBlocked
			}
			continue
		}
		if d := s.ns.Push(ev.Name, ev.Data); d >= guard.Blocked {
			s.gDec = d
			return sse.Event{}, errGuardBlocked
		}
	}
}
