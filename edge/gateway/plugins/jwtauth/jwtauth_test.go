package jwtauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/valyala/fasthttp"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/plugin"
	"gw/edge/gateway/vars"
)

func TestRewrite(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	pub := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	pubJSON, _ := json.Marshal(pub)
	hs, es, grace := &admingw.Consumer{Username: "hs"}, &admingw.Consumer{Username: "es"}, &admingw.Consumer{Username: "grace"}
	env := &plugin.Env{Snap: &admingw.Snapshot{
		Auth: map[string]map[string]*admingw.Consumer{Name: {"hs-key": hs, "es-key": es, "g-key": grace}},
		AuthConf: map[string]map[string]json.RawMessage{Name: {
			"hs-key": json.RawMessage(`{"key":"hs-key","secret":"hs-secret"}`),
			"es-key": json.RawMessage(`{"key":"es-key","algorithm":"ES256","public_key":` + string(pubJSON) + `}`),
			"g-key":  json.RawMessage(`{"key":"g-key","secret":"g-secret","lifetime_grace_period":120}`),
		}},
	}}
	p, err := New(json.RawMessage(`{"hide_credentials":true}`), env, "route/1")
	if err != nil {
		t.Fatal(err)
	}
	hsTok := func(secret string, c jwt.MapClaims) string {
		s, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(secret))
		return s
	}
	esTok, _ := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"key": "es-key", "exp": time.Now().Add(time.Hour).Unix()}).SignedString(ec)
	// An ES256 token claiming the HMAC consumer: algorithm mismatch.
	confused, _ := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"key": "hs-key"}).SignedString(ec)
	past := time.Now().Add(-time.Minute).Unix()
	f := func(auth string, code int, consumer string) {
		t.Helper()
		r := &fasthttp.RequestCtx{}
		r.Request.SetRequestURI("/a")
		r.Request.Header.Set("Authorization", auth)
		c := &plugin.Ctx{}
		c.Reset(r, &vars.Context{})
		p.Rewrite(c)
		if r.Response.StatusCode() != code || c.Vars.ConsumerName != consumer {
			t.Fatalf("%.40s: got %d %s %q; want %d %q", auth, r.Response.StatusCode(), r.Response.Body(), c.Vars.ConsumerName, code, consumer)
		}
		if code == 200 && r.Request.Header.Peek("Authorization") != nil {
			t.Fatal("hide_credentials kept the header")
		}
	}
	f("Bearer "+hsTok("hs-secret", jwt.MapClaims{"key": "hs-key"}), 200, "hs")
	f(hsTok("hs-secret", jwt.MapClaims{"key": "hs-key"}), 200, "hs")
	f("Bearer "+esTok, 200, "es")
	f("Bearer "+confused, 401, "")
	f(hsTok("hs-secret", jwt.MapClaims{"key": "hs-key", "exp": past}), 401, "")
	// Within its own grace period (120 s), not within another's (0).
	f(hsTok("g-secret", jwt.MapClaims{"key": "g-key", "exp": past}), 200, "grace")
	f(hsTok("hs-secret", jwt.MapClaims{"key": "hs-key", "nbf": time.Now().Add(time.Minute).Unix()}), 401, "")
	f(hsTok("nope", jwt.MapClaims{"key": "hs-key"}), 401, "")
	f(strings.Repeat("x", 10), 401, "")
}
