package edge

import (
	"errors"
	"io"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters/upstream"
	"gw/sse"
	"gw/sse/rawjson"
)

// Native Messages streams: a /v1/messages caller on an Anthropic key gets
// the upstream's events as they are — thinking blocks, signatures and
// unknown event types included — with only message_start's model set to
// the alias.

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

// nativeEvent appends one upstream event to s.out, rewriting the model of
// message_start and recording usage. It reports whether the event carries
// content (the commit point) and whether it ends the stream.
func (s *relayState) nativeEvent(c *call, ev sse.Event) (content, end bool) {
	data := ev.Data
	switch {
	case bytesEq(ev.Name, evMessageStart):
		if msg, kind, ok := rawjson.Get(data, "message"); ok && kind == rawjson.Object {
			if usage, kind, ok := rawjson.Get(msg, "usage"); ok && kind == rawjson.Object {
				addMessagesUsage(&c.usage, usage)
				c.haveUsage = true
			}
			if m, err := rawjson.Set(s.tmp[:0], msg, "model", c.plan.AliasJSON); err == nil {
				s.tmp = m
				if d, err := rawjson.Set(s.upBuf[:0], data, "message", m); err == nil {
					s.upBuf = d
					data = d
				}
			}
		}
	case bytesEq(ev.Name, evMessageDelta):
		if usage, kind, ok := rawjson.Get(data, "usage"); ok && kind == rawjson.Object {
			addMessagesUsage(&c.usage, usage)
			c.haveUsage = true
		}
	case bytesEq(ev.Name, evBlockStart), bytesEq(ev.Name, evBlockDelta):
		content = true
	case bytesEq(ev.Name, evMessageStop):
		end = true
	case bytesEq(ev.Name, evError):
		c.errClass = "upstream_error_event"
		end = true
	}
	s.out = sse.AppendEvent(s.out[:0], ev.Name, data)
	return content, end
}

func bytesEq(a, b []byte) bool { return string(a) == string(b) }

// prefetchNative reads events until the first content block, keeping them.
func (p *Proxy) prefetchNative(c *call, s *relayState) (int, prefetchErr) {
	for {
		if s.gap > 0 {
			upstream.SetReadDeadline(s.resp, time.Now().Add(s.gap))
		}
		ev, err := s.rd.Next()
		if err != nil {
			switch {
			case upstream.IsTimeout(err):
				return preTimeout, prefetchErr{}
			case errors.Is(err, io.EOF) && !(s.resp.Header.ContentLength() == -1 && upstream.PeerClosed(s.resp)):
				return preEmpty, prefetchErr{}
			}
			return preFailed, prefetchErr{}
		}
		if bytesEq(ev.Name, evError) {
			return preFailed, prefetchErr{status: fasthttp.StatusBadGateway, body: append([]byte(nil), ev.Data...)}
		}
		content, end := s.nativeEvent(c, ev)
		s.pending = append(s.pending, s.out...)
		if content {
			return preContent, prefetchErr{}
		}
		if end {
			return preEmpty, prefetchErr{}
		}
	}
}

// relayNative copies the rest of a native Messages stream.
func (p *Proxy) relayNative(w io.Writer, c *call, s *relayState) int {
	s.wbuf = append(s.wbuf[:0], s.pending...)
	if !s.rd.Pending() && !s.flush(w, c) {
		return 499
	}
	for {
		if s.gap > 0 {
			upstream.SetReadDeadline(s.resp, time.Now().Add(s.gap))
		}
		ev, err := s.rd.Next()
		if err != nil {
			status := fasthttp.StatusBadGateway
			switch {
			case upstream.IsTimeout(err):
				s.wbuf, status, c.errClass = append(s.wbuf, nativeTimeout...), fasthttp.StatusGatewayTimeout, "stream_timeout"
			default: // EOF before message_stop, or a transport failure
				s.wbuf, c.errClass = append(s.wbuf, nativeBroken...), "upstream_stream_error"
			}
			s.flush(w, c)
			return status
		}
		_, end := s.nativeEvent(c, ev)
		s.wbuf = append(s.wbuf, s.out...)
		if end {
			if !s.flush(w, c) {
				return 499
			}
			if c.errClass == "upstream_error_event" {
				return fasthttp.StatusBadGateway
			}
			return fasthttp.StatusOK
		}
		if !s.rd.Pending() && !s.flush(w, c) {
			return 499
		}
	}
}
