// Package authn is the first stage of the request pipeline: it turns the
// credential a caller presents into the compiled caller (grants, limits,
// guardrail scopes, usage attribution). A caller key is looked up by its
// SHA-256; a credential shaped like a JWT that is no caller key is verified
// as a token of an oidc_providers entry and mapped to its caller key
// (jwt_subject, then claim_mappings). Both paths end at the same caller.
package authn

import (
	"bytes"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"

	"gw/admin/snapshot"
	"gw/edge/authn/jwks"
)

// Failure is why a request is not authenticated: an error code and a
// message for the caller's envelope (401). Messages never echo what was
// presented, nor a claim value. Each failure is counted by
// gw_auth_failures_total{reason=Code}.
type Failure struct {
	Code    string
	Message string
	count   *metrics.Counter
}

func newFailure(code, msg string) *Failure {
	return &Failure{Code: code, Message: msg, count: metrics.GetOrCreateCounter(`gw_auth_failures_total{reason="` + code + `"}`)}
}

// Failures, shared: authentication allocates nothing.
var (
	Missing  = newFailure("missing_api_key", "You didn't provide an API key. Send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'.")
	Invalid  = newFailure("invalid_api_key", "Incorrect API key provided.")
	Disabled = newFailure("api_key_disabled", "This API key is disabled.")
	Expired  = newFailure("api_key_expired", "This API key has expired.")
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
	key, _, _ := Presented(h)
	return key
}

// Presented is Credential, and whether the request carries each of the two
// credential headers (an adapter may forward the caller's own), from one
// lookup of each: a header lookup normalises its name and scans the
// request's headers, which on the buffered path cost as much as the
// caller-key check itself.
func Presented(h *fasthttp.RequestHeader) (key []byte, hasAuthorization, hasXAPIKey bool) {
	auth, xkey := h.PeekBytes(hdrAuthorization), h.PeekBytes(hdrXAPIKey)
	if len(auth) > len(bearerPrefix) && asciiEqualFold(auth[:len(bearerPrefix)], bearerPrefix) {
		key = bytes.TrimSpace(auth[len(bearerPrefix):])
	} else {
		key = bytes.TrimSpace(xkey)
	}
	return key, len(auth) > 0, len(xkey) > 0
}

// Options tune an Authenticator. Zero values take the defaults.
type Options struct {
	// CacheEntries bounds the verified-token cache (default 16384).
	CacheEntries int
	// CacheMaxTTL caps how long a verified token is served from the cache,
	// whatever its exp (default 1 hour).
	CacheMaxTTL time.Duration
	// JWKS tunes signing-key fetching.
	JWKS jwks.Options
}

// Authenticator holds the verification state that outlives snapshots: the
// JWKS providers' signing keys and the verified-token cache.
type Authenticator struct {
	// Keys are the JWKS providers' key sets, by provider identity.
	Keys   *jwks.Registry
	cache  *tokenCache
	maxTTL time.Duration
}

// New returns an Authenticator.
func New(opt Options) *Authenticator {
	if opt.CacheEntries <= 0 {
		opt.CacheEntries = 16384
	}
	if opt.CacheMaxTTL <= 0 {
		opt.CacheMaxTTL = time.Hour
	}
	return &Authenticator{Keys: jwks.NewRegistry(opt.JWKS), cache: newTokenCache(opt.CacheEntries), maxTTL: opt.CacheMaxTTL}
}

// Default is the process's Authenticator, used by Authenticate. It starts no
// goroutine and fetches nothing until a token names a JWKS provider.
var Default = New(Options{})

// Authenticate resolves the caller of a request at time now with Default,
// or says why it cannot.
func Authenticate(h *fasthttp.RequestHeader, snap *snapshot.Snapshot, now time.Time) (*snapshot.Caller, *Failure) {
	return Default.Authenticate(h, snap, now)
}

// Authenticate resolves the caller of a request at time now, or says why
// it cannot. Caller keys and cached tokens allocate nothing.
func (a *Authenticator) Authenticate(h *fasthttp.RequestHeader, snap *snapshot.Snapshot, now time.Time) (*snapshot.Caller, *Failure) {
	return a.AuthenticateCredential(Credential(h), snap, now)
}

// AuthenticateCredential resolves the caller of a credential presented
// elsewhere than the two headers (the Realtime WebSocket subprotocol form,
// `openai-insecure-api-key.<key>`) exactly as Authenticate does.
func (a *Authenticator) AuthenticateCredential(key []byte, snap *snapshot.Snapshot, now time.Time) (*snapshot.Caller, *Failure) {
	if len(key) == 0 {
		return fail(Missing)
	}
	token := snap.JWT != nil && snap.JWT.Providers > 0 && looksLikeJWT(key)
	if token {
		// Fast path - a token verified before under this snapshot. Entries
		// are made only after the caller-key lookup missed for the same
		// generation, so a hit is never a caller key.
		if c := a.cache.get(key, snap.JWT.Gen, now.UnixNano()); c != nil {
			return checkKey(c, now)
		}
	}
	c := snap.Lookup(key)
	if c == nil {
		if token {
			// Slow path - verify the token.
			return a.verify(key, snap, now)
		}
		return fail(Invalid)
	}
	return checkKey(c, now)
}

// checkKey: a disabled or expired key is 401 however it was reached.
func checkKey(c *snapshot.Caller, now time.Time) (*snapshot.Caller, *Failure) {
	switch {
	case c.Key.Disabled:
		return fail(Disabled)
	case !c.Key.ExpiresAt.IsZero() && !now.Before(c.Key.ExpiresAt):
		return fail(Expired)
	}
	return c, nil
}

func fail(f *Failure) (*snapshot.Caller, *Failure) {
	f.count.Inc()
	return nil, f
}

// looksLikeJWT reports a compact JWS: three dot-separated segments, the
// first the base64url of a JSON object ("ey" encodes `{"`).
func looksLikeJWT(b []byte) bool {
	if len(b) < 8 || b[0] != 'e' || b[1] != 'y' {
		return false
	}
	i := bytes.IndexByte(b, '.')
	if i < 0 {
		return false
	}
	j := bytes.IndexByte(b[i+1:], '.')
	if j <= 0 {
		return false
	}
	return bytes.IndexByte(b[i+1+j+1:], '.') < 0
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
