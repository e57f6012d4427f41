// Package gate holds what the agent-traffic endpoints outside the model
// pipeline share (passthrough routes, A2A agents): the caller's identity
// with an optional anonymous principal, single-'*' grant globs, the
// caller-facing error envelope, per-target request metrics and the
// unbuffered relay of an upstream body.
package gate

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/puzpuzpuz/xsync/v3"
	"github.com/valyala/fasthttp"

	"gw/adapters/upstream"
	"gw/admin"
	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/authn"
	"gw/sse/rawjson"
)

// WriteError writes gw's caller-facing envelope
// {"error":{"type","code","message"}}. message must hold no credential
// and no user content.
func WriteError(ctx *fasthttp.RequestCtx, status int, typ, code, message string) {
	ctx.Response.Reset()
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	b := make([]byte, 0, 64+len(message))
	b = append(b, `{"error":{"type":`...)
	b = rawjson.AppendQuote(b, typ)
	b = append(b, `,"code":`...)
	b = rawjson.AppendQuote(b, code)
	b = append(b, `,"message":`...)
	b = rawjson.AppendQuote(b, message)
	b = append(b, "}}\n"...)
	ctx.SetBody(b)
}

// Authenticate resolves the caller: the presented caller key or JWT
// (exactly as model traffic), or, when the request carries no credential
// at all, the anonymous principal anon (nil: none, 401). A presented
// credential is always judged as a gw credential, never handed to anon.
// It writes the 401 itself and returns nil.
func Authenticate(ctx *fasthttp.RequestCtx, snap *snapshot.Snapshot, now time.Time, anon *resources.APIKey) *snapshot.Caller {
	h := &ctx.Request.Header
	if anon != nil && len(authn.Credential(h)) == 0 && !authn.HasAuthorization(h) && !authn.HasXAPIKey(h) {
		c := snap.CallersByName[anon.DisplayName]
		switch {
		case c == nil:
			// Unreachable for a loaded file (the loader resolves it).
		case c.Key.Disabled:
			WriteError(ctx, fasthttp.StatusUnauthorized, "invalid_request_error", "key_disabled", "the route's anonymous key is disabled")
			return nil
		case !c.Key.ExpiresAt.IsZero() && !now.Before(c.Key.ExpiresAt):
			WriteError(ctx, fasthttp.StatusUnauthorized, "invalid_request_error", "key_expired", "the route's anonymous key has expired")
			return nil
		default:
			return c
		}
	}
	c, fail := authn.Authenticate(h, snap, now)
	if fail != nil {
		WriteError(ctx, fasthttp.StatusUnauthorized, "invalid_request_error", fail.Code, fail.Message)
		return nil
	}
	return c
}

// Granted reports whether name matches one of globs (allowed_agents,
// allowed_routes): an exact name, or a pattern with one '*' standing for
// any run of characters. No entry means no access (spec "Authentication" 4).
func Granted(globs []string, name string) bool {
	for _, g := range globs {
		i := strings.IndexByte(g, '*')
		if i < 0 {
			if g == name {
				return true
			}
			continue
		}
		pre, suf := g[:i], g[i+1:]
		if len(name) >= len(pre)+len(suf) && strings.HasPrefix(name, pre) && strings.HasSuffix(name, suf) {
			return true
		}
	}
	return false
}

// Counters caches the handles of one labelled request counter family
// (`<name>{<label>="<target>",status="<code>"}`) so that a request never
// builds a metric name twice.
type Counters struct {
	name, label string
	m           *xsync.MapOf[counterKey, *metrics.Counter]
}

type counterKey struct {
	target string
	status int
}

// NewCounters returns the cache of family name with the target label label.
func NewCounters(name, label string) *Counters {
	return &Counters{name: name, label: label, m: xsync.NewMapOf[counterKey, *metrics.Counter]()}
}

// Inc counts one request of target answered with status.
func (cs *Counters) Inc(target string, status int) {
	k := counterKey{target, status}
	if c, ok := cs.m.Load(k); ok {
		c.Inc()
		return
	}
	// Slow path - first request of this (target, status).
	c, _ := cs.m.LoadOrCompute(k, func() *metrics.Counter {
		return metrics.GetOrCreateCounter(cs.name + `{` + cs.label + `="` + admin.EscapeLabelValue(target) +
			`",status="` + strconv.Itoa(status) + `"}`)
	})
	c.Inc()
}

// Relay copies an upstream body to the caller as it arrives: every read
// is written and flushed at once, so nothing is held back (streams,
// downloads). gap bounds the wait for each read (0: none); resp must come
// from an adapters/upstream Client for the bound to apply. It returns the
// bytes written and the first error (nil at the body's end). buf is the
// copy buffer.
func Relay(w *bufio.Writer, body io.Reader, resp *fasthttp.Response, gap time.Duration, buf []byte) (int64, error) {
	var n int64
	for {
		if gap > 0 {
			upstream.SetReadDeadline(resp, time.Now().Add(gap))
		}
		k, err := body.Read(buf)
		if k > 0 {
			if _, werr := w.Write(buf[:k]); werr != nil {
				return n, werr
			}
			if werr := w.Flush(); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// CopyResponseHeaders copies the upstream's status and end-to-end headers
// onto the caller's response; framing and hop-by-hop headers are the
// listener's own.
func CopyResponseHeaders(dst *fasthttp.ResponseHeader, src *fasthttp.ResponseHeader) {
	dst.SetStatusCode(src.StatusCode())
	for k, v := range src.All() {
		if HopByHop(k) {
			continue
		}
		dst.AddBytesKV(k, v)
	}
}

// HopByHop reports header names a proxy never relays (RFC 9110 7.6.1,
// plus the framing headers the relaying side sets itself).
func HopByHop(k []byte) bool {
	switch len(k) {
	case 2:
		return strings.EqualFold(string(k), "te")
	case 4:
		return strings.EqualFold(string(k), "host")
	case 7:
		return strings.EqualFold(string(k), "trailer") || strings.EqualFold(string(k), "upgrade")
	case 10:
		return strings.EqualFold(string(k), "connection") || strings.EqualFold(string(k), "keep-alive")
	case 14:
		return strings.EqualFold(string(k), "content-length")
	case 17:
		return strings.EqualFold(string(k), "transfer-encoding")
	case 16:
		return strings.EqualFold(string(k), "proxy-connection")
	case 18:
		return strings.EqualFold(string(k), "proxy-authenticate")
	case 19:
		return strings.EqualFold(string(k), "proxy-authorization")
	}
	return false
}

// Status maps an upstream call error to the caller's status: 504 when the
// upstream timed out, 502 otherwise (spec "Errors").
func Status(err error) (int, string) {
	if upstream.IsTimeout(err) {
		return fasthttp.StatusGatewayTimeout, "upstream_timeout"
	}
	return fasthttp.StatusBadGateway, "upstream_error"
}
