package authn

import (
	"context"
	"encoding/base64"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/valyala/fasthttp"

	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/authn/jwks"
)

const (
	secretA = "shared-secret-a-at-least-32-bytes-long!!"
	secretB = "shared-secret-b-at-least-32-bytes-long!!"
	secretN = "named-issuer-secret-at-least-32-bytes!!!"
)

// jwtFile: one discovery provider with every check, one jwks_uri provider
// with a dotted identity claim, two issuer-less shared-secret providers and
// one with an issuer.
const jwtFile = `_format_version: "1"
api_keys:
  - {display_name: alice, key_env: K_ALICE, allowed_models: ["*"], jwt_provider: idp, jwt_subject: alice}
  - {display_name: bob-off, key_env: K_BOB, allowed_models: ["*"], jwt_provider: idp, jwt_subject: bob, disabled: true}
  - {display_name: carol-old, key_env: K_CAROL, allowed_models: ["*"], jwt_provider: idp, jwt_subject: carol, expires_at: "2020-01-01T00:00:00Z"}
  - {display_name: eng, key_env: K_ENG, allowed_models: ["*"]}
  - {display_name: admins, key_env: K_ADM, allowed_models: ["*"]}
  - {display_name: ops, key_env: K_OPS, allowed_models: ["*"]}
  - {display_name: direct-user, key_env: K_DIRECT, allowed_models: ["*"], jwt_provider: direct, jwt_subject: dana@example.com}
  - {display_name: runner-a, key_env: K_RA, allowed_models: ["*"], jwt_provider: shared-a, jwt_subject: runner}
  - {display_name: runner-b, key_env: K_RB, allowed_models: ["*"], jwt_provider: shared-b, jwt_subject: runner}
  - {display_name: named, key_env: K_NAMED, allowed_models: ["*"], jwt_provider: named-hmac, jwt_subject: svc}
  - {display_name: jwt-shaped-key, key_env: K_SHAPED, allowed_models: ["*"]}
oidc_providers:
  - name: idp
    issuer: ${ISS}
    audiences: [gw, gw-alt]
    required_scopes: [llm]
    bound_claims: {tenant: acme, org.region: [eu, us]}
    leeway_secs: 30
  - name: direct
    issuer: https://direct.example.com
    audiences: [gw]
    jwks_uri: ${ISS}/jwks
    identity_claim: user.email
  - name: shared-a
    hmac_secret: ` + secretA + `
  - name: shared-b
    hmac_secret: ` + secretB + `
  - name: named-hmac
    issuer: named-issuer
    hmac_secret: ` + secretN + `
    audiences: [gw]
claim_mappings:
  - name: b-eng
    jwt_provider: idp
    priority: 5
    match: [{claim: groups, op: contains, values: [eng]}]
    resolve: {api_key: eng}
  - name: a-admins
    jwt_provider: idp
    priority: 5
    match: [{claim: groups, op: contains, values: [admins, root]}]
    resolve: {api_key: admins}
  - name: z-ops-first
    jwt_provider: idp
    priority: 1
    match:
      - {claim: groups, op: contains, values: [ops]}
      - {claim: profile.level, op: exact, values: [senior]}
    resolve: {api_key: ops}
  - name: off
    jwt_provider: idp
    priority: 0
    enabled: false
    match: [{claim: groups, op: contains, values: [eng]}]
    resolve: {api_key: ops}
`

// shapedKey is a caller key that looks like a JWT: the caller-key lookup wins.
const shapedKey = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"

func jwtSnap(tb testing.TB, iss string) *snapshot.Snapshot {
	tb.Helper()
	env := map[string]string{"ISS": iss, "K_ALICE": "ka", "K_BOB": "kb", "K_CAROL": "kc", "K_ENG": "ke", "K_ADM": "kad",
		"K_OPS": "ko", "K_DIRECT": "kd", "K_RA": "kra", "K_RB": "krb", "K_NAMED": "kn", "K_SHAPED": shapedKey}
	r := resources.Load([]byte(jwtFile), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err := r.Err(); err != nil {
		tb.Fatal(err)
	}
	s, err := snapshot.Compile(r.Resources, snapshot.DefaultOptions())
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func testAuth(tb testing.TB) *Authenticator {
	a := New(Options{JWKS: jwks.Options{FetchTimeout: 3 * time.Second, MinMissInterval: 50 * time.Millisecond}})
	tb.Cleanup(a.Keys.Close)
	return a
}

func authWith(a *Authenticator, s *snapshot.Snapshot, cred string, now time.Time) (*snapshot.Caller, *Failure) {
	var h fasthttp.RequestHeader
	h.Set("Authorization", "Bearer "+cred)
	return a.Authenticate(&h, s, now)
}

var (
	sRS256 = signer{"rsa-1", "RS256", nil}
	sPS384 = signer{"rsa-1", "PS384", nil}
	sES256 = signer{"ec-256", "ES256", nil}
	sES384 = signer{"ec-384", "ES384", nil}
	sES512 = signer{"ec-521", "ES512", nil}
	sEdDSA = signer{"ed-1", "EdDSA", nil}
)

func testSigners(tb testing.TB) (rs, ps, es256, es384, es512, ed signer) {
	keys(tb)
	rs, ps, es256, es384, es512, ed = sRS256, sPS384, sES256, sES384, sES512, sEdDSA
	rs.priv, ps.priv, es256.priv, es384.priv, es512.priv, ed.priv = testKeys.rsa, testKeys.rsa, testKeys.p256, testKeys.p384, testKeys.p521, testKeys.ed
	// The JWK of rsa-1 names no alg, so RS* and PS* both verify with it.
	rs.alg = ""
	return
}

func TestJWTChecks(t *testing.T) {
	rs, ps, es256, es384, es512, ed := testSigners(t)
	d := newIdP(t, rs, es256, es384, es512, ed)
	rs.alg = "RS256"
	iss := d.url()
	s := jwtSnap(t, iss)
	a := testAuth(t)
	now := time.Now()
	good := jwt.MapClaims{"sub": "alice", "scope": "read llm", "tenant": "acme", "org": map[string]any{"region": "eu"}}
	with := func(extra jwt.MapClaims) jwt.MapClaims {
		c := claimsAt(now, iss, good)
		for k, v := range extra {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	forged := rs
	forged.priv = testKeys.rsa2
	noneTok := b64(`{"alg":"none","typ":"JWT"}`) + "." + b64(`{"iss":"`+iss+`","sub":"alice","aud":"gw","exp":9999999999}`) + "."
	cases := []struct {
		name  string
		token string
		want  string // caller display name, or failure code
	}{
		{"RS256", sign(t, rs, with(nil)), "alice"},
		{"PS384", sign(t, ps, with(nil)), "alice"},
		{"ES256", sign(t, es256, with(nil)), "alice"},
		{"ES384", sign(t, es384, with(nil)), "alice"},
		{"ES512", sign(t, es512, with(nil)), "alice"},
		{"EdDSA", sign(t, ed, with(nil)), "alice"},
		{"no kid tries every key", sign(t, signer{"", "ES256", testKeys.p256}, with(nil)), "alice"},
		{"ES256 signed with the P-384 key's kid", sign(t, signer{"ec-384", "ES256", testKeys.p256}, with(nil)), "token_unknown_key"},
		{"forged signature", sign(t, forged, with(nil)), "token_bad_signature"},
		{"unknown kid", sign(t, signer{"nope", "RS256", testKeys.rsa}, with(nil)), "token_unknown_key"},
		{"HMAC to a JWKS provider", signHMAC(t, "HS256", "whatever-secret-whatever-secret-32", with(nil)), "token_unsupported_alg"},
		{"HMAC with the public key as secret", func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodHS256, with(nil))
			tok.Header["kid"] = "rsa-1"
			out, _ := tok.SignedString([]byte("-----BEGIN PUBLIC KEY-----"))
			return out
		}(), "token_unsupported_alg"},
		{"alg none", noneTok, "token_unsupported_alg"},
		{"alg none with a signature", noneTok + "c2ln", "token_unsupported_alg"},
		{"crit header", func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodRS256, with(nil))
			tok.Header["kid"], tok.Header["crit"], tok.Header["b64"] = "rsa-1", []string{"b64"}, false
			out, _ := tok.SignedString(testKeys.rsa)
			return out
		}(), "token_unsupported_crit"},
		{"expired", sign(t, rs, with(jwt.MapClaims{"exp": now.Add(-31 * time.Second).Unix()})), "token_expired"},
		{"expired within leeway", sign(t, rs, with(jwt.MapClaims{"exp": now.Add(-20 * time.Second).Unix()})), "alice"},
		{"nbf ahead", sign(t, rs, with(jwt.MapClaims{"nbf": now.Add(time.Minute).Unix()})), "token_not_yet_valid"},
		{"nbf within leeway", sign(t, rs, with(jwt.MapClaims{"nbf": now.Add(20 * time.Second).Unix()})), "alice"},
		{"no exp", sign(t, rs, with(jwt.MapClaims{"exp": nil})), "token_missing_exp"},
		{"exp as string", sign(t, rs, with(jwt.MapClaims{"exp": "tomorrow"})), "token_invalid_claims"},
		{"aud as number", sign(t, rs, with(jwt.MapClaims{"aud": 7})), "token_wrong_audience"},
		{"aud array with a number", sign(t, rs, with(jwt.MapClaims{"aud": []any{"gw", 7}})), "token_invalid_claims"},
		{"iss as number", sign(t, rs, with(jwt.MapClaims{"iss": 7})), "token_invalid_claims"},
		{"wrong audience", sign(t, rs, with(jwt.MapClaims{"aud": "other"})), "token_wrong_audience"},
		{"audience array", sign(t, rs, with(jwt.MapClaims{"aud": []string{"x", "gw-alt"}})), "alice"},
		{"no audience", sign(t, rs, with(jwt.MapClaims{"aud": nil})), "token_wrong_audience"},
		{"missing scope", sign(t, rs, with(jwt.MapClaims{"scope": "read write"})), "token_missing_scope"},
		{"scope array", sign(t, rs, with(jwt.MapClaims{"scope": []any{"read", 3, "llm"}})), "alice"},
		{"scope absent", sign(t, rs, with(jwt.MapClaims{"scope": nil})), "token_missing_scope"},
		{"bound claim wrong", sign(t, rs, with(jwt.MapClaims{"tenant": "evil"})), "token_bound_claim"},
		{"bound claim array", sign(t, rs, with(jwt.MapClaims{"tenant": []any{"x", "acme"}})), "alice"},
		{"bound dotted claim missing", sign(t, rs, with(jwt.MapClaims{"org": nil})), "token_bound_claim"},
		{"bound dotted claim array", sign(t, rs, with(jwt.MapClaims{"org": map[string]any{"region": []any{1, "us"}}})), "alice"},
		{"bound claim wrong type", sign(t, rs, with(jwt.MapClaims{"tenant": 5})), "token_bound_claim"},
		{"unknown issuer", sign(t, rs, with(jwt.MapClaims{"iss": "https://evil.example"})), "token_unknown_issuer"},
		{"disabled key by subject", sign(t, rs, with(jwt.MapClaims{"sub": "bob"})), "api_key_disabled"},
		{"expired key by subject", sign(t, rs, with(jwt.MapClaims{"sub": "carol"})), "api_key_expired"},
		{"no mapping", sign(t, rs, with(jwt.MapClaims{"sub": "mallory"})), "token_no_mapping"},
		{"sub not a string", sign(t, rs, with(jwt.MapClaims{"sub": 1, "groups": []any{"eng"}})), "eng"},
		{"mapping contains", sign(t, rs, with(jwt.MapClaims{"sub": "x", "groups": []any{"eng"}})), "eng"},
		{"mapping tie by name", sign(t, rs, with(jwt.MapClaims{"sub": "x", "groups": []any{"eng", "root"}})), "admins"},
		{"mapping priority first", sign(t, rs, with(jwt.MapClaims{"sub": "x", "groups": []any{"eng", "ops"}, "profile": map[string]any{"level": "senior"}})), "ops"},
		{"mapping all conditions", sign(t, rs, with(jwt.MapClaims{"sub": "x", "groups": []any{"eng", "ops"}, "profile": map[string]any{"level": "junior"}})), "eng"},
		{"mapping exact needs a string", sign(t, rs, with(jwt.MapClaims{"sub": "x", "groups": []any{"ops"}, "profile": map[string]any{"level": []any{"senior"}}})), "token_no_mapping"},
		{"mapping contains ignores non-strings", sign(t, rs, with(jwt.MapClaims{"sub": "x", "groups": []any{1, true, map[string]any{"eng": 1}}})), "token_no_mapping"},
		{"mapping contains needs an array", sign(t, rs, with(jwt.MapClaims{"sub": "x", "groups": "eng"})), "token_no_mapping"},
		{"subject beats mapping", sign(t, rs, with(jwt.MapClaims{"groups": []any{"eng"}})), "alice"},
		{"jwks_uri provider, dotted identity", sign(t, es256, jwt.MapClaims{"iss": "https://direct.example.com", "aud": []any{"gw"}, "exp": now.Add(time.Minute).Unix(), "user": map[string]any{"email": "dana@example.com"}}), "direct-user"},
		{"jwks_uri provider, identity missing", sign(t, es256, jwt.MapClaims{"iss": "https://direct.example.com", "aud": "gw", "exp": now.Add(time.Minute).Unix(), "sub": "dana@example.com"}), "token_no_mapping"},
		{"issuer-less HMAC A", signHMAC(t, "HS256", secretA, jwt.MapClaims{"sub": "runner", "exp": now.Add(time.Minute).Unix()}), "runner-a"},
		{"issuer-less HMAC B, HS512", signHMAC(t, "HS512", secretB, jwt.MapClaims{"sub": "runner", "exp": now.Add(time.Minute).Unix()}), "runner-b"},
		{"issuer-less HMAC, foreign iss", signHMAC(t, "HS384", secretB, jwt.MapClaims{"iss": "anything", "sub": "runner", "exp": now.Add(time.Minute).Unix()}), "runner-b"},
		{"issuer-less HMAC, unknown secret", signHMAC(t, "HS256", "not-a-configured-secret-at-all-0123456", jwt.MapClaims{"sub": "runner", "exp": now.Add(time.Minute).Unix()}), "token_bad_signature"},
		{"issuer-less HMAC, RS256", sign(t, rs, jwt.MapClaims{"sub": "runner", "exp": now.Add(time.Minute).Unix()}), "token_unsupported_alg"},
		{"HMAC issuer bound to its provider only", signHMAC(t, "HS256", secretA, jwt.MapClaims{"iss": "named-issuer", "aud": "gw", "sub": "svc", "exp": now.Add(time.Minute).Unix()}), "token_bad_signature"},
		{"HMAC with issuer", signHMAC(t, "HS256", secretN, jwt.MapClaims{"iss": "named-issuer", "aud": "gw", "sub": "svc", "exp": now.Add(time.Minute).Unix()}), "named"},
		{"HMAC with issuer, wrong aud", signHMAC(t, "HS256", secretN, jwt.MapClaims{"iss": "named-issuer", "aud": "x", "sub": "svc", "exp": now.Add(time.Minute).Unix()}), "token_wrong_audience"},
		{"malformed header", "eyJhbGciOi." + b64(`{}`) + ".c2ln", "token_malformed"},
		{"malformed claims", b64(`{"alg":"HS256"}`) + ".e30x.c2ln", "token_malformed"},
		{"claims not an object", b64(`{"alg":"HS256"}`) + "." + b64(`[1]`) + ".c2ln", "token_malformed"},
		{"too large", b64(`{"alg":"HS256"}`) + "." + b64(`{"x":"`+strings.Repeat("a", MaxTokenBytes)+`"}`) + ".c2ln", "token_malformed"},
		{"caller key shaped like a JWT", shapedKey, "jwt-shaped-key"},
		{"caller key", "ka", "alice"},
		{"not a key, not a token", "nope", "invalid_api_key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Twice: the second answer may come from the verified-token cache.
			for i := 0; i < 2; i++ {
				c, f := authWith(a, s, tc.token, now)
				got := ""
				switch {
				case f != nil:
					got = f.Code
					if strings.Contains(f.Message, tc.token) || strings.Contains(f.Message, "alice") || strings.Contains(f.Message, "acme") {
						t.Fatalf("message echoes the credential or a claim: %q", f.Message)
					}
				case c != nil:
					got = c.Key.DisplayName
				}
				if got != tc.want {
					t.Fatalf("try %d: got %q; want %q", i, got, tc.want)
				}
			}
		})
	}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// TestJWTCache: a verified token is served from the cache until exp, never
// across a snapshot reload, and its key's state is checked on every hit.
func TestJWTCache(t *testing.T) {
	rs, _, _, _, _, _ := testSigners(t)
	d := newIdP(t, rs)
	rs.alg = "RS256"
	s := jwtSnap(t, d.url())
	a := testAuth(t)
	now := time.Now()
	tok := sign(t, rs, claimsAt(now, d.url(), jwt.MapClaims{"sub": "alice", "scope": "llm", "tenant": "acme", "org": map[string]any{"region": "us"}, "exp": now.Add(time.Minute).Unix()}))
	if c, f := authWith(a, s, tok, now); f != nil || c.Key.DisplayName != "alice" {
		t.Fatalf("first: %v %v", c, f)
	}
	if a.cache.len() != 1 {
		t.Fatalf("cache holds %d entries; want 1", a.cache.len())
	}
	hits := d.jwksHits.Load()
	d.down.Store(true) // a hit needs no key set
	if c, f := authWith(a, s, tok, now.Add(30*time.Second)); f != nil || c.Key.DisplayName != "alice" {
		t.Fatalf("cached: %v %v", c, f)
	}
	// At exp+leeway the entry is dead and verification says expired.
	if _, f := authWith(a, s, tok, now.Add(time.Minute+30*time.Second)); f != TokenExpired {
		t.Fatalf("after exp: %v; want expired", f)
	}
	// A new snapshot (a reload) never uses the old entries.
	s2 := jwtSnap(t, d.url())
	d.down.Store(false)
	if c, f := authWith(a, s2, tok, now); f != nil || c != s2.CallersByName["alice"] {
		t.Fatalf("after reload: %v %v", c, f)
	}
	if d.jwksHits.Load() != hits {
		t.Fatalf("JWKS fetched again (%d → %d): cached keys should verify", hits, d.jwksHits.Load())
	}
	// Bounded.
	small := New(Options{CacheEntries: 64})
	for i := 0; i < 1000; i++ {
		small.cache.put([]byte(strings.Repeat("x", i)), 1, nil, now.Add(time.Hour).UnixNano(), now.UnixNano())
	}
	if n := small.cache.len(); n > 64 {
		t.Fatalf("cache grew to %d entries; bound 64", n)
	}
}

// TestJWKSRotation: the IdP rotates its signing key mid-run while callers
// keep sending tokens; no request fails.
func TestJWKSRotation(t *testing.T) {
	keys(t)
	old := signer{"k-old", "RS256", testKeys.rsa}
	next := signer{"k-new", "ES256", testKeys.p256}
	d := newIdP(t, old)
	s := jwtSnap(t, d.url())
	a := New(Options{JWKS: jwks.Options{FetchTimeout: 3 * time.Second}}) // default miss interval
	t.Cleanup(a.Keys.Close)
	var cur atomic.Pointer[signer]
	cur.Store(&old)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ok, failed atomic.Int64
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				now := time.Now()
				tok := sign(t, *cur.Load(), claimsAt(now, d.url(), jwt.MapClaims{"sub": "alice", "scope": "llm", "tenant": "acme", "org": map[string]any{"region": "eu"}, "jti": i}))
				if _, f := authWith(a, s, tok, now); f != nil {
					failed.Add(1)
					t.Errorf("request failed during rotation: %s", f.Code)
					return
				}
				ok.Add(1)
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	d.publish(old, next) // the IdP publishes the new key, then signs with it
	cur.Store(&next)
	time.Sleep(100 * time.Millisecond)
	d.publish(next) // and retires the old one
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	if failed.Load() != 0 || ok.Load() < 10 {
		t.Fatalf("ok %d, failed %d", ok.Load(), failed.Load())
	}
	if h := d.jwksHits.Load(); h > 3 {
		t.Fatalf("%d JWKS fetches for one rotation", h)
	}
}

// TestJWKSDown: a key endpoint that goes down keeps the last good keys
// verifying; the set reports stale with the error; recovery reports ok.
func TestJWKSDown(t *testing.T) {
	rs, _, _, _, _, _ := testSigners(t)
	d := newIdP(t, rs)
	rs.alg = "RS256"
	s := jwtSnap(t, d.url())
	a := New(Options{CacheEntries: 1, JWKS: jwks.Options{RefreshInterval: 30 * time.Millisecond, RetryMin: 10 * time.Millisecond, MinMissInterval: time.Hour}})
	t.Cleanup(a.Keys.Close)
	fresh := func(i int) string {
		return sign(t, rs, claimsAt(time.Now(), d.url(), jwt.MapClaims{"sub": "alice", "scope": "llm", "tenant": "acme", "org": map[string]any{"region": "eu"}, "jti": i}))
	}
	if _, f := authWith(a, s, fresh(0), time.Now()); f != nil {
		t.Fatal(f.Code)
	}
	status := func() jwks.Status {
		for _, st := range a.Keys.Status() {
			if st.Provider == "idp" {
				return st
			}
		}
		t.Fatal("no status for idp")
		return jwks.Status{}
	}
	if st := status(); st.State != jwks.StateOK || st.Keys != 1 || st.LastSuccessAt == nil {
		t.Fatalf("status %+v", st)
	}
	d.down.Store(true)
	waitFor(t, func() bool { return status().State == jwks.StateStale })
	for i := 1; i < 20; i++ {
		if _, f := authWith(a, s, fresh(i), time.Now()); f != nil {
			t.Fatalf("JWKS down: token %d: %s", i, f.Code)
		}
	}
	if st := status(); !strings.HasSuffix(st.LastError, "HTTP 503") {
		t.Fatalf("last_error %q", st.LastError)
	}
	d.down.Store(false)
	waitFor(t, func() bool { return status().State == jwks.StateOK })
}

// TestJWKSUnavailable: no key was ever fetched: 401 token_keys_unavailable,
// and the status says unavailable.
func TestJWKSUnavailable(t *testing.T) {
	rs, _, _, _, _, _ := testSigners(t)
	d := newIdP(t, rs)
	rs.alg = "RS256"
	d.down.Store(true)
	s := jwtSnap(t, d.url())
	a := testAuth(t)
	tok := sign(t, rs, claimsAt(time.Now(), d.url(), jwt.MapClaims{"sub": "alice"}))
	if _, f := authWith(a, s, tok, time.Now()); f != TokenKeysDown {
		t.Fatalf("got %v; want keys unavailable", f)
	}
	st := a.Keys.Get(SourceOf(s.Resources.OIDCProviders[0])).Status()
	if st.State != jwks.StateUnavailable || !strings.Contains(st.LastError, "discovery") {
		t.Fatalf("status %+v", st)
	}
}

// TestJWKSDiscoveryIssuerMismatch: a discovery document naming another
// issuer is not trusted.
func TestJWKSDiscoveryIssuerMismatch(t *testing.T) {
	rs, _, _, _, _, _ := testSigners(t)
	d := newIdP(t, rs)
	rs.alg = "RS256"
	d.issuer = "https://someone-else.example"
	s := jwtSnap(t, d.url())
	a := testAuth(t)
	tok := sign(t, rs, claimsAt(time.Now(), d.url(), jwt.MapClaims{"sub": "alice", "scope": "llm", "tenant": "acme", "org": map[string]any{"region": "eu"}}))
	if _, f := authWith(a, s, tok, time.Now()); f != TokenKeysDown {
		t.Fatalf("got %v; want keys unavailable", f)
	}
	if d.jwksHits.Load() != 0 {
		t.Fatal("fetched the key set of a mismatched discovery document")
	}
}

// TestJWKSForgedKidFlood: tokens with made-up kids trigger at most one
// refresh per MinMissInterval.
func TestJWKSForgedKidFlood(t *testing.T) {
	keys(t)
	d := newIdP(t, signer{"real", "RS256", testKeys.rsa})
	s := jwtSnap(t, d.url())
	a := New(Options{JWKS: jwks.Options{MinMissInterval: time.Hour}})
	t.Cleanup(a.Keys.Close)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				tok := sign(t, signer{"forged-" + string(rune('a'+w)) + "-" + string(rune('a'+i)), "RS256", testKeys.rsa2}, claimsAt(time.Now(), d.url(), jwt.MapClaims{"sub": "alice"}))
				if _, f := authWith(a, s, tok, time.Now()); f != TokenUnknownKey {
					t.Errorf("forged kid: %v", f)
				}
			}
		}(w)
	}
	wg.Wait()
	// The first fetch, plus at most one miss refresh.
	if h := d.jwksHits.Load(); h > 2 {
		t.Fatalf("%d JWKS fetches for 200 forged kids", h)
	}
}

// TestJWKSRegistrySync: reloads keep unchanged providers' key sets and drop
// removed ones.
func TestJWKSRegistrySync(t *testing.T) {
	rs, _, _, _, _, _ := testSigners(t)
	d := newIdP(t, rs)
	s := jwtSnap(t, d.url())
	a := testAuth(t)
	a.Keys.Sync(Sources(s))
	st := a.Keys.Status()
	if len(st) != 2 || st[0].Provider != "direct" || st[1].Provider != "idp" || st[1].State != jwks.StateIdle {
		t.Fatalf("status after sync: %+v", st)
	}
	set := a.Keys.Get(SourceOf(s.Resources.OIDCProviders[0]))
	if _, err := set.Find(context.Background(), "rsa-1"); err != nil {
		t.Fatal(err)
	}
	a.Keys.Sync(Sources(jwtSnap(t, d.url())))
	if a.Keys.Get(SourceOf(s.Resources.OIDCProviders[0])) != set {
		t.Fatal("a reload with the same provider replaced its key set")
	}
	a.Keys.Sync(nil)
	if len(a.Keys.Status()) != 0 {
		t.Fatal("removed providers still listed")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
