package authn

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/valyala/fasthttp"
)

func cachedSetup(b testing.TB) (*Authenticator, *fasthttp.RequestHeader, func() (ok bool)) {
	keys(b)
	rs := signer{"rsa-1", "RS256", testKeys.rsa}
	d := newIdP(b, rs)
	s := jwtSnap(b, d.url())
	a := testAuth(b)
	now := time.Now()
	tok := sign(b, rs, claimsAt(now, d.url(), jwt.MapClaims{"sub": "alice", "scope": "llm", "tenant": "acme", "org": map[string]any{"region": "eu"}}))
	var h fasthttp.RequestHeader
	h.Set("Authorization", "Bearer "+tok)
	if c, f := a.Authenticate(&h, s, now); f != nil || c == nil {
		b.Fatalf("first verification: %v", f)
	}
	return a, &h, func() bool { c, _ := a.Authenticate(&h, s, now); return c != nil }
}

// BenchmarkAuthenticateCachedToken: a repeat token (target ≤ 1 µs, 0 allocs).
func BenchmarkAuthenticateCachedToken(b *testing.B) {
	_, _, auth := cachedSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		if !auth() {
			b.Fatal("rejected")
		}
	}
}

func BenchmarkAuthenticateCachedTokenParallel(b *testing.B) {
	_, _, auth := cachedSetup(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !auth() {
				b.Fatal("rejected")
			}
		}
	})
}

// benchFirst measures a first verification (parse, signature, claims,
// mapping) with keys already fetched: the cost of a token gw has not seen.
func benchFirst(b *testing.B, s signer) {
	d := newIdP(b, s)
	snap := jwtSnap(b, d.url())
	a := testAuth(b)
	now := time.Now()
	tok := []byte(sign(b, s, claimsAt(now, d.url(), jwt.MapClaims{"sub": "alice", "scope": "llm", "tenant": "acme", "org": map[string]any{"region": "eu"}})))
	b.ReportAllocs()
	for b.Loop() {
		p, claims, f := a.Verify(tok, snap, now)
		if f != nil || snap.ResolveJWT(p, claims) == nil {
			b.Fatal("rejected")
		}
	}
}

func BenchmarkVerifyFirstRS256(b *testing.B) {
	keys(b)
	benchFirst(b, signer{"rsa-1", "RS256", testKeys.rsa})
}

func BenchmarkVerifyFirstES256(b *testing.B) {
	keys(b)
	benchFirst(b, signer{"ec-1", "ES256", testKeys.p256})
}

func BenchmarkVerifyFirstEdDSA(b *testing.B) {
	keys(b)
	benchFirst(b, signer{"ed-1", "EdDSA", testKeys.ed})
}

func BenchmarkVerifyFirstHS256(b *testing.B) {
	snap := jwtSnap(b, "http://127.0.0.1:1")
	a := testAuth(b)
	now := time.Now()
	tok := []byte(signHMAC(b, "HS256", secretA, jwt.MapClaims{"sub": "runner", "exp": now.Add(time.Hour).Unix()}))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, f := a.Verify(tok, snap, now); f != nil {
			b.Fatal(f.Code)
		}
	}
}
