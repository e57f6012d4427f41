package edge

import (
	"bytes"
	"errors"
	"io"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters/upstream"
	"gw/sse"
	"gw/sse/rawjson"
	"gw/sse/respconv"
	"gw/sse/transcode"
)

// Native streams: the caller's surface is one the upstream serves natively
// (a /v1/messages caller on an Anthropic key, a /v1/responses caller on a
// key whose `apis` include responses). The upstream's events are relayed as
// they are — thinking blocks, signatures, encrypted reasoning and unknown
// event types included — with only the model set to the alias. Each surface
// supplies how to read one event (nativeEvent) and how to end a stream gw
// has to cut short (nativeFail).

// evFlags is what the relay needs to know about one native event.
type evFlags uint8

const (
	evContent evFlags = 1 << iota // caller-visible content: the commit point
	evEnd                         // the stream's last event
	evFailed                      // the upstream reported an error in-band
)

var (
	evMessageStart = []byte("message_start")
	evMessageDelta = []byte("message_delta")
	evMessageStop  = []byte("message_stop")
	evBlockStart   = []byte("content_block_start")
	evBlockDelta   = []byte("content_block_delta")
	evError        = []byte("error")

	nativeTimeout = []byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"timeout_error\",\"message\":\"the upstream stream stalled longer than stream_timeout\"}}\n\n")
	nativeBroken  = []byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"the upstream stream failed\"}}\n\n")
)

// messagesEvent appends one Messages event to s.out, rewriting the model of
// message_start and recording usage.
func messagesEvent(s *relayState, c *call, ev sse.Event) evFlags {
	data := ev.Data
	var f evFlags
	switch {
	case bytesEq(ev.Name, evMessageStart):
		if msg, kind, ok := rawjson.Get(data, "message"); ok && kind == rawjson.Object {
			if usage, kind, ok := rawjson.Get(msg, "usage"); ok && kind == rawjson.Object {
				addMessagesUsage(&c.usage, usage)
				c.haveUsage = true
			}
			data = s.setModel(data, "message", msg, c)
		}
	case bytesEq(ev.Name, evMessageDelta):
		if usage, kind, ok := rawjson.Get(data, "usage"); ok && kind == rawjson.Object {
			addMessagesUsage(&c.usage, usage)
			c.haveUsage = true
		}
	case bytesEq(ev.Name, evBlockStart), bytesEq(ev.Name, evBlockDelta):
		f = evContent
	case bytesEq(ev.Name, evMessageStop):
		f = evEnd
	case bytesEq(ev.Name, evError):
		c.errClass = "upstream_error_event"
		f = evEnd | evFailed
	}
	s.out = sse.AppendEvent(s.out[:0], ev.Name, data)
	return f
}

// messagesFail ends a native Messages stream with an `error` event.
func messagesFail(dst []byte, _ *relayState, _ *call, code string) []byte {
	if code == transcode.CodeTimeout {
		return append(dst, nativeTimeout...)
	}
	return append(dst, nativeBroken...)
}

// messagesErrBody is the body of a failed attempt whose stream opened with an
// `error` event: the event is already the Messages error envelope.
func messagesErrBody(data []byte) []byte { return append([]byte(nil), data...) }

var (
	respPrefix     = []byte("response.")
	evRespCreated  = []byte("response.created")
	evRespProgress = []byte("response.in_progress")
	evRespQueued   = []byte("response.queued")
	evRespDone     = []byte("response.completed")
	evRespPartial  = []byte("response.incomplete")
	evRespFailed   = []byte("response.failed")
)

// responsesEvent appends one Responses event to s.out: the model of every
// event carrying the response object becomes the alias; usage, the
// response's id and created_at and the last sequence_number are kept (a
// failure gw appends continues them). `error` marks the stream failed but
// does not end it: the API follows it with response.failed.
func responsesEvent(s *relayState, c *call, ev sse.Event) evFlags {
	data := ev.Data
	typ := ev.Name
	if len(typ) == 0 { // data-only framing: the type is in the payload
		if t, kind, ok := rawjson.Get(data, "type"); ok && kind == rawjson.String {
			typ = t[1 : len(t)-1]
		}
	}
	if seq, kind, ok := rawjson.Get(data, "sequence_number"); ok && kind == rawjson.Number {
		if n, ok := rawjson.ParseInt(seq); ok {
			s.seq = n
		}
	}
	var f evFlags
	switch {
	case bytesEq(typ, evError):
		c.errClass = "upstream_error_event"
		f = evFailed
	case bytesEq(typ, evRespCreated), bytesEq(typ, evRespProgress), bytesEq(typ, evRespQueued),
		bytesEq(typ, evRespDone), bytesEq(typ, evRespPartial), bytesEq(typ, evRespFailed):
		if resp, kind, ok := rawjson.Get(data, "response"); ok && kind == rawjson.Object {
			if len(s.respID) == 0 {
				if id, kind, ok := rawjson.Get(resp, "id"); ok && kind == rawjson.String {
					s.respID = append(s.respID[:0], id...)
				}
				if ca, kind, ok := rawjson.Get(resp, "created_at"); ok && kind == rawjson.Number {
					s.respCreated = append(s.respCreated[:0], ca...)
				}
			}
			if usage, kind, ok := rawjson.Get(resp, "usage"); ok && kind == rawjson.Object {
				if u, ok := respconv.ParseUsage(usage); ok {
					c.usage, c.haveUsage = chatUsage(u), true
				}
			}
			data = s.setModel(data, "response", resp, c)
		}
		switch {
		case bytesEq(typ, evRespFailed):
			c.errClass = "upstream_error_event"
			f = evEnd | evFailed
		case bytesEq(typ, evRespDone), bytesEq(typ, evRespPartial):
			f = evEnd
		}
	case bytes.HasPrefix(typ, respPrefix): // output items, parts, deltas
		f = evContent
	}
	s.out = sse.AppendEvent(s.out[:0], ev.Name, data)
	return f
}

// responsesFail ends a native Responses stream with response.failed,
// continuing the upstream's sequence numbers and response id.
func responsesFail(dst []byte, s *relayState, c *call, code string) []byte {
	msg := "the upstream stream failed"
	if code == transcode.CodeTimeout {
		msg = "the upstream stream stalled longer than stream_timeout"
	}
	return respconv.AppendFailed(dst, s.seq+1, s.respID, s.respCreated, c.plan.AliasJSON, code, msg)
}

// responsesErrBody turns an `error` or `response.failed` event that opened a
// stream into the error envelope of a failed attempt.
func responsesErrBody(data []byte) []byte {
	obj := data
	if e, kind, ok := rawjson.Get(data, "error"); ok && kind == rawjson.Object {
		obj = e
	} else if e, kind, ok := rawjson.GetPath(data, "response", "error"); ok && kind == rawjson.Object {
		obj = e
	}
	b := append(make([]byte, 0, len(obj)+12), `{"error":`...)
	b = append(b, obj...)
	return append(b, '}')
}

// setModel returns data with obj (the value of data's key) carrying the
// alias as `model`; data is returned unchanged if the edit fails.
func (s *relayState) setModel(data []byte, key string, obj []byte, c *call) []byte {
	m, err := rawjson.Set(s.tmp[:0], obj, "model", c.plan.AliasJSON)
	if err != nil {
		return data
	}
	s.tmp = m
	d, err := rawjson.Set(s.upBuf[:0], data, key, m)
	if err != nil {
		return data
	}
	s.upBuf = d
	return d
}

func bytesEq(a, b []byte) bool { return string(a) == string(b) }

// prefetchNative reads events until the first content event, keeping them.
func (p *Proxy) prefetchNative(c *call, s *relayState) (int, prefetchErr) {
	sawContent := false
	for {
		if s.gap > 0 {
			upstream.SetReadDeadline(s.resp, time.Now().Add(s.gap))
		}
		ev, err := s.nextEvent()
		if err != nil {
			switch {
			case errors.Is(err, errGuardBlocked):
				return preBlocked, prefetchErr{}
			case upstream.IsTimeout(err):
				return preTimeout, prefetchErr{}
			case errors.Is(err, io.EOF) && !(s.resp.Header.ContentLength() == -1 && upstream.PeerClosed(s.resp)):
				return preEmpty, prefetchErr{}
			}
			return preFailed, prefetchErr{}
		}
		f := c.surf.nativeEvent(s, c, ev)
		if f&evFailed != 0 {
			status := fasthttp.StatusBadGateway
			if es, ok := s.rd.(errStatuser); ok && es.ErrStatus() != 0 {
				status = es.ErrStatus() // a Bedrock exception frame: 429 for throttling ...
			}
			return preFailed, prefetchErr{status: status, body: c.surf.nativeErrBody(ev.Data)}
		}
		s.pending = append(s.pending, s.out...)
		if f&evContent != 0 {
			sawContent = true
			// With an output policy, commit once judged text leaves.
			if s.ns == nil || s.ns.TextReleased() {
				return preContent, prefetchErr{}
			}
		}
		if f&evEnd != 0 {
			if sawContent { // a guarded stream that ended before committing
				s.gDone = true
				return preContent, prefetchErr{}
			}
			return preEmpty, prefetchErr{}
		}
	}
}

// relayNative copies the rest of a native stream.
func (p *Proxy) relayNative(w io.Writer, c *call, s *relayState) int {
	s.wbuf = append(s.wbuf[:0], s.pending...)
	if s.gDone { // the whole stream was read before the commit point
		if !s.flushLast(w, c) {
			return 499
		}
		if c.errClass == "upstream_error_event" {
			return fasthttp.StatusBadGateway
		}
		return fasthttp.StatusOK
	}
	if !s.batched(w, c) {
		return 499
	}
	for {
		if s.gap > 0 && !s.hooked { // hooked: the connection applies the gap (SetIdleHook)
			upstream.SetReadDeadline(s.resp, time.Now().Add(s.gap))
		}
		ev, err := s.nextEvent()
		if errors.Is(err, errGuardBlocked) {
			s.guardFail(c)
			s.flushLast(w, c)
			return fasthttp.StatusUnprocessableEntity
		}
		if err != nil {
			if s.gone {
				return 499
			}
			status, code := fasthttp.StatusBadGateway, transcode.CodeUpstreamStreamFail
			switch {
			case upstream.IsTimeout(err):
				status, code, c.errClass = fasthttp.StatusGatewayTimeout, transcode.CodeTimeout, "stream_timeout"
			case c.errClass == "upstream_error_event": // the upstream's own error event was relayed
			default: // EOF before the final event, or a transport failure
				c.errClass = "upstream_stream_error"
			}
			if c.errClass != "upstream_error_event" {
				s.wbuf = c.surf.nativeFail(s.wbuf, s, c, code)
			}
			s.flushLast(w, c)
			return status
		}
		f := c.surf.nativeEvent(s, c, ev)
		s.wbuf = append(s.wbuf, s.out...)
		if f&evEnd != 0 {
			s.finish()
			if !s.flushLast(w, c) {
				return 499
			}
			if c.errClass == "upstream_error_event" {
				return fasthttp.StatusBadGateway
			}
			return fasthttp.StatusOK
		}
		if !s.batched(w, c) {
			return 499
		}
	}
}
