package edge

import (
	"bytes"
	"net/netip"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/snapshot"
)

var (
	hdrAuthorization = []byte("Authorization")
	hdrXAPIKey       = []byte("x-api-key")
	bearerPrefix     = []byte("bearer ")
)

// callerKey returns the presented caller key from `Authorization: Bearer` or
// `x-api-key`. The slice aliases the request header; it must not be logged.
func callerKey(h *fasthttp.RequestHeader) []byte {
	if v := h.PeekBytes(hdrAuthorization); len(v) > len(bearerPrefix) && asciiEqualFold(v[:len(bearerPrefix)], bearerPrefix) {
		return bytes.TrimSpace(v[len(bearerPrefix):])
	}
	return bytes.TrimSpace(h.PeekBytes(hdrXAPIKey))
}

func asciiEqualFold(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != b[i] {
			return false
		}
	}
	return true
}

// authenticate resolves the caller or writes the 401 and returns nil.
// Messages never echo the presented key.
func authenticate(ctx *fasthttp.RequestCtx, snap *snapshot.Snapshot, now time.Time, writeError errorWriter) *snapshot.Caller {
	key := callerKey(&ctx.Request.Header)
	if len(key) == 0 {
		writeError(ctx, fasthttp.StatusUnauthorized, "invalid_request_error", "missing_api_key",
			"You didn't provide an API key. Send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'.")
		return nil
	}
	c := snap.Lookup(key)
	switch {
	case c == nil:
		writeError(ctx, fasthttp.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
		return nil
	case c.Key.Disabled:
		writeError(ctx, fasthttp.StatusUnauthorized, "invalid_request_error", "api_key_disabled", "This API key is disabled.")
		return nil
	case !c.Key.ExpiresAt.IsZero() && !now.Before(c.Key.ExpiresAt):
		writeError(ctx, fasthttp.StatusUnauthorized, "invalid_request_error", "api_key_expired", "This API key has expired.")
		return nil
	}
	return c
}

// RealIP resolves the client address: the TCP peer, or — when the peer is a
// trusted proxy — the right-most address in the real-IP header that is not
// itself a trusted proxy.
type RealIP struct {
	Trusted []netip.Prefix
	Header  []byte
}

// ClientIP returns the client address; ok is false when it cannot be resolved.
func (r *RealIP) ClientIP(ctx *fasthttp.RequestCtx) (netip.Addr, bool) {
	peer, ok := netip.AddrFromSlice(ctx.RemoteIP())
	if !ok {
		return netip.Addr{}, false
	}
	peer = peer.Unmap()
	if len(r.Trusted) == 0 || !r.trusted(peer) {
		return peer, true
	}
	v := ctx.Request.Header.PeekBytes(r.Header)
	for len(v) > 0 {
		i := bytes.LastIndexByte(v, ',')
		part := bytes.TrimSpace(v[i+1:])
		v = v[:max(i, 0)]
		if i < 0 {
			v = nil
		}
		a, err := netip.ParseAddr(string(part))
		if err != nil {
			return netip.Addr{}, false // malformed forwarded address: unknown client
		}
		a = a.Unmap()
		if !r.trusted(a) {
			return a, true
		}
	}
	return peer, true
}

func (r *RealIP) trusted(a netip.Addr) bool {
	for _, p := range r.Trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// cidrAllowed applies a model's allowed_cidrs: empty allows all; when set, an
// unknown client address is rejected.
func cidrAllowed(list []netip.Prefix, ip netip.Addr, ok bool) bool {
	if len(list) == 0 {
		return true
	}
	if !ok {
		return false
	}
	for _, p := range list {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
