package fuzz

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"hash"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/authn"
	"gw/edge/authn/jwks"
)

const jwtFuzzSecret = "fuzz-shared-secret-at-least-32-bytes-long"

const jwtFuzzFile = `_format_version: "1"
api_keys:
  - {display_name: a, key_env: K1, allowed_models: ["*"], jwt_provider: shared, jwt_subject: alice}
  - {display_name: b, key_env: K2, allowed_models: ["*"], jwt_provider: idp, jwt_subject: alice}
  - {display_name: c, key_env: K3, allowed_models: ["*"]}
oidc_providers:
  - name: shared
    hmac_secret: ` + jwtFuzzSecret + `
  - name: idp
    issuer: ${ISS}
    audiences: [gw]
    jwks_uri: ${ISS}/jwks
    bound_claims: {org.team: [x, y]}
    required_scopes: [s]
claim_mappings:
  - {name: m, jwt_provider: shared, match: [{claim: groups, op: contains, values: [g]}, {claim: lvl, op: exact, values: [hi]}], resolve: {api_key: c}}
`

var jwtFuzz struct {
	once sync.Once
	key  ed25519.PrivateKey
	iss  string
	snap *snapshot.Snapshot
	auth *authn.Authenticator
}

// jwtFuzzSetup: an HMAC provider and a JWKS provider whose key set a local
// server publishes (the IdP stand-in), shared by every fuzz input. The JWKS
// key is Ed25519: signing per input stays cheap, so minimizing an input is
// fast (RSA and EC are covered by edge/authn's tests).
func jwtFuzzSetup(tb testing.TB) {
	jwtFuzz.once.Do(func() {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		j, err := jwkset.NewJWKFromKey(k.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: "k1", USE: jwkset.UseSig}})
		if err != nil {
			panic(err)
		}
		doc, _ := json.Marshal(jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{j.Marshal()}})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(doc) }))
		env := map[string]string{"ISS": srv.URL, "K1": "k1", "K2": "k2", "K3": "k3"}
		res := resources.Load([]byte(jwtFuzzFile), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err := res.Err(); err != nil {
			panic(err)
		}
		s, err := snapshot.Compile(res.Resources, snapshot.DefaultOptions())
		if err != nil {
			panic(err)
		}
		jwtFuzz.key, jwtFuzz.iss, jwtFuzz.snap = k, srv.URL, s
		jwtFuzz.auth = authn.New(authn.Options{JWKS: jwks.Options{MinMissInterval: time.Hour}})
	})
}

var jwtFuzzNow = time.Unix(1_800_000_000, 0)

func jwtSeg(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func jwtFuzzSign(alg, header, claims string) string {
	in := jwtSeg(header) + "." + jwtSeg(claims)
	m := jwt.GetSigningMethod(alg)
	var key any = []byte(jwtFuzzSecret)
	if alg == "EdDSA" {
		key = jwtFuzz.key
	}
	sig, err := m.Sign(in, key)
	if err != nil {
		panic(err)
	}
	return in + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// signatureGenuine checks an accepted token independently of the library:
// the signature must be the HMAC of the signing input under the configured
// secret, or an Ed25519 signature of the IdP's key.
func signatureGenuine(tok string) bool {
	i := strings.LastIndexByte(tok, '.')
	if i < 0 {
		return false
	}
	hdr, err := base64.RawURLEncoding.Strict().DecodeString(tok[:strings.IndexByte(tok, '.')])
	if err != nil {
		return false
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(hdr, &h) != nil {
		return false
	}
	sig, err := base64.RawURLEncoding.Strict().DecodeString(tok[i+1:])
	if err != nil {
		return false
	}
	in := []byte(tok[:i])
	var nh func() hash.Hash
	switch h.Alg {
	case "HS256":
		nh = sha256.New
	case "HS384":
		nh = sha512.New384
	case "HS512":
		nh = sha512.New
	case "EdDSA":
		return ed25519.Verify(jwtFuzz.key.Public().(ed25519.PublicKey), in, sig)
	default:
		return false
	}
	mac := hmac.New(nh, []byte(jwtFuzzSecret))
	mac.Write(in)
	return hmac.Equal(mac.Sum(nil), sig)
}

// FuzzJWTToken: any credential string — malformed segments, huge headers,
// alg none, forged signatures — never panics, and a token is accepted only
// with a genuine signature.
func FuzzJWTToken(f *testing.F) {
	jwtFuzzSetup(f)
	exp := `,"exp":1900000000`
	for _, s := range []string{
		jwtFuzzSign("HS256", `{"alg":"HS256","typ":"JWT"}`, `{"sub":"alice"`+exp+`}`),
		jwtFuzzSign("HS512", `{"alg":"HS512"}`, `{"sub":"x","groups":["g",1],"lvl":"hi"`+exp+`}`),
		jwtFuzzSign("EdDSA", `{"alg":"EdDSA","kid":"k1"}`, `{"iss":"`+jwtFuzz.iss+`","aud":["gw"],"sub":"alice","scope":"s t","org":{"team":"x"}`+exp+`}`),
		jwtFuzzSign("EdDSA", `{"alg":"EdDSA"}`, `{"iss":"`+jwtFuzz.iss+`","aud":"gw","sub":"alice","scope":["s"],"org":{"team":["q","y"]}`+exp+`}`),
		jwtSeg(`{"alg":"none"}`) + "." + jwtSeg(`{"sub":"alice"`+exp+`}`) + ".",
		jwtSeg(`{"alg":"HS256","kid":"`+strings.Repeat("k", 4096)+`"}`) + "." + jwtSeg(`{"sub":"alice"}`) + ".c2ln",
		jwtSeg(`{"alg":"HS256"}`) + "." + jwtSeg(`{"exp":"soon","aud":7,"iss":[1]}`) + ".c2ln",
		"eyJ.eyJ.", "eyJhbGciOiJIUzI1NiJ9..", "eyJhbGciOiJIUzI1NiJ9.e30.=", "a.b.c", "eyJ" + strings.Repeat(".", 5),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		p, _, fail := jwtFuzz.auth.Verify([]byte(tok), jwtFuzz.snap, jwtFuzzNow)
		if fail == nil {
			if p == nil {
				t.Fatal("accepted without a provider")
			}
			if !signatureGenuine(tok) {
				t.Fatalf("accepted a token without a genuine signature: %q", tok)
			}
		} else if fail.Message == "" || strings.Contains(fail.Message, tok) && len(tok) > 3 {
			t.Fatalf("failure %q echoes the token", fail.Code)
		}
	})
}

// FuzzJWTClaims: properly signed tokens with arbitrary header and claims
// JSON (wrong types, nesting, huge values) never panic; an accepted token
// has a numeric exp in the future and maps to a caller only by the rules.
func FuzzJWTClaims(f *testing.F) {
	jwtFuzzSetup(f)
	for _, c := range []struct{ hdr, claims string }{
		{`{"alg":"HS256"}`, `{"sub":"alice","exp":1900000000}`},
		{`{"alg":"HS256"}`, `{"sub":"alice","exp":1.9e9,"nbf":1.8e9}`},
		{`{"alg":"HS384"}`, `{"sub":1,"exp":1e300,"groups":["g"],"lvl":"hi"}`},
		{`{"alg":"HS256"}`, `{"exp":-1e300,"nbf":"x"}`},
		{`{"alg":"HS512","crit":["x"]}`, `{"sub":{"a":[{}]},"exp":null}`},
		{`{"alg":"EdDSA","kid":"k1"}`, `{"iss":"ISS","aud":"gw","sub":"alice","scope":"s","org":{"team":"y"},"exp":1900000000}`},
		{`{"alg":"HS256"}`, `{"exp":1900000000,"groups":"g","lvl":["hi"]}`},
	} {
		f.Add(c.hdr, c.claims)
	}
	f.Fuzz(func(t *testing.T, hdr, claims string) {
		var h struct {
			Alg string `json:"alg"`
		}
		if json.Unmarshal([]byte(hdr), &h) != nil || jwt.GetSigningMethod(h.Alg) == nil ||
			(!strings.HasPrefix(h.Alg, "HS") && h.Alg != "EdDSA") {
			return
		}
		claims = strings.ReplaceAll(claims, `"ISS"`, `"`+jwtFuzz.iss+`"`)
		tok := jwtFuzzSign(h.Alg, hdr, claims)
		p, cl, fail := jwtFuzz.auth.Verify([]byte(tok), jwtFuzz.snap, jwtFuzzNow)
		if fail != nil {
			return
		}
		exp, err := cl.GetExpirationTime()
		if err != nil || exp == nil || !jwtFuzzNow.Before(exp.Time) {
			t.Fatalf("accepted a token without a valid exp: %s", claims)
		}
		if c := jwtFuzz.snap.ResolveJWT(p, cl); c != nil && c.Key.JWTSubject == "" && c.Key.DisplayName != "c" {
			t.Fatalf("mapped to %s outside the rules", c.Key.DisplayName)
		}
	})
}

// TestJWTFuzzHarness: the harness accepts genuine tokens (so the fuzz
// invariants are not vacuous) and rejects a one-bit forgery of each.
func TestJWTFuzzHarness(t *testing.T) {
	jwtFuzzSetup(t)
	exp := `,"exp":1900000000`
	for _, tok := range []string{
		jwtFuzzSign("HS256", `{"alg":"HS256"}`, `{"sub":"alice"`+exp+`}`),
		jwtFuzzSign("EdDSA", `{"alg":"EdDSA","kid":"k1"}`, `{"iss":"`+jwtFuzz.iss+`","aud":"gw","sub":"alice","scope":"s","org":{"team":"x"}`+exp+`}`),
	} {
		if _, _, fail := jwtFuzz.auth.Verify([]byte(tok), jwtFuzz.snap, jwtFuzzNow); fail != nil || !signatureGenuine(tok) {
			t.Fatalf("genuine token rejected: %v", fail)
		}
		b := []byte(tok)
		b[len(b)-3] ^= 1
		if _, _, fail := jwtFuzz.auth.Verify(b, jwtFuzz.snap, jwtFuzzNow); fail == nil {
			t.Fatal("forged token accepted")
		}
	}
}
