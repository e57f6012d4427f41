package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"gw/perf/mock"
)

const jwtE2ESecret = "e2e-shared-secret-at-least-32-bytes-long"

// jwtFile: a shared-secret provider bound to one key by subject, and a JWKS
// provider (keys discovered from the issuer) whose tokens map by claim.
const jwtFile = `_format_version: "1"
provider_keys:
  - display_name: mock
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${E2E_MOCK_BASE}/v1
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
  - {display_name: ci, key_env: E2E_JWT_CI_KEY, allowed_models: [gpt], jwt_provider: ci, jwt_subject: ci-runner}
  - {display_name: corp-eng, key_env: E2E_JWT_ENG_KEY, allowed_models: ["*"]}
oidc_providers:
  - name: ci
    hmac_secret: ${E2E_JWT_SECRET}
    audiences: [gw-ci]
  - name: corp
    issuer: ${E2E_IDP}
    audiences: [gw]
claim_mappings:
  - name: engineers
    jwt_provider: corp
    match: [{claim: groups, op: contains, values: [eng]}]
    resolve: {api_key: corp-eng}
models:
  - {display_name: gpt, provider: openai, model_name: gpt-4o, provider_key: mock}
  - {display_name: other, provider: openai, model_name: gpt-4o-mini, provider_key: mock}
`

// startIdP serves an OpenID discovery document and a JWK Set with one RSA
// key: the identity provider stand-in.
func startIdP(t *testing.T) (*httptest.Server, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	j, err := jwkset.NewJWKFromKey(key.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: "corp-1", ALG: jwkset.AlgRS256, USE: jwkset.UseSig}})
	if err != nil {
		t.Fatal(err)
	}
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL, "jwks_uri": srv.URL + "/keys"})
		case "/keys":
			json.NewEncoder(w).Encode(jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{j.Marshal()}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, key
}

// TestJWTCallers: openai-go sends tokens as its API key — one printed by
// `gw token`, one signed by the IdP — and gets answers; rejected tokens get
// 401 in the surface's envelope with a reason, never echoing the token.
func TestJWTCallers(t *testing.T) {
	startMock(t, "E2E_MOCK_BASE", mock.Config{})
	idp, idpKey := startIdP(t)
	t.Setenv("E2E_IDP", idp.URL)
	t.Setenv("E2E_JWT_SECRET", jwtE2ESecret)
	t.Setenv("E2E_JWT_CI_KEY", "ci-plain-key")
	t.Setenv("E2E_JWT_ENG_KEY", "eng-plain-key")
	g := startGW(t, writeTemp(t, "jwt.yaml", jwtFile))
	base := "http://" + g.addr + "/v1"
	ctx := context.Background()
	client := func(key string) openai.Client {
		return openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(key), option.WithMaxRetries(0))
	}

	// The `gw token` helper prints a token for the shared-secret provider.
	cmd := gwCmd("token", "--secret-env", "E2E_JWT_SECRET", "--sub", "ci-runner", "--aud", "gw-ci", "--ttl", "10m")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gw token: %v", err)
	}
	ciToken := strings.TrimSpace(string(out))

	t.Run("shared secret token from gw token", func(t *testing.T) {
		c := client(ciToken)
		for i := 0; i < 2; i++ { // the second is served from the verified-token cache
			resp, err := c.Chat.Completions.New(ctx, chatParams("gpt"))
			if err != nil || len(resp.Choices) == 0 {
				t.Fatalf("try %d: %v", i, err)
			}
		}
		// The token's caller key grants gpt only, in /v1/models too.
		_, err := c.Chat.Completions.New(ctx, chatParams("other"))
		apiErr(t, err, 404, "")
		page, err := c.Models.List(ctx)
		if err != nil || len(page.Data) != 1 || page.Data[0].ID != "gpt" {
			t.Fatalf("/v1/models with a token: %v %+v", err, page)
		}
	})

	t.Run("JWKS token mapped by claim", func(t *testing.T) {
		now := time.Now()
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": idp.URL, "aud": []string{"gw"}, "sub": "u-1",
			"groups": []string{"staff", "eng"}, "exp": now.Add(5 * time.Minute).Unix()})
		tok.Header["kid"] = "corp-1"
		s, err := tok.SignedString(idpKey)
		if err != nil {
			t.Fatal(err)
		}
		c := client(s)
		resp, err := c.Chat.Completions.New(ctx, chatParams("other"))
		if err != nil || len(resp.Choices) == 0 {
			t.Fatal(err)
		}
		// x-api-key carries a token too.
		code, _, _ := chatStatus(t, g.addr, "", "gpt", "x-api-key", s)
		if code != 200 {
			t.Fatalf("x-api-key token: %d", code)
		}
	})

	expired := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "ci-runner", "aud": "gw-ci", "exp": time.Now().Add(-time.Hour).Unix()})
		s, _ := tok.SignedString([]byte(jwtE2ESecret))
		return s
	}()

	t.Run("rejected token, openai envelope", func(t *testing.T) {
		c := client(expired)
		_, err := c.Chat.Completions.New(ctx, chatParams("gpt"))
		apiErr(t, err, 401, "token_expired")
		forged := ciToken[:len(ciToken)-2] + "AA"
		fc := client(forged)
		_, err = fc.Chat.Completions.New(ctx, chatParams("gpt"))
		apiErr(t, err, 401, "token_bad_signature")
		noMap := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "someone", "aud": "gw-ci", "exp": time.Now().Add(time.Hour).Unix()})
		s, _ := noMap.SignedString([]byte(jwtE2ESecret))
		nc := client(s)
		_, err = nc.Chat.Completions.New(ctx, chatParams("gpt"))
		apiErr(t, err, 401, "token_no_mapping")
	})

	t.Run("rejected token, raw envelopes", func(t *testing.T) {
		for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
			req, _ := http.NewRequest(http.MethodPost, "http://"+g.addr+path, strings.NewReader(`{"model":"gpt","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("Authorization", "Bearer "+expired)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var env struct {
				Error struct{ Type, Code, Message string } `json:"error"`
			}
			if resp.StatusCode != 401 || json.Unmarshal(body, &env) != nil || env.Error.Type == "" || !strings.Contains(string(body), "token_expired") {
				t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
			}
			if strings.Contains(string(body), expired) || strings.Contains(string(body), "ci-runner") {
				t.Fatalf("%s: the envelope echoes the token or a claim: %s", path, body)
			}
		}
	})

	t.Run("status and metrics", func(t *testing.T) {
		var st struct {
			JWKS []struct {
				Provider, URL, State string
				Keys                 int
			} `json:"jwks"`
		}
		getJSON(t, "http://"+g.addr+"/status/config", &st)
		if len(st.JWKS) != 1 || st.JWKS[0].Provider != "corp" || st.JWKS[0].State != "ok" || st.JWKS[0].Keys != 1 {
			t.Fatalf("/status/config jwks: %+v", st.JWKS)
		}
		resp, err := http.Get("http://" + g.addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		m, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range []string{`gw_auth_failures_total{reason="token_expired"} 3`, `gw_auth_failures_total{reason="token_bad_signature"} 1`, `gw_jwks_up{provider="corp"} 1`} {
			if !bytes.Contains(m, []byte(want)) {
				t.Errorf("metrics lack %s", want)
			}
		}
		if bytes.Contains(m, []byte(ciToken)) || strings.Contains(g.stderr.String(), ciToken) {
			t.Fatal("a token appears in metrics or logs")
		}
	})
}
