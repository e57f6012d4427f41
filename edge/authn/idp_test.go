package authn

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// idp is the identity provider stand-in: a real HTTP server publishing an
// OpenID discovery document and a JWK Set of keys generated in the test.
type idp struct {
	srv       *httptest.Server
	mu        sync.Mutex
	published []signer
	down      atomic.Bool // answer 503 to everything
	jwksHits  atomic.Int64
	discHits  atomic.Int64
	issuer    string // what the discovery document claims (default srv.URL)
}

type signer struct {
	kid  string
	alg  string
	priv crypto.Signer
}

var (
	keyOnce  sync.Once
	testKeys struct {
		rsa, rsa2  *rsa.PrivateKey
		p256, p384 *ecdsa.PrivateKey
		p521       *ecdsa.PrivateKey
		ed         ed25519.PrivateKey
		rsaSmall   *rsa.PrivateKey
	}
)

// keys generates the test keys once per test binary (RSA generation is slow).
func keys(tb testing.TB) {
	tb.Helper()
	keyOnce.Do(func() {
		var err error
		must := func(e error) {
			if e != nil && err == nil {
				err = e
			}
		}
		testKeys.rsa, err = rsa.GenerateKey(rand.Reader, 2048)
		k, e := rsa.GenerateKey(rand.Reader, 2048)
		must(e)
		testKeys.rsa2 = k
		k, e = rsa.GenerateKey(rand.Reader, 1024)
		must(e)
		testKeys.rsaSmall = k
		ec, e := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(e)
		testKeys.p256 = ec
		ec, e = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		must(e)
		testKeys.p384 = ec
		ec, e = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
		must(e)
		testKeys.p521 = ec
		_, testKeys.ed, e = ed25519.GenerateKey(rand.Reader)
		must(e)
		if err != nil {
			panic(err)
		}
	})
}

func newIdP(tb testing.TB, published ...signer) *idp {
	tb.Helper()
	d := &idp{published: published}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	tb.Cleanup(d.srv.Close)
	return d
}

func (d *idp) url() string { return d.srv.URL }

func (d *idp) publish(s ...signer) {
	d.mu.Lock()
	d.published = s
	d.mu.Unlock()
}

func (d *idp) serve(w http.ResponseWriter, r *http.Request) {
	if d.down.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	switch r.URL.Path {
	case "/.well-known/openid-configuration":
		d.discHits.Add(1)
		iss := d.issuer
		if iss == "" {
			iss = d.srv.URL
		}
		json.NewEncoder(w).Encode(map[string]string{"issuer": iss, "jwks_uri": d.srv.URL + "/jwks"})
	case "/jwks":
		d.jwksHits.Add(1)
		d.mu.Lock()
		set := jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{}}
		for _, s := range d.published {
			j, err := jwkset.NewJWKFromKey(s.priv.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: s.kid, ALG: jwkset.ALG(s.alg), USE: jwkset.UseSig}})
			if err != nil {
				panic(err)
			}
			set.Keys = append(set.Keys, j.Marshal())
		}
		d.mu.Unlock()
		json.NewEncoder(w).Encode(set)
	default:
		http.NotFound(w, r)
	}
}

// sign makes a compact JWS of claims with s (kid set when non-empty).
func sign(tb testing.TB, s signer, claims jwt.MapClaims) string {
	tb.Helper()
	t := jwt.NewWithClaims(jwt.GetSigningMethod(s.alg), claims)
	if s.kid != "" {
		t.Header["kid"] = s.kid
	}
	out, err := t.SignedString(s.priv)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// signHMAC makes an HS* token with secret.
func signHMAC(tb testing.TB, alg, secret string, claims jwt.MapClaims) string {
	tb.Helper()
	out, err := jwt.NewWithClaims(jwt.GetSigningMethod(alg), claims).SignedString([]byte(secret))
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// claimsAt returns claims valid at now for iss/aud with extra merged in.
func claimsAt(now time.Time, iss string, extra jwt.MapClaims) jwt.MapClaims {
	c := jwt.MapClaims{"iss": iss, "aud": "gw", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return c
}
