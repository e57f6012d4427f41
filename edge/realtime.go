package edge

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/admin/resources"
	"gw/edge/authn"
	"gw/edge/guard"
)

// /v1/realtime: the OpenAI Realtime API over WebSocket (docs/REALTIME.md).
//
// The upgrade request runs the same stages as any model request up to
// dispatch — authenticate (a key in Authorization / x-api-key, or in the
// `openai-insecure-api-key.<key>` subprotocol browsers use), plan (the
// `model` query parameter is the alias; grants, allowed_cidrs), limits (a
// session is one request; concurrency slots are held for the session) —
// and is refused with an HTTP answer in OpenAI's envelope before any
// upgrade: routing groups 400, providers without Realtime 501. Then gw
// dials the upstream session (realtime_dial.go) and only once the upstream
// said 101 does it answer 101 itself and take the connection over from
// fasthttp (hijack). From there frames are relayed byte for byte both ways
// (realtime_frame.go); response.done usage is summed and the session writes
// one usage record when it ends.

var pathRealtime = "/v1/realtime"

// surfRealtime classifies sessions in usage records and the access log.
// Its read stage is never run: the upgrade has no body.
var surfRealtime = &surface{path: pathRealtime, protocol: "realtime", operation: "realtime"}

// RealtimeOptions are the deployment settings of /v1/realtime sessions.
type RealtimeOptions struct {
	// TLS verifies wss upstreams (upstream.tls); nil uses the system roots.
	// Provider keys' own tls blocks do not apply (spec).
	TLS *tls.Config
	// IdleTimeout closes a session that relayed no data frame either way
	// for this long (realtime.idle_timeout); 0 disables.
	IdleTimeout time.Duration
	// MaxSession closes a session this long after it opened
	// (realtime.max_session); 0 disables.
	MaxSession time.Duration
}

// Session timings that are not configuration.
const (
	// realtimeDialTimeout bounds the upstream TCP, TLS and upgrade exchange
	// when the model's own timeout is longer or off.
	realtimeDialTimeout = 30 * time.Second
	// realtimeCloseGrace is how long the other side has to answer a close
	// frame before gw tears the session down.
	realtimeCloseGrace = 5 * time.Second
	// realtimeHijackGrace bounds the wait between answering the upgrade and
	// fasthttp handing the connection over.
	realtimeHijackGrace = 10 * time.Second
	// realtimeBufSize is each leg's read buffer: one read, one write.
	realtimeBufSize = 32 << 10
)

var (
	hdrSecWSKey      = []byte("Sec-WebSocket-Key")
	hdrSecWSVersion  = []byte("Sec-WebSocket-Version")
	hdrSecWSProtocol = []byte("Sec-WebSocket-Protocol")
	hdrUpgrade       = []byte("Upgrade")
	hdrConnection    = []byte("Connection")
	hdrOpenAIBeta    = []byte("OpenAI-Beta")

	protoKeyPrefix = []byte("openai-insecure-api-key.")
	protoBeta      = []byte("openai-beta.realtime-v1")
	protoRealtime  = []byte("realtime")
	secWSPrefix    = []byte("sec-websocket-")
)

var (
	rtActiveN     atomic.Int64
	_             = metrics.NewGauge(`gw_realtime_sessions_active`, func() float64 { return float64(rtActiveN.Load()) })
	rtFramesIn    = metrics.NewCounter(`gw_realtime_frames_total{direction="caller_to_upstream"}`)
	rtFramesOut   = metrics.NewCounter(`gw_realtime_frames_total{direction="upstream_to_caller"}`)
	rtBytesIn     = metrics.NewCounter(`gw_realtime_bytes_total{direction="caller_to_upstream"}`)
	rtBytesOut    = metrics.NewCounter(`gw_realtime_bytes_total{direction="upstream_to_caller"}`)
	rtDuration    = metrics.NewPrometheusHistogram(`gw_realtime_session_duration_seconds`)
	rtUsageUnread = metrics.NewCounter(`gw_realtime_usage_unreadable_total`)
)

// rtEndCounter counts ended sessions by how they ended.
func rtEndCounter(end string) *metrics.Counter {
	return metrics.GetOrCreateCounter(`gw_realtime_sessions_total{end="` + end + `"}`)
}

// serveRealtime answers a /v1/realtime upgrade: refused with an HTTP error,
// or upgraded and relayed until either side closes.
func (p *Proxy) serveRealtime(ctx *fasthttp.RequestCtx) {
	if !ctx.IsGet() {
		methodNotAllowed(ctx, "GET")
		return
	}
	c := acquireCall()
	c.surf, c.start, c.snap, c.stream = surfRealtime, time.Now(), p.Holder.Load(), true
	s := p.openRealtime(ctx, c)
	if s == nil {
		p.finish(ctx, c, ctx.Response.StatusCode())
		return
	}
	// From here the session finishes c (rtSession.finish).
	c.committed = true
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(s.run)
	s.armHijackWatch()
}

// openRealtime runs the upgrade's stages and dials the upstream; nil after
// answering an error.
func (p *Proxy) openRealtime(ctx *fasthttp.RequestCtx, c *call) *rtSession {
	h := &ctx.Request.Header
	key := h.PeekBytes(hdrSecWSKey)
	if !headerToken(h.PeekBytes(hdrUpgrade), []byte("websocket")) || !headerToken(h.PeekBytes(hdrConnection), []byte("upgrade")) ||
		len(key) == 0 || string(h.PeekBytes(hdrSecWSVersion)) != "13" {
		WriteError(ctx, fasthttp.StatusUpgradeRequired, "invalid_request_error", "websocket_required",
			"/v1/realtime is a WebSocket endpoint: send a WebSocket upgrade (Sec-WebSocket-Version: 13).")
		ctx.Response.Header.Set("Upgrade", "websocket")
		ctx.Response.Header.Set("Sec-WebSocket-Version", "13")
		return nil
	}
	protos := h.PeekBytes(hdrSecWSProtocol)
	cred := authn.Credential(h)
	inProto := false
	if len(cred) == 0 {
		cred, inProto = subprotocolKey(protos)
	}
	caller, fail := authn.Default.AuthenticateCredential(cred, c.snap, c.start)
	if fail != nil {
		WriteError(ctx, fasthttp.StatusUnauthorized, "invalid_request_error", fail.Code, fail.Message)
		return nil
	}
	c.caller = caller
	model := ctx.QueryArgs().Peek("model")
	if len(model) == 0 {
		WriteError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "missing_required_parameter",
			"you must provide a model query parameter (/v1/realtime?model=<alias>)")
		return nil
	}
	c.cr.Model = append(c.cr.modelBuf[:0], model...)
	if !p.plan(ctx, c) {
		return nil
	}
	if c.plan.Kind == resources.KindRouting {
		WriteError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "model_group_not_supported",
			"/v1/realtime does not accept model groups: `"+c.plan.Alias+"` is a routing model; use one of its direct models.")
		return nil
	}
	target, ok := realtimeTarget(c)
	if !ok {
		WriteError(ctx, fasthttp.StatusNotImplemented, "invalid_request_error", "not_implemented",
			"The provider of model `"+c.plan.Alias+"` does not serve /v1/realtime in this build.")
		return nil
	}
	if g := realtimeGuardrail(c); g != "" {
		c.errClass = "guardrail_unavailable"
		WriteError(ctx, fasthttp.StatusUnprocessableEntity, "invalid_request_error", codeUnavailable,
			"Guardrail `"+g+"` cannot inspect /v1/realtime sessions in this build and does not fail open.")
		return nil
	}
	if !p.admit(ctx, c) {
		return nil
	}
	c.target, c.attempts = c.plan, 1

	d := realtimeDial{url: target.URL, header: realtimeHeaders(h, &target, inProto, protos), tls: p.Realtime.TLS, timeout: realtimeDialTimeout}
	if t := c.plan.Timeout; t > 0 && t < d.timeout {
		d.timeout = t
	}
	dialStart := time.Now()
	up, rest, err := d.dial(context.Background())
	c.upstreamDur = time.Since(dialStart)
	if err != nil {
		p.realtimeDialFailed(ctx, c, err)
		return nil
	}
	s := &rtSession{p: p, c: c, up: up, idle: p.Realtime.IdleTimeout, max: p.Realtime.MaxSession}
	s.accept = wsAccept(key)
	s.proto = chooseSubprotocol(protos)
	s.fromUp.scan = wsScanner{usage: true}
	s.fromCaller.scan = wsScanner{masked: true}
	s.fromUp.buf = acquireRelayBuf()
	s.fromUp.n = copy(*s.fromUp.buf, rest)
	return s
}

// realtimeGuardrail returns the first guardrail attached to the session's
// model, key or team that must judge it but cannot: guardrails do not
// inspect Realtime events in this build, so each one decides by its
// fail-open setting (fail_open / output_fail_open, monitor mode passes) as
// a check that could not run. "" lets the session through.
func realtimeGuardrail(c *call) string {
	for _, a := range [...]any{c.plan.Guard, c.caller.Guard, c.caller.TeamGuard} {
		ch, _ := a.(*guard.Chain)
		if ch.Empty() {
			continue
		}
		for _, st := range ch.Input {
			if !st.G.FailOpen && !st.G.Monitor() {
				return st.G.Name
			}
		}
		for _, st := range ch.Output {
			if !st.G.OutputFailOpen && !st.G.Monitor() {
				return st.G.Name
			}
		}
	}
	return ""
}

// realtimeTarget returns the upstream session of c's direct model, false
// when its provider key's adapter has no Realtime surface.
func realtimeTarget(c *call) (adapters.RealtimeTarget, bool) {
	up := c.plan.Upstream
	if up == nil || up.Err != nil || up.Adapter == nil || c.plan.Model.IsEmbedding() {
		return adapters.RealtimeTarget{}, false
	}
	rt, ok := up.Adapter.(adapters.Realtime)
	if !ok {
		return adapters.RealtimeTarget{}, false
	}
	t, err := rt.RealtimeTarget(c.plan.UpstreamModel)
	return t, err == nil
}

// realtimeDialFailed answers an upgrade whose upstream session did not
// open: the upstream's own refusal is relayed (status and body), a
// transport failure is 502, a timeout 504.
func (p *Proxy) realtimeDialFailed(ctx *fasthttp.RequestCtx, c *call, err error) {
	var se *upstreamStatusError
	switch {
	case errors.As(err, &se) && se.status < 400:
		// Not a WebSocket server at that URL (200, a redirect, …).
		c.errClass = "upstream_status"
		WriteError(ctx, fasthttp.StatusBadGateway, "upstream_error", "upstream_not_websocket",
			"the upstream answered the Realtime upgrade with "+strconv.Itoa(se.status)+" instead of 101")
	case errors.As(err, &se):
		c.errClass = "upstream_status"
		ctx.Response.Reset()
		ctx.SetStatusCode(se.status)
		if len(se.body) == 0 {
			WriteError(ctx, se.status, "upstream_error", "", "upstream returned "+strconv.Itoa(se.status)+" "+fasthttp.StatusMessage(se.status))
			break
		}
		ct := se.contentType
		if ct == "" {
			ct = "application/json"
		}
		ctx.SetContentType(ct)
		ctx.SetBody(se.body)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		c.errClass = "upstream_timeout"
		WriteError(ctx, fasthttp.StatusGatewayTimeout, "upstream_error", "upstream_timeout", "the upstream did not open the Realtime session in time")
	default:
		c.errClass = "upstream_failed"
		WriteError(ctx, fasthttp.StatusBadGateway, "upstream_error", "upstream_unreachable", "cannot open the upstream Realtime session")
		if p.Logger != nil {
			p.Logger.Warn("realtime upstream dial failed", "model", c.plan.Alias, "provider_key", c.plan.Model.ProviderKeyName, "error", err.Error())
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// realtimeHeaders are the upgrade headers sent upstream besides the
// handshake's own: the provider credential, OpenAI-Beta (it selects the
// protocol version; a beta subprotocol from a browser becomes the header),
// and the caller's headers that forward_client_headers names — never the
// slot that carried the caller's gw key, never a sec-websocket-* name.
// default_headers do not apply on /v1/realtime (spec).
func realtimeHeaders(h *fasthttp.RequestHeader, t *adapters.RealtimeTarget, inProto bool, protos []byte) http.Header {
	out := http.Header{}
	if t.Forward != nil {
		authSlot, keySlot := !inProto && authn.HasAuthorization(h), !inProto && !authn.HasAuthorization(h) && authn.HasXAPIKey(h)
		for k, v := range h.All() {
			switch {
			case hasPrefixFold(k, secWSPrefix), bytes.EqualFold(k, hdrOpenAIBeta):
				continue
			case authSlot && bytes.EqualFold(k, []byte("authorization")), keySlot && bytes.EqualFold(k, []byte("x-api-key")):
				continue
			}
			if t.Forward(k) {
				out.Add(string(k), string(v))
			}
		}
	}
	if t.AuthHeader != "" {
		out.Set(t.AuthHeader, t.AuthValue)
	}
	if beta := h.PeekBytes(hdrOpenAIBeta); len(beta) > 0 {
		out.Set("OpenAI-Beta", string(beta))
	} else if hasSubprotocol(protos, protoBeta) {
		out.Set("OpenAI-Beta", "realtime=v1")
	}
	return out
}

// subprotocolKey returns the caller key of the subprotocol form
// `openai-insecure-api-key.<key>`.
func subprotocolKey(protos []byte) ([]byte, bool) {
	for len(protos) > 0 {
		var p []byte
		p, protos = nextToken(protos)
		if len(p) > len(protoKeyPrefix) && bytes.Equal(p[:len(protoKeyPrefix)], protoKeyPrefix) {
			return p[len(protoKeyPrefix):], true
		}
	}
	return nil, false
}

// chooseSubprotocol picks the subprotocol gw answers: `realtime` when
// offered (what OpenAI answers), else the beta marker; never the key-bearing
// one. WebSocket clients fail a handshake whose answer names no offered
// subprotocol when they offered some, so one of these is needed.
func chooseSubprotocol(protos []byte) string {
	switch {
	case hasSubprotocol(protos, protoRealtime):
		return "realtime"
	case hasSubprotocol(protos, protoBeta):
		return string(protoBeta)
	}
	return ""
}

func hasSubprotocol(protos, want []byte) bool {
	for len(protos) > 0 {
		var p []byte
		p, protos = nextToken(protos)
		if bytes.Equal(p, want) {
			return true
		}
	}
	return false
}

// nextToken splits the first comma-separated token (trimmed) off s.
func nextToken(s []byte) (tok, rest []byte) {
	if i := bytes.IndexByte(s, ','); i >= 0 {
		tok, rest = s[:i], s[i+1:]
	} else {
		tok = s
	}
	return bytes.TrimSpace(tok), rest
}

// headerToken reports whether comma-separated v holds tok (case-insensitive).
func headerToken(v, tok []byte) bool {
	for len(v) > 0 {
		var t []byte
		t, v = nextToken(v)
		if bytes.EqualFold(t, tok) {
			return true
		}
	}
	return false
}

// rtEnd is how a session ended: the usage record's status and error class,
// and the close frames gw itself sends to each side (0: none).
type rtEnd struct {
	name           string // gw_realtime_sessions_total{end}
	class          string
	status         int
	toCaller, toUp uint16
	reason         string
}

var (
	endClosed         = &rtEnd{name: "closed", status: fasthttp.StatusSwitchingProtocols}
	endCloseTimeout   = &rtEnd{name: "close_timeout", status: fasthttp.StatusSwitchingProtocols}
	endCallerGone     = &rtEnd{name: "client_gone", class: "client_gone", status: 499, toUp: wsCloseGoingAway, reason: "caller went away"}
	endUpstreamGone   = &rtEnd{name: "upstream_gone", class: "upstream_stream_error", status: fasthttp.StatusBadGateway, toCaller: wsCloseInternal, reason: "upstream connection lost"}
	endCallerProtocol = &rtEnd{name: "protocol_error", class: "protocol_error", status: fasthttp.StatusBadRequest, toCaller: wsCloseProtocol, toUp: wsCloseGoingAway, reason: "protocol error"}
	endUpProtocol     = &rtEnd{name: "upstream_protocol_error", class: "upstream_protocol_error", status: fasthttp.StatusBadGateway, toCaller: wsCloseInternal, toUp: wsCloseProtocol, reason: "upstream protocol error"}
	endIdle           = &rtEnd{name: "idle_timeout", class: "session_idle_timeout", status: fasthttp.StatusSwitchingProtocols, toCaller: wsCloseGoingAway, toUp: wsCloseGoingAway, reason: "session idle timeout"}
	endMaxSession     = &rtEnd{name: "max_session", class: "session_time_limit", status: fasthttp.StatusSwitchingProtocols, toCaller: wsCloseGoingAway, toUp: wsCloseGoingAway, reason: "session time limit"}
	endHijackFailed   = &rtEnd{name: "hijack_failed", class: "client_gone", status: 499}
	endShutdown       = &rtEnd{name: "shutdown", class: "shutdown", status: fasthttp.StatusSwitchingProtocols, toCaller: wsCloseGoingAway, toUp: wsCloseGoingAway, reason: "gateway shutting down"}
)

// rtLeg is one direction of a session.
type rtLeg struct {
	buf  *[]byte // pooled read buffer; [:n] holds bytes not yet relayed
	n    int
	scan wsScanner
	sent int64 // bytes written to the other side
}

// rtSession is one relayed Realtime session.
type rtSession struct {
	p      *Proxy
	c      *call
	caller net.Conn
	up     net.Conn
	accept string // Sec-WebSocket-Accept of the caller's key
	proto  string // subprotocol answered, "" for none

	fromCaller, fromUp rtLeg

	idle, max time.Duration
	opened    time.Time
	last      atomic.Int64 // unix nanos of the last data frame relayed
	claimed   atomic.Bool  // the hijack handler or its watchdog owns cleanup
	// callerClose and upClose hold the code of the close frame each side
	// sent (relayed to the other), 0 while none.
	callerClose, upClose atomic.Uint32

	mu     sync.Mutex
	end    *rtEnd
	timers []*time.Timer
}

// armHijackWatch cleans up if fasthttp never calls the hijack handler (it
// skips it when the connection broke while flushing earlier answers).
func (s *rtSession) armHijackWatch() {
	time.AfterFunc(realtimeHijackGrace, func() {
		if s.claimed.CompareAndSwap(false, true) {
			s.up.Close()
			releaseRelayBuf(s.fromUp.buf)
			s.end = endHijackFailed
			s.finish()
		}
	})
}

// run is the hijack handler: it answers 101 and relays until both legs end.
func (s *rtSession) run(conn net.Conn) {
	if !s.claimed.CompareAndSwap(false, true) {
		return
	}
	s.caller = conn
	s.register()
	defer s.unregister()
	s.opened = time.Now()
	s.last.Store(s.opened.UnixNano())
	rtActiveN.Add(1)
	defer rtActiveN.Add(-1)

	resp := make([]byte, 0, 192)
	resp = append(resp, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "...)
	resp = append(resp, s.accept...)
	if s.proto != "" {
		resp = append(resp, "\r\nSec-WebSocket-Protocol: "...)
		resp = append(resp, s.proto...)
	}
	resp = append(resp, "\r\n\r\n"...)
	_ = conn.SetDeadline(time.Time{})
	if _, err := conn.Write(resp); err != nil {
		s.up.Close()
		releaseRelayBuf(s.fromUp.buf)
		s.setEnd(endCallerGone)
		s.finish()
		return
	}
	s.c.ttfb = time.Since(s.c.start)
	if s.idle > 0 {
		s.addTimer(time.AfterFunc(s.idle, s.checkIdle))
	}
	if s.max > 0 {
		s.addTimer(time.AfterFunc(s.max, func() { s.stop(endMaxSession) }))
	}

	s.fromCaller.buf = acquireRelayBuf()
	done := make(chan struct{})
	go func() {
		s.pump(&s.fromCaller, conn, s.up, true)
		close(done)
	}()
	s.pump(&s.fromUp, s.up, conn, false)
	<-done

	s.mu.Lock()
	for _, t := range s.timers {
		t.Stop()
	}
	s.mu.Unlock()
	s.up.Close()
	releaseRelayBuf(s.fromCaller.buf)
	releaseRelayBuf(s.fromUp.buf)
	s.finish()
}

// pump relays the frames of one leg from src to dst until that leg's close
// frame is relayed, src fails, or the session is stopped. toUp is the
// caller-to-upstream leg.
func (s *rtSession) pump(l *rtLeg, src, dst net.Conn, toUp bool) {
	buf := *l.buf
	for {
		if l.n > 0 {
			frames := l.scan.frames
			k, ferr := l.scan.feed(buf[:l.n])
			if l.scan.closed {
				// Known before the close frame leaves, so a peer that hangs
				// up right after answering it is not taken for a failure.
				if toUp {
					s.callerClose.Store(uint32(l.scan.closeCode))
				} else {
					s.upClose.Store(uint32(l.scan.closeCode))
				}
			}
			if k > 0 {
				if _, err := dst.Write(buf[:k]); err != nil {
					if s.peerClosed(toUp) {
						return // dst closed first and hung up after its close frame
					}
					if toUp {
						s.stop(endUpstreamGone)
					} else {
						s.stop(endCallerGone)
					}
					return
				}
				l.sent += int64(k)
				if l.scan.frames != frames {
					s.last.Store(time.Now().UnixNano())
				}
				l.n = copy(buf, buf[k:l.n])
			}
			if l.scan.closed {
				// This side closed; the other side answers with its own
				// close frame (relayed by the other leg) within the grace.
				s.addTimer(time.AfterFunc(realtimeCloseGrace, func() { s.stop(endCloseTimeout) }))
				return
			}
			if ferr != nil {
				if toUp {
					s.stop(endCallerProtocol)
				} else {
					s.stop(endUpProtocol)
				}
				s.closeTo(l, dst, toUp)
				return
			}
			if l.n == len(buf) {
				panic(errWSHeaderTooLong) // a header or control frame is at most 141 bytes
			}
		}
		m, err := src.Read(buf[l.n:])
		l.n += m
		if err != nil && m == 0 {
			if code := s.peerClose(toUp); code != 0 && s.ended() == nil {
				// dst closed first and src hung up without answering:
				// answer dst's close in src's place, a normal end.
				s.echoClose(l, dst, toUp, code)
				return
			}
			if s.ended() == nil {
				if toUp {
					s.stop(endCallerGone)
				} else {
					s.stop(endUpstreamGone)
				}
			}
			s.closeTo(l, dst, toUp)
			return
		}
	}
}

// peerClose is the close code dst sent (the other leg relayed), 0 if none.
func (s *rtSession) peerClose(toUp bool) uint32 {
	if toUp {
		return s.upClose.Load()
	}
	return s.callerClose.Load()
}

func (s *rtSession) peerClosed(toUp bool) bool { return s.peerClose(toUp) != 0 }

// echoClose answers dst's close frame with the same code.
func (s *rtSession) echoClose(l *rtLeg, dst net.Conn, toUp bool, code uint32) {
	if !l.scan.atBoundary() || code == wsCloseNoStatus {
		return
	}
	s.writeClose(dst, uint16(code), "", toUp)
}

// closeTo writes gw's close frame for the session's end to dst when the
// leg stopped on a frame boundary (a close frame cannot go inside a frame).
func (s *rtSession) closeTo(l *rtLeg, dst net.Conn, toUp bool) {
	e := s.ended()
	if e == nil || !l.scan.atBoundary() {
		return
	}
	code := e.toCaller
	if toUp {
		code = e.toUp
	}
	if code == 0 {
		return
	}
	s.writeClose(dst, code, e.reason, toUp)
}

// writeClose writes one close frame of gw's own (masked toward the upstream).
func (s *rtSession) writeClose(dst net.Conn, code uint16, reason string, toUp bool) {
	var frame [2 + 4 + 125]byte
	var key [4]byte
	if toUp {
		binaryPutUint32(key[:], rand.Uint32())
	}
	f := appendCloseFrame(frame[:0], code, reason, toUp, key)
	_ = dst.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = dst.Write(f)
}

func binaryPutUint32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}

// stop ends the session for e (the first reason wins) and wakes both legs.
func (s *rtSession) stop(e *rtEnd) {
	if !s.setEnd(e) {
		return
	}
	// The upstream leg is stopped first: once the caller leg wakes it writes
	// gw's close upstream, and the upstream's answer (its own close, without
	// gw's reason) must not be read and relayed to the caller in place of
	// gw's close frame.
	now := time.Now()
	_ = s.up.SetReadDeadline(now)
	_ = s.caller.SetReadDeadline(now)
	// A leg stuck writing to a peer that reads nothing is cut after a grace.
	s.addTimer(time.AfterFunc(realtimeCloseGrace, func() {
		past := time.Unix(1, 0)
		_ = s.caller.SetDeadline(past)
		_ = s.up.SetDeadline(past)
	}))
}

func (s *rtSession) setEnd(e *rtEnd) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.end != nil {
		return false
	}
	s.end = e
	return true
}

func (s *rtSession) ended() *rtEnd {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end
}

func (s *rtSession) addTimer(t *time.Timer) {
	s.mu.Lock()
	s.timers = append(s.timers, t)
	s.mu.Unlock()
}

// checkIdle stops an idle session or re-arms itself for the time left.
func (s *rtSession) checkIdle() {
	left := time.Duration(s.last.Load()+int64(s.idle)) - time.Duration(time.Now().UnixNano())
	if left <= 0 {
		s.stop(endIdle)
		return
	}
	s.addTimer(time.AfterFunc(left, s.checkIdle))
}

// finish settles the session's call: limits, metrics, access log, one
// usage record with the summed response.done usage and its cost.
func (s *rtSession) finish() {
	c, p := s.c, s.p
	e := s.end
	if e == nil {
		e = endClosed
	}
	up, in := &s.fromUp.scan, &s.fromCaller.scan
	if up.events > 0 {
		c.usage, c.haveUsage = up.sum, true
	}
	if up.unread > 0 {
		rtUsageUnread.Add(int(up.unread))
	}
	c.status, c.errClass = e.status, e.class
	c.respBytes = int(s.fromUp.sent)
	rtFramesIn.Add(int(in.frames))
	rtFramesOut.Add(int(up.frames))
	rtBytesIn.Add(int(s.fromCaller.sent))
	rtBytesOut.Add(int(s.fromUp.sent))
	if !s.opened.IsZero() {
		rtDuration.UpdateDuration(s.opened)
	}
	rtEndCounter(e.name).Inc()

	if p.Limiter != nil {
		p.settleLimits(c)
	}
	countRequest(c.plan.Alias, c.status)
	now := time.Now()
	if p.Log != nil {
		p.Log.line(c, []byte(fasthttp.MethodGet), []byte(pathRealtime), c.status, int(s.fromCaller.sent), true)
	}
	if p.Usage != nil {
		p.emitUsage(c, true, int(s.fromCaller.sent), now)
	}
	releaseCall(c)
}

// rtSessions are the open sessions (hijacked connections the HTTP server
// no longer tracks), for CloseRealtime.
var rtSessions struct {
	mu   sync.Mutex
	open map[*rtSession]struct{}
	wg   sync.WaitGroup
}

func (s *rtSession) register() {
	rtSessions.mu.Lock()
	if rtSessions.open == nil {
		rtSessions.open = map[*rtSession]struct{}{}
	}
	rtSessions.open[s] = struct{}{}
	rtSessions.wg.Add(1)
	rtSessions.mu.Unlock()
}

func (s *rtSession) unregister() {
	rtSessions.mu.Lock()
	delete(rtSessions.open, s)
	rtSessions.mu.Unlock()
	rtSessions.wg.Done()
}

// CloseRealtime closes every open /v1/realtime session with 1001 on both
// sides (gw is shutting down) and waits up to grace for them to finish
// (usage records written). Sessions live on hijacked connections, which the
// HTTP server's own shutdown does not see.
func CloseRealtime(grace time.Duration) {
	rtSessions.mu.Lock()
	for s := range rtSessions.open {
		s.stop(endShutdown)
	}
	rtSessions.mu.Unlock()
	done := make(chan struct{})
	go func() { rtSessions.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
	}
}

// relayBufPool holds the legs' read buffers.
var relayBufPool = sync.Pool{New: func() any { b := make([]byte, realtimeBufSize); return &b }}

func acquireRelayBuf() *[]byte { return relayBufPool.Get().(*[]byte) }

func releaseRelayBuf(b *[]byte) {
	if b != nil {
		relayBufPool.Put(b)
	}
}
