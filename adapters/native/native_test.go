package native

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/bodyrules"
	"gw/adapters/headers"
)

// TestSurfaces: which surfaces are native is decided by the snapshot
// compiler (the `apis` rules, tested in admin/snapshot); Compile resolves
// their base URLs, count_tokens following messages.
func TestSurfaces(t *testing.T) {
	type want struct{ responses, messages string }
	on := func(base string) adapters.NativeSurface { return adapters.NativeSurface{On: true, Base: base} }
	cases := []struct {
		name string
		k    adapters.KeyConfig
		base string
		want want
	}{
		{"none", adapters.KeyConfig{}, "https://llm.internal/v1", want{}},
		{"responses on the key's base", adapters.KeyConfig{Responses: on("")}, "https://api.openai.com/v1",
			want{responses: "https://api.openai.com/v1"}},
		{"messages with its own base", adapters.KeyConfig{Messages: on("https://api.deepseek.com/anthropic/v1")}, "https://api.deepseek.com/v1",
			want{messages: "https://api.deepseek.com/anthropic/v1"}},
		{"a base without On is not native", adapters.KeyConfig{Messages: adapters.NativeSurface{Base: "https://x.example/v1"}}, "https://gw.example/v1", want{}},
		{"both", adapters.KeyConfig{Responses: on(""), Messages: on("")}, "https://gw.example/v1",
			want{responses: "https://gw.example/v1", messages: "https://gw.example/v1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := Compile(&c.k, c.base, AuthBearer)
			if err != nil {
				t.Fatal(err)
			}
			got := want{e.Base(adapters.SurfaceResponses), e.Base(adapters.SurfaceMessages)}
			if got != c.want || e.Base(adapters.SurfaceCountTokens) != c.want.messages || e.Base(adapters.SurfaceChat) != "" {
				t.Fatalf("bases %+v (count_tokens %q); want %+v", got, e.Base(adapters.SurfaceCountTokens), c.want)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	k := &adapters.KeyConfig{Name: "k", Credential: adapters.NewSecret("sk-up"),
		Responses: adapters.NativeSurface{On: true}, Messages: adapters.NativeSurface{On: true, Base: "https://m.example/anthropic/v1/?tenant=7"},
		Headers: headers.Config{
			DefaultHeaders:       []headers.Template{{Name: "x-api-key", Parts: []headers.Part{{Literal: "spoof"}}}, {Name: "x-team", Parts: []headers.Part{{Literal: "blue"}}}},
			ForwardClientHeaders: []string{"x-trace-*"},
		}}
	e, err := Compile(k, "https://api.example/v1/", AuthBearer)
	if err != nil {
		t.Fatal(err)
	}
	var client fasthttp.RequestHeader
	client.Set("anthropic-beta", "context-1m-2025-08-07")
	client.Set("anthropic-version", "2099-01-01")
	client.Set("x-trace-id", "t1")
	client.Set("authorization", "Bearer caller")
	in := &adapters.ChatInput{Body: []byte(`{"model":"alias","input":"hi","previous_response_id":"resp_1"}`), UpstreamModel: "gpt-5",
		ClientHeaders: &client, CallerCredential: 1}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	h := func(k string) string { return string(req.Header.Peek(k)) }

	if err := e.Build(req, in, adapters.SurfaceResponses); err != nil {
		t.Fatal(err)
	}
	if u := string(req.URI().FullURI()); u != "https://api.example/v1/responses" {
		t.Fatalf("responses url %s", u)
	}
	if h("Authorization") != "Bearer sk-up" || h("x-api-key") != "" || h("anthropic-version") != "" || h("x-team") != "blue" || h("x-trace-id") != "t1" {
		t.Fatalf("responses headers: %s", req.Header.String())
	}
	if b := string(req.Body()); b != `{"model":"gpt-5","input":"hi","previous_response_id":"resp_1"}` {
		t.Fatalf("body %s", b)
	}

	req.Reset()
	in.Body = []byte(`{"model":"alias","max_tokens":10,"messages":[]}`)
	if err := e.Build(req, in, adapters.SurfaceCountTokens); err != nil {
		t.Fatal(err)
	}
	if u := string(req.URI().FullURI()); u != "https://m.example/anthropic/v1/messages/count_tokens?tenant=7" {
		t.Fatalf("count_tokens url %s", u)
	}
	if h("x-api-key") != "sk-up" || h("Authorization") != "Bearer sk-up" || h("anthropic-version") != AnthropicVersion ||
		h("anthropic-beta") != "context-1m-2025-08-07" {
		t.Fatalf("messages headers: %s", req.Header.String())
	}
	if strings.Contains(req.Header.String(), "caller") || strings.Contains(req.Header.String(), "spoof") {
		t.Fatalf("caller credential or a default over an owned header reached the upstream: %s", req.Header.String())
	}

	req.Reset()
	if err := e.Build(req, in, adapters.SurfaceChat); err != adapters.ErrUnsupported {
		t.Fatalf("chat through Build: %v", err)
	}
	in.Body = []byte(`[1]`)
	if err := e.Build(req, in, adapters.SurfaceMessages); err != adapters.ErrBody {
		t.Fatalf("bad body: %v", err)
	}
}

func BenchmarkBuild(b *testing.B) {
	k := &adapters.KeyConfig{Credential: adapters.NewSecret("sk-up"), Messages: adapters.NativeSurface{On: true}}
	e, err := Compile(k, "https://api.anthropic.com/v1", AuthXAPIKey)
	if err != nil {
		b.Fatal(err)
	}
	var client fasthttp.RequestHeader
	client.Set("anthropic-beta", "interleaved-thinking-2025-05-14")
	in := &adapters.ChatInput{Body: []byte(`{"model":"alias","max_tokens":1024,"messages":[{"role":"user","content":"hello"}],"stream":true}`),
		UpstreamModel: "claude-sonnet-4-5", ClientHeaders: &client}
	req := fasthttp.AcquireRequest()
	b.ReportAllocs()
	for b.Loop() {
		req.Reset()
		if err := e.Build(req, in, adapters.SurfaceMessages); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBodyRules: native bodies get the key's body rules after `model`;
// count_tokens only renames and flattening (it takes no generation
// members).
func TestBodyRules(t *testing.T) {
	hi := 0.5
	k := &adapters.KeyConfig{Name: "k", Credential: adapters.NewSecret("sk-up"),
		Responses: adapters.NativeSurface{On: true}, Messages: adapters.NativeSurface{On: true},
		Body: bodyrules.Config{
			ParamRenames:        []bodyrules.Rename{{From: "user", To: "safety_identifier"}},
			TemperatureMax:      &hi,
			DefaultBodyFields:   []bodyrules.Field{{Key: "service_tier", Value: []byte(`"flex"`)}, {Key: "stream", Value: []byte(`true`)}},
			ContentListToString: true,
		}}
	e, err := Compile(k, "https://gw.example/v1", AuthBearer)
	if err != nil {
		t.Fatal(err)
	}
	f := func(s adapters.Surface, body, want string) {
		t.Helper()
		req := fasthttp.AcquireRequest()
		defer fasthttp.ReleaseRequest(req)
		if err := e.Build(req, &adapters.ChatInput{Body: []byte(body), UpstreamModel: "up"}, s); err != nil {
			t.Fatal(err)
		}
		if got := string(req.Body()); got != want {
			t.Fatalf("surface %d:\n got %s\nwant %s", s, got, want)
		}
	}
	f(adapters.SurfaceResponses, `{"model":"a","input":"hi","temperature":0.9,"user":"u"}`,
		`{"model":"up","input":"hi","temperature":0.5,"safety_identifier":"u","service_tier":"flex"}`)
	f(adapters.SurfaceMessages, `{"model":"a","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"temperature":1}`,
		`{"model":"up","messages":[{"role":"user","content":"x"}],"temperature":0.5,"service_tier":"flex"}`)
	f(adapters.SurfaceCountTokens, `{"model":"a","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"user":"u"}`,
		`{"model":"up","messages":[{"role":"user","content":"x"}],"safety_identifier":"u"}`)
}
