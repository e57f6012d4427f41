package anthropic

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/bodyrules"
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

// TestBodyRules: the key's body rules act on the Messages body gw sends,
// after the conversion, on the converted chat path and on the native
// Messages surface alike; count_tokens takes only renames and flattening.
func TestBodyRules(t *testing.T) {
	hi := 0.5
	k := &adapters.KeyConfig{Name: "c", Credential: adapters.NewSecret("sk-ant"), BaseURL: "https://example.test/v1",
		Messages: adapters.NativeSurface{On: true},
		Body: bodyrules.Config{
			ParamRenames:        []bodyrules.Rename{{From: "top_p", To: "top_p_renamed"}},
			TemperatureMax:      &hi,
			DefaultBodyFields:   []bodyrules.Field{{Key: "top_k", Value: []byte(`7`)}, {Key: "model", Value: []byte(`"no"`)}},
			ContentListToString: true,
		}}
	ad, err := New(k, adapters.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := ad.(*Adapter)
	f := func(name string, build func(req *fasthttp.Request) error, want, notWant []string) {
		t.Helper()
		req := fasthttp.AcquireRequest()
		defer fasthttp.ReleaseRequest(req)
		if err := build(req); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		body := string(req.Body())
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Fatalf("%s: body lacks %s: %s", name, w, body)
			}
		}
		for _, w := range notWant {
			if strings.Contains(body, w) {
				t.Fatalf("%s: body has %s: %s", name, w, body)
			}
		}
	}
	chat := &adapters.ChatInput{UpstreamModel: "claude-sonnet-4-5",
		Body: []byte(`{"model":"alias","temperature":1.5,"top_p":0.9,"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`)}
	f("chat", func(req *fasthttp.Request) error { return a.BuildChat(req, chat) },
		[]string{`"temperature":0.5`, `"top_p_renamed":0.9`, `"top_k":7`, `"content":"ab"`, `"model":"claude-sonnet-4-5"`},
		[]string{`"top_p":`, `"no"`})
	native := &adapters.ChatInput{UpstreamModel: "claude-sonnet-4-5",
		Body: []byte(`{"model":"alias","max_tokens":9,"temperature":0.9,"top_k":1,"top_p":0.8,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`)}
	f("native messages", func(req *fasthttp.Request) error { return a.BuildNative(req, native, adapters.SurfaceMessages) },
		[]string{`"temperature":0.5`, `"top_p_renamed":0.8`, `"top_k":1`, `"content":"x"`}, []string{`"top_p":`})
	count := &adapters.ChatInput{UpstreamModel: "claude-sonnet-4-5",
		Body: []byte(`{"model":"alias","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`)}
	f("count_tokens", func(req *fasthttp.Request) error { return a.BuildNative(req, count, adapters.SurfaceCountTokens) },
		[]string{`"content":"x"`}, []string{`"top_k"`})
}

// TestDeveloperRole: on a Messages upstream a developer message, wherever
// it appears, joins the top-level system with the leading system messages.
func TestDeveloperRole(t *testing.T) {
	ad, err := New(&adapters.KeyConfig{Name: "c", BaseURL: "https://example.test/v1"}, adapters.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	in := &adapters.ChatInput{UpstreamModel: "claude", Body: []byte(`{"messages":[{"role":"system","content":"S"},
		{"role":"user","content":"u"},{"role":"developer","content":"D"},{"role":"assistant","content":"a"}]}`)}
	if err := ad.BuildChat(req, in); err != nil {
		t.Fatal(err)
	}
	body := string(req.Body())
	if !strings.Contains(body, `"system":"S\n\nD"`) || strings.Contains(body, `"developer"`) ||
		!strings.Contains(body, `"messages":[{"role":"user","content":"u"},{"role":"assistant","content":"a"}]`) {
		t.Fatalf("body: %s", body)
	}
}
