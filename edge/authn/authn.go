// Package authn is the first stage of the request pipeline: it turns the
// credential a caller presents into the compiled caller (grants, limits,
// guardrail scopes, usage attribution). Caller keys are looked up by their
// SHA-256; JWT/OIDC verification will end at the same caller.
package authn

import (
	"bytes"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/snapshot"
)

// Failure is why a request is not authenticated: an error code and a
// message for the caller's envelope (401). Messages never echo what was
// presented.
type Failure struct {
	Code    string
	Message string
}

// Failures, shared: authentication allocates nothing.
var (
	Missing  = &Failure{"missing_api_key", "You didn't provide an API key. Send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'."}
	Invalid  = &Failure{"invalid_api_key", "Incorrect API key provided."}
	Disabled = &Failure{"api_key_disabled", "This API key is disabled."}
	Expired  = &Failure{"api_key_expired", "This API key has expired."}
)

var (
	hdrAuthorization = []byte("Authorization")
	hdrXAPIKey       = []byte("x-api-key")
	bearerPrefix     = []byte("bearer ")
)

// Credential returns the presented credential from `Authorization: Bearer`
// or `x-api-key`. The slice aliases the request header; it must not be
// logged.
func Credential(h *fasthttp.RequestHeader) []byte {
	if v := h.PeekBytes(hdrAuthorization); len(v) > len(bearerPrefix) && asciiEqualFold(v[:len(bearerPrefix)], bearerPrefix) {
		return bytes.TrimSpace(v[len(bearerPrefix):])
	}
	return bytes.TrimSpace(h.PeekBytes(hdrXAPIKey))
}

// Authenticate resolves the caller of a request at time now, or says why
// it cannot.
func Authenticate(h *fasthttp.RequestHeader, snap *snapshot.Snapshot, now time.Time) (*snapshot.Caller, *Failure) {
	key := Credential(h)
	if len(key) == 0 {
		return nil, Missing
	}
	c := snap.Lookup(key)
	switch {
	case c == nil:
		return nil, Invalid
	case c.Key.Disabled:
		return nil, Disabled
	case !c.Key.ExpiresAt.IsZero() && !now.Before(c.Key.ExpiresAt):
		return nil, Expired
	}
	return c, nil
}

// HasAuthorization reports whether the request carries Authorization (an
// adapter may forward the caller's own credential slots).
func HasAuthorization(h *fasthttp.RequestHeader) bool { return len(h.PeekBytes(hdrAuthorization)) > 0 }

// HasXAPIKey reports whether the request carries x-api-key.
func HasXAPIKey(h *fasthttp.RequestHeader) bool { return len(h.PeekBytes(hdrXAPIKey)) > 0 }

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
