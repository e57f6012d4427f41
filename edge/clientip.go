package edge

import (
	"bytes"
	"net/netip"

	"github.com/valyala/fasthttp"
)

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
