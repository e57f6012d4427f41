package vertex

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/anthropic"
	"gw/adapters/openai"
)

func testDoc(t testing.TB) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	doc, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "proj", "private_key_id": "k1", "client_email": "sa@proj.iam.gserviceaccount.com",
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), "token_uri": "http://127.0.0.1:1/token",
		"location": "europe-west4",
	})
	return string(doc)
}

// newTest compiles an adapter whose token cache holds a fixed token.
func newTest(t testing.TB, provider, apiBase string) *Adapter {
	t.Helper()
	k := adapters.KeyConfig{Name: "v", Credential: adapters.NewSecret(testDoc(t)), BaseURL: apiBase}
	a, err := New(&k, &openai.Config{Provider: provider}, adapters.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeFetch{life: time.Hour}
	a.tok = newTokens(f.fetch)
	return a
}

func build(t *testing.T, a *Adapter, body string, stream bool) *fasthttp.Request {
	t.Helper()
	req := fasthttp.AcquireRequest()
	in := &adapters.ChatInput{Body: []byte(body), UpstreamModel: "m@1", Stream: stream}
	if err := a.BuildChat(req, in); err != nil {
		t.Fatal(err)
	}
	return req
}

func TestModes(t *testing.T) {
	const chat = `{"model":"alias","messages":[{"role":"developer","content":"Be brief."},{"role":"user","content":"Hi"}],"max_tokens":50}`
	root := "https://europe-west4-aiplatform.googleapis.com/v1/projects/proj/locations/europe-west4"

	g := newTest(t, "google", "")
	if g.Protocol() != ProtocolGemini || g.NativeBase(adapters.SurfaceMessages) != "" {
		t.Fatal("gemini protocol")
	}
	req := build(t, g, chat, true)
	if got := req.URI().String(); got != root+"/publishers/google/models/m@1:streamGenerateContent?alt=sse" {
		t.Fatalf("gemini URL %s", got)
	}
	if string(req.Header.Peek("Authorization")) != "Bearer token-1" ||
		string(req.Body()) != `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}],"systemInstruction":{"parts":[{"text":"Be brief."}]},"generationConfig":{"maxOutputTokens":50}}` {
		t.Fatalf("gemini request: %s", req.Body())
	}

	c := newTest(t, "anthropic", "http://mock:9/")
	if c.Protocol() != anthropic.ProtocolMessages || c.NativeBase(adapters.SurfaceMessages) != "http://mock:9" {
		t.Fatal("claude protocol")
	}
	req = build(t, c, chat, false)
	body := string(req.Body())
	if got := req.URI().String(); got != "http://mock:9/v1/projects/proj/locations/europe-west4/publishers/anthropic/models/m@1:rawPredict" {
		t.Fatalf("claude URL %s", got)
	}
	if strings.Contains(body, `"model"`) || !strings.Contains(body, `"anthropic_version":"vertex-2023-10-16"`) || !strings.Contains(body, `"system":"Be brief."`) {
		t.Fatalf("claude body %s", body)
	}
	native := fasthttp.AcquireRequest()
	in := &adapters.ChatInput{Body: []byte(`{"model":"alias","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`), UpstreamModel: "m@1", Stream: true}
	if err := c.BuildNative(native, in, adapters.SurfaceMessages); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(native.URI().String(), ":streamRawPredict") || string(native.Body()) != `{"max_tokens":5,"stream":true,"messages":[{"role":"user","content":"Hi"}],"anthropic_version":"vertex-2023-10-16"}` {
		t.Fatalf("native %s %s", native.URI(), native.Body())
	}
	native.Reset()
	if err := c.BuildNative(native, in, adapters.SurfaceCountTokens); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(native.URI().String(), "/models/count-tokens:rawPredict") || !strings.Contains(string(native.Body()), `"model":"m@1"`) {
		t.Fatalf("count %s %s", native.URI(), native.Body())
	}
	if err := c.BuildNative(native, in, adapters.SurfaceResponses); !errors.Is(err, adapters.ErrUnsupported) {
		t.Fatalf("responses native: %v", err)
	}

	o := newTest(t, "meta", "")
	if o.Protocol() != "" {
		t.Fatal("openai-compatible protocol")
	}
	req = build(t, o, chat, false)
	if got := req.URI().String(); got != root+"/endpoints/openapi/chat/completions" ||
		string(req.Header.Peek("Authorization")) != "Bearer token-1" || !strings.Contains(string(req.Body()), `"role":"system"`) ||
		!strings.Contains(string(req.Body()), `"model":"m@1"`) {
		t.Fatalf("openapi %s %s", got, req.Body())
	}

	if err := g.BuildChat(fasthttp.AcquireRequest(), &adapters.ChatInput{Body: []byte(`{"messages":"x"}`)}); !errors.Is(err, adapters.ErrBody) {
		t.Fatalf("bad body: %v", err)
	}
}

func TestNewRejects(t *testing.T) {
	for _, doc := range []string{"", "not json", `{"type":"service_account","project_id":"p","private_key":"x"}`} {
		k := adapters.KeyConfig{Name: "v", Credential: adapters.NewSecret(doc)}
		if _, err := New(&k, &openai.Config{}, adapters.Options{}); err == nil {
			t.Fatalf("%q accepted", doc)
		}
	}
	a := newTest(t, "", "")
	if s := a.String(); strings.Contains(s, "PRIVATE") {
		t.Fatal(s)
	}
}
