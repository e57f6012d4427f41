package edge

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// Back-off headers: when gw answers with an upstream's error status, the
// headers that tell a client when to retry travel with it, so SDKs back
// off as the provider asked (OpenAI's and Anthropic's SDKs read
// Retry-After, retry-after-ms and the rate-limit families).

var (
	hdrRetryAfter   = []byte("retry-after")
	hdrRetryAfterMs = []byte("retry-after-ms")
	prefRateLimit   = []byte("x-ratelimit-")
	prefAnthropicRL = []byte("anthropic-ratelimit-")
)

// backoffHeader reports whether an upstream response header is one to relay.
func backoffHeader(name []byte) bool {
	return bytes.EqualFold(name, hdrRetryAfter) || bytes.EqualFold(name, hdrRetryAfterMs) ||
		hasPrefixFold(name, prefRateLimit) || hasPrefixFold(name, prefAnthropicRL)
}

func hasPrefixFold(s, prefix []byte) bool {
	return len(s) >= len(prefix) && bytes.EqualFold(s[:len(prefix)], prefix)
}

// appendBackoff appends h's back-off headers to dst as name NUL value NUL
// pairs (error path only).
func appendBackoff(dst []byte, h *fasthttp.ResponseHeader) []byte {
	for k, v := range h.All() {
		if backoffHeader(k) {
			dst = append(append(append(append(dst, k...), 0), v...), 0)
		}
	}
	return dst
}

// setBackoff sets the pairs of appendBackoff on the caller's response.
func setBackoff(ctx *fasthttp.RequestCtx, pairs []byte) {
	for len(pairs) > 0 {
		k := bytes.IndexByte(pairs, 0)
		if k < 0 {
			return
		}
		v := bytes.IndexByte(pairs[k+1:], 0)
		if v < 0 {
			return
		}
		ctx.Response.Header.SetBytesKV(pairs[:k], pairs[k+1:k+1+v])
		pairs = pairs[k+1+v+1:]
	}
}
