package edge

import (
	"errors"
	"io"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters/upstream"
	"gw/sse/chatchunk"
	"gw/sse/gemini"
	"gw/sse/transcode"
)

// Direct chains: a Messages or Responses caller in front of an upstream
// whose converter can hand its chat chunks to the caller's second stage as
// filled chatchunk.Chunks (gemini.ToChatStream.SetSink) is relayed without
// chat JSON between the stages: each upstream event goes through the
// converter into the second stage's Feed, and the caller's events come out.
// Everything the chained relay decides from the chat chunks it reads — the
// commit point (hasContent), an in-band error before it (the chat error
// body answered in the caller's envelope), the end — the converter reports
// (Content, ErrorBody, Err, End), so both relays answer alike. An output
// policy reads chat chunks (guard.ChatStream) and an ensemble's usage
// rewrite edits them, so those calls keep the chained relay.

// noDirect: tests compare the direct chain with the chained relay.
var noDirect bool

var _ directUp = (*gemini.ToChatStream)(nil)

// directUp is an upstream converter that can feed a second stage directly.
type directUp interface {
	upStream
	SetSink(chatchunk.Sink)
	// Content reports whether the chunks so far include one with content
	// in hasContent's sense (the commit point).
	Content() bool
	// ErrorBody is the chat error body of the in-band error Err reports.
	ErrorBody() []byte
}

// directChain sets up the direct chain of s when its stages allow it and
// returns the converter (nil: the chained relay).
func (s *relayState) directChain(c *call) directUp {
	if noDirect || s.conv == nil || s.gs != nil || c.ensembleAnswer() {
		return nil
	}
	d, ok := s.up.(directUp)
	sink, ok2 := s.conv.(chatchunk.Sink)
	if !ok || !ok2 {
		return nil
	}
	d.SetSink(sink)
	return d
}

// directUsage records the usage the second stage has seen.
func (s *relayState) directUsage(c *call) {
	if u, ok := s.conv.Usage(); ok {
		c.usage, c.haveUsage = chatUsage(u), true
	}
}

// prefetchDirect is prefetch for a direct chain: events until the first
// whose chunks carry content, their caller events kept in s.pending.
func (p *Proxy) prefetchDirect(c *call, s *relayState) (int, prefetchErr) {
	for {
		if dl := c.readDeadline(s.gap); !dl.IsZero() {
			upstream.SetReadDeadline(s.resp, dl)
		}
		ev, err := s.rd.Next()
		if err != nil {
			switch {
			case upstream.IsTimeout(err):
				return preTimeout, prefetchErr{}
			case !errors.Is(err, io.EOF) || s.resp.Header.ContentLength() == -1 && upstream.PeerClosed(s.resp):
				return preFailed, prefetchErr{}
			case s.up.Err() != nil:
				return preFailed, prefetchErr{}
			}
			// The upstream ended: the converter's end (a finish chunk, the
			// usage, [DONE]) completes the caller's stream.
			s.pending = s.conv.End(s.direct.End(s.pending))
			s.directUsage(c)
			if !s.direct.Content() {
				return preEmpty, prefetchErr{}
			}
			s.dirDone = true
			return preContent, prefetchErr{}
		}
		s.out, _ = s.direct.Event(s.out[:0], ev.Name, ev.Data)
		if s.up.Err() != nil {
			return preFailed, prefetchErr{status: s.errStatus(), body: append([]byte(nil), s.direct.ErrorBody()...)}
		}
		s.pending = append(s.pending, s.out...)
		s.directUsage(c)
		if s.direct.Content() {
			return preContent, prefetchErr{}
		}
	}
}

// relayDirect is relay for a direct chain.
func (p *Proxy) relayDirect(w io.Writer, c *call, s *relayState) int {
	s.wbuf = append(s.wbuf[:0], s.pending...)
	if s.dirDone { // the upstream ended before the commit point
		s.finish()
		if !s.flushLast(w, c) {
			return 499
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
		ev, err := s.rd.Next()
		if err != nil {
			peerClosed := errors.Is(err, io.EOF) && s.resp.Header.ContentLength() == -1 && upstream.PeerClosed(s.resp)
			if errors.Is(err, io.EOF) && !peerClosed {
				if s.up.Err() != nil { // its error event was relayed
					c.errClass = "upstream_error_event"
					s.flushLast(w, c)
					return fasthttp.StatusBadGateway
				}
				s.wbuf = s.conv.End(s.direct.End(s.wbuf))
				s.directUsage(c)
				s.finish()
				if !s.flushLast(w, c) {
					return 499
				}
				return fasthttp.StatusOK
			}
			if s.gone {
				return 499
			}
			status, code := fasthttp.StatusBadGateway, transcode.CodeUpstreamStreamFail
			if upstream.IsTimeout(err) {
				status, code, c.errClass = fasthttp.StatusGatewayTimeout, transcode.CodeTimeout, "stream_timeout"
			} else {
				c.errClass = "upstream_stream_error"
			}
			s.wbuf = s.conv.Fail(s.wbuf, code, "the upstream stream failed")
			s.flushLast(w, c)
			return status
		}
		n := len(s.wbuf)
		var ferr error
		s.wbuf, ferr = s.direct.Event(s.wbuf, ev.Name, ev.Data)
		if ferr != nil && s.up.Err() != nil {
			c.errClass = "upstream_error_event"
		}
		s.directUsage(c)
		if len(s.wbuf) == n {
			continue
		}
		if !s.batched(w, c) {
			return 499
		}
	}
}
