package anthropic

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/adapters"
)

func TestBuildChat(t *testing.T) {
	k := &adapters.KeyConfig{Name: "c", Credential: adapters.NewSecret("sk-ant"), BaseURL: "https://example.test/v1/",
		Messages: adapters.NativeSurface{On: true}}
	a, err := New(k, adapters.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var client fasthttp.RequestHeader
	client.Set("anthropic-beta", "prompt-caching-2024-07-31")
	client.Set("authorization", "Bearer caller-key")
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	in := &adapters.ChatInput{
		Body:          []byte(`{"model":"alias","messages":[{"role":"developer","content":"Be brief."},{"role":"user","content":"hi"}]}`),
		UpstreamModel: "claude-sonnet-4-5", ClientHeaders: &client, PromptCacheTTL: "5m",
	}
	if err := a.BuildChat(req, in); err != nil {
		t.Fatal(err)
	}
	if got := string(req.URI().FullURI()); got != "https://example.test/v1/messages" {
		t.Fatalf("url %s", got)
	}
	h := func(k string) string { return string(req.Header.Peek(k)) }
	if h("x-api-key") != "sk-ant" || h("anthropic-version") != Version || h("anthropic-beta") != "prompt-caching-2024-07-31" {
		t.Fatalf("headers: key %q version %q beta %q", h("x-api-key"), h("anthropic-version"), h("anthropic-beta"))
	}
	if h("Authorization") != "" {
		t.Fatal("the caller's credential reached the upstream")
	}
	body := string(req.Body())
	for _, want := range []string{`"model":"claude-sonnet-4-5"`, `"system"`, `"max_tokens":4096`, `"cache_control"`} {
		if !strings.Contains(body, want) {
			t.Fatalf("body lacks %s: %s", want, body)
		}
	}
	if strings.Contains(body, `"developer"`) {
		t.Fatalf("developer message not merged into system: %s", body)
	}
	// A body that is not a chat request is the caller's error.
	req.Reset()
	in.Body = []byte(`[]`)
	if err := a.BuildChat(req, in); err != adapters.ErrBody {
		t.Fatalf("bad body: %v", err)
	}
}
