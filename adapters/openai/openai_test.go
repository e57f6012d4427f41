package openai

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/headers"
)

func ptr[T any](v T) *T { return &v }

// testKey is a provider key as the openai family reads it.
type testKey struct {
	adapters.KeyConfig
	Config
	azure bool // the azure-openai family
}

func key(mod func(k *testKey)) *testKey {
	k := &testKey{
		KeyConfig: adapters.KeyConfig{
			Name:       "k",
			Credential: adapters.NewSecret("sk-upstream"),
			Responses:  adapters.NativeSurface{On: true}, // provider openai on the openai family
		},
		Config: Config{Provider: "openai"},
	}
	if mod != nil {
		mod(k)
	}
	return k
}

// compile builds the adapter of k with New or NewAzure.
func compile(k *testKey) (adapters.Adapter, error) {
	if k.azure {
		return NewAzure(&k.KeyConfig, &k.Config, adapters.Options{})
	}
	return New(&k.KeyConfig, &k.Config, adapters.Options{})
}

func build(t *testing.T, k *testKey, in *adapters.ChatInput) *fasthttp.Request {
	t.Helper()
	a, err := compile(k)
	if err != nil {
		t.Fatalf("cannot compile adapter: %v", err)
	}
	req := &fasthttp.Request{}
	if err := a.BuildChat(req, in); err != nil {
		t.Fatalf("BuildChat: %v", err)
	}
	return req
}

// jsonEqual compares two JSON documents semantically.
func jsonEqual(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("output is not valid JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("BUG: want is not valid JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("body mismatch\ngot:  %s\nwant: %s", got, want)
	}
}

// TestBodyEdits has one case per edit rule, in pipeline order.
func TestBodyEdits(t *testing.T) {
	f := func(name string, mod func(*testKey), in adapters.ChatInput, body, want string) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Helper()
			if in.UpstreamModel == "" {
				in.UpstreamModel = "gpt-4o"
			}
			in.Body = []byte(body)
			req := build(t, key(mod), &in)
			jsonEqual(t, string(req.Body()), want)
		})
	}
	// model
	f("model replaced", nil, adapters.ChatInput{UpstreamModel: "gpt-4o-2024-08-06"},
		`{"model":"alias","messages":[]}`, `{"model":"gpt-4o-2024-08-06","messages":[]}`)
	f("model added when absent", nil, adapters.ChatInput{},
		`{"messages":[]}`, `{"messages":[],"model":"gpt-4o"}`)
	f("duplicate model keys all replaced", nil, adapters.ChatInput{},
		`{"model":"a","model":"b"}`, `{"model":"gpt-4o"}`)
	// Names in another case are the same members (a Go upstream reads them
	// so): written under gw's spelling, renamed and clamped alike.
	f("names in another case", nil, adapters.ChatInput{UpstreamModel: "o3-mini"},
		`{"Model":"a","MAX_TOKENS":100,"Messages":[]}`, `{"model":"o3-mini","max_completion_tokens":100,"Messages":[]}`)

	// thinking_blocks (signed Anthropic reasoning in chat form) never reach an
	// OpenAI-family upstream; everything else of the message stays.
	think := `{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","thinking_blocks":[{"type":"thinking","thinking":"t","signature":"sig"}],"tool_calls":[]},{"role":"user","content":"thinking_blocks"}]}`
	f("thinking_blocks removed from assistant messages", nil, adapters.ChatInput{}, think,
		`{"model":"gpt-4o","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","tool_calls":[]},{"role":"user","content":"thinking_blocks"}]}`)
	f("thinking_blocks removed and developer renamed", func(k *testKey) { k.Provider = "groq" }, adapters.ChatInput{},
		`{"model":"m","messages":[{"role":"developer","content":"d","thinking_blocks":[]},{"role":"user","content":"hi"}]}`,
		`{"model":"gpt-4o","messages":[{"role":"system","content":"d"},{"role":"user","content":"hi"}]}`)
	f("the word alone changes nothing", nil, adapters.ChatInput{}, `{"model":"m","messages":[{"role":"user","content":"\"thinking_blocks\""}]}`,
		`{"model":"gpt-4o","messages":[{"role":"user","content":"\"thinking_blocks\""}]}`)

	// developer role
	dev := `{"model":"m","messages":[{"role":"developer","content":"Be terse."},{"role":"user","content":"hi"}]}`
	f("developer kept for provider openai", nil, adapters.ChatInput{}, dev,
		`{"model":"gpt-4o","messages":[{"role":"developer","content":"Be terse."},{"role":"user","content":"hi"}]}`)
	f("developer becomes system for other providers", func(k *testKey) { k.Provider = "groq" },
		adapters.ChatInput{}, dev,
		`{"model":"gpt-4o","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"hi"}]}`)
	f("model provider overrides key provider", nil, adapters.ChatInput{Provider: "vllm"}, dev,
		`{"model":"gpt-4o","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"hi"}]}`)
	f("key provider openai through model provider openai", func(k *testKey) { k.Provider = "" },
		adapters.ChatInput{Provider: "openai"}, dev,
		`{"model":"gpt-4o","messages":[{"role":"developer","content":"Be terse."},{"role":"user","content":"hi"}]}`)
	f("developer in the middle keeps its position", func(k *testKey) { k.Provider = "mistral" },
		adapters.ChatInput{},
		`{"messages":[{"role":"user","content":"a"},{"content":"b","role":"developer","name":"x"},{"role":"assistant","content":"c"}]}`,
		`{"messages":[{"role":"user","content":"a"},{"content":"b","role":"system","name":"x"},{"role":"assistant","content":"c"}],"model":"gpt-4o"}`)

	// max_tokens
	f("max_tokens renamed for reasoning model", nil, adapters.ChatInput{UpstreamModel: "o3-mini"},
		`{"max_tokens":100,"messages":[]}`, `{"max_completion_tokens":100,"messages":[],"model":"o3-mini"}`)
	f("max_tokens renamed for gpt-5", nil, adapters.ChatInput{UpstreamModel: "gpt-5-mini"},
		`{"max_tokens":100}`, `{"max_completion_tokens":100,"model":"gpt-5-mini"}`)
	f("max_tokens kept for non-reasoning model", nil, adapters.ChatInput{UpstreamModel: "gpt-4o"},
		`{"max_tokens":100}`, `{"max_tokens":100,"model":"gpt-4o"}`)
	f("max_tokens kept when max_completion_tokens present", nil, adapters.ChatInput{UpstreamModel: "o1"},
		`{"max_tokens":100,"max_completion_tokens":50}`, `{"max_tokens":100,"max_completion_tokens":50,"model":"o1"}`)
	f("max_tokens kept for third-party provider", func(k *testKey) { k.Provider = "together" },
		adapters.ChatInput{UpstreamModel: "o3"}, `{"max_tokens":100}`, `{"max_tokens":100,"model":"o3"}`)
	f("max_tokens renamed for azure provider", func(k *testKey) { k.Provider = "azure" },
		adapters.ChatInput{UpstreamModel: "o4-mini"}, `{"max_tokens":7}`, `{"max_completion_tokens":7,"model":"o4-mini"}`)

	// param_renames, after max_tokens: it has the last word.
	f("param_renames", func(k *testKey) {
		k.Body.ParamRenames = []Rename{{From: "user", To: "end_user"}}
	}, adapters.ChatInput{}, `{"user":"u1","end_user":"old"}`, `{"end_user":"u1","model":"gpt-4o"}`)
	f("param_renames wins over max_tokens rule", func(k *testKey) {
		k.Body.ParamRenames = []Rename{{From: "max_completion_tokens", To: "max_tokens"}}
	}, adapters.ChatInput{UpstreamModel: "o3"}, `{"max_tokens":9}`, `{"max_tokens":9,"model":"o3"}`)
	f("param_renames chain", func(k *testKey) {
		k.Body.ParamRenames = []Rename{{From: "a", To: "b"}, {From: "b", To: "c"}}
	}, adapters.ChatInput{}, `{"a":1}`, `{"c":1,"model":"gpt-4o"}`)

	// temperature clamp
	clamp := func(k *testKey) {
		k.Body.TemperatureMin = ptr(0.2)
		k.Body.TemperatureMax = ptr(1.0)
	}
	f("temperature above max", clamp, adapters.ChatInput{}, `{"temperature":1.7}`, `{"temperature":1,"model":"gpt-4o"}`)
	f("temperature below min", clamp, adapters.ChatInput{}, `{"temperature":0}`, `{"temperature":0.2,"model":"gpt-4o"}`)
	f("temperature inside kept", clamp, adapters.ChatInput{}, `{"temperature":0.5}`, `{"temperature":0.5,"model":"gpt-4o"}`)
	f("temperature null kept", clamp, adapters.ChatInput{}, `{"temperature":null}`, `{"temperature":null,"model":"gpt-4o"}`)
	f("only max bound", func(k *testKey) { k.Body.TemperatureMax = ptr(0.7) },
		adapters.ChatInput{}, `{"temperature":-3}`, `{"temperature":-3,"model":"gpt-4o"}`)
	f("clamp after rename", func(k *testKey) {
		clamp(k)
		k.Body.ParamRenames = []Rename{{From: "temp", To: "temperature"}}
	}, adapters.ChatInput{}, `{"temp":5}`, `{"temperature":1,"model":"gpt-4o"}`)

	// default_body_fields
	defs := func(k *testKey) {
		k.Body.DefaultBodyFields = []BodyField{
			{Key: "safety_identifier", Value: []byte(`"gw"`)},
			{Key: "metadata", Value: []byte(`{"a":"b"}`)},
			{Key: "model", Value: []byte(`"nope"`)},
			{Key: "stream", Value: []byte(`true`)},
		}
	}
	f("default fields added when absent", defs, adapters.ChatInput{}, `{"messages":[]}`,
		`{"messages":[],"model":"gpt-4o","safety_identifier":"gw","metadata":{"a":"b"}}`)
	f("default fields kept when caller set them (null included)", defs, adapters.ChatInput{},
		`{"safety_identifier":"me","metadata":null}`, `{"safety_identifier":"me","metadata":null,"model":"gpt-4o"}`)
	f("default field after rename sees the renamed key", func(k *testKey) {
		k.Body.ParamRenames = []Rename{{From: "x", To: "y"}}
		k.Body.DefaultBodyFields = []BodyField{{Key: "y", Value: []byte(`0`)}}
	}, adapters.ChatInput{}, `{"x":1}`, `{"y":1,"model":"gpt-4o"}`)

	// content_list_to_string
	flat := func(k *testKey) { k.Body.ContentListToString = true }
	f("text blocks flattened", flat, adapters.ChatInput{},
		`{"messages":[{"role":"user","content":[{"type":"text","text":"Hello "},{"type":"text","text":"w\"orld\n","cache_control":{"type":"ephemeral"}}]}]}`,
		`{"messages":[{"role":"user","content":"Hello w\"orld\n"}],"model":"gpt-4o"}`)
	f("mixed blocks kept", flat, adapters.ChatInput{},
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]}],"model":"gpt-4o"}`)
	f("string content and empty list kept", flat, adapters.ChatInput{},
		`{"messages":[{"role":"user","content":"s"},{"role":"user","content":[]}]}`,
		`{"messages":[{"role":"user","content":"s"},{"role":"user","content":[]}],"model":"gpt-4o"}`)
	f("flatten off by default", nil, adapters.ChatInput{},
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"model":"gpt-4o"}`)
	f("flatten and developer in one message", func(k *testKey) { flat(k); k.Provider = "x" },
		adapters.ChatInput{},
		`{"messages":[{"role":"developer","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`,
		`{"messages":[{"role":"system","content":"ab"}],"model":"gpt-4o"}`)

	// stream_options.include_usage
	f("include_usage added", nil, adapters.ChatInput{Stream: true, ForceUsage: true},
		`{"stream":true}`, `{"stream":true,"model":"gpt-4o","stream_options":{"include_usage":true}}`)
	f("include_usage set, other stream_options kept", nil, adapters.ChatInput{Stream: true, ForceUsage: true},
		`{"stream":true,"stream_options":{"include_obfuscation":false,"include_usage":false}}`,
		`{"stream":true,"stream_options":{"include_obfuscation":false,"include_usage":true},"model":"gpt-4o"}`)
	f("stream_options null replaced", nil, adapters.ChatInput{Stream: true, ForceUsage: true},
		`{"stream":true,"stream_options":null}`, `{"stream":true,"stream_options":{"include_usage":true},"model":"gpt-4o"}`)
	f("no include_usage without ForceUsage", nil, adapters.ChatInput{Stream: true},
		`{"stream":true}`, `{"stream":true,"model":"gpt-4o"}`)
	f("no include_usage when not streaming", nil, adapters.ChatInput{ForceUsage: true},
		`{}`, `{"model":"gpt-4o"}`)
	f("include_usage on default stream_options", func(k *testKey) {
		k.Body.DefaultBodyFields = []BodyField{{Key: "stream_options", Value: []byte(`{"include_obfuscation":false}`)}}
	}, adapters.ChatInput{Stream: true, ForceUsage: true}, `{"stream":true}`,
		`{"stream":true,"model":"gpt-4o","stream_options":{"include_obfuscation":false,"include_usage":true}}`)
}

func TestBodyVerbatim(t *testing.T) {
	// Bytes outside edited members are copied as they are.
	body := `{ "model" : "alias",  "messages": [ {"role":"user", "content":"hi"} ], "n": 1.50 }`
	req := build(t, key(nil), &adapters.ChatInput{Body: []byte(body), UpstreamModel: "up"})
	want := `{ "model" : "up",  "messages": [ {"role":"user", "content":"hi"} ], "n": 1.50 }`
	if got := string(req.Body()); got != want {
		t.Fatalf("got %s; want %s", got, want)
	}
}

// TestBodyShapeModel: with the edge's shape of the body (the model
// member's value), the model is replaced in place, byte for byte as the
// walk of the body would; a shape whose model is not within the body is
// ignored.
func TestBodyShapeModel(t *testing.T) {
	for _, body := range []string{
		`{ "model" : "alias",  "messages": [ {"role":"user", "content":"hi"} ], "n": 1.50 }`,
		`{"messages":[],"model":"a\u0020b"}`,
		`{"model":"x"}`,
	} {
		b := []byte(body)
		_, at, _ := strings.Cut(body, `"model"`)
		at = strings.TrimLeft(at, " :")
		end := strings.IndexAny(at[1:], `"`) + 2
		model := b[len(body)-len(at) : len(body)-len(at)+end]
		plain := build(t, key(nil), &adapters.ChatInput{Body: b, UpstreamModel: "up \"q\""})
		shaped := build(t, key(nil), &adapters.ChatInput{Body: b, UpstreamModel: "up \"q\"", Shape: adapters.BodyShape{Model: model}})
		if string(shaped.Body()) != string(plain.Body()) {
			t.Fatalf("%s: shaped %s; walked %s", body, shaped.Body(), plain.Body())
		}
		elsewhere := build(t, key(nil), &adapters.ChatInput{Body: b, UpstreamModel: "up", Shape: adapters.BodyShape{Model: []byte(`"alias"`)}})
		if !strings.Contains(string(elsewhere.Body()), `"up"`) {
			t.Fatalf("%s: a shape outside the body was used: %s", body, elsewhere.Body())
		}
	}
}

func TestBodyNotObject(t *testing.T) {
	a, _ := compile(key(nil))
	for _, body := range []string{``, `[]`, `"x"`, `{"a":`, `nul`} {
		req := &fasthttp.Request{}
		err := a.BuildChat(req, &adapters.ChatInput{Body: []byte(body), UpstreamModel: "m"})
		if !errors.Is(err, adapters.ErrBody) {
			t.Fatalf("body %q: got %v; want ErrBody", body, err)
		}
	}
}

func TestURLAndAuth(t *testing.T) {
	f := func(name string, mod func(*testKey), model, wantURL, wantAuthKey, wantAuth string) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Helper()
			req := build(t, key(mod), &adapters.ChatInput{Body: []byte(`{}`), UpstreamModel: model})
			if got := req.URI().String(); got != wantURL {
				t.Fatalf("url %q; want %q", got, wantURL)
			}
			if got := string(req.Header.Method()); got != "POST" {
				t.Fatalf("method %q", got)
			}
			if got := string(req.Header.ContentType()); got != "application/json" {
				t.Fatalf("content-type %q", got)
			}
			if got := string(req.Header.Peek(wantAuthKey)); got != wantAuth {
				t.Fatalf("%s %q; want %q", wantAuthKey, got, wantAuth)
			}
		})
	}
	f("default base", nil, "gpt-4o", "https://api.openai.com/v1/chat/completions", "Authorization", "Bearer sk-upstream")
	f("api_base trailing slash and query", func(k *testKey) { k.BaseURL = "http://10.0.0.1:8000/v1/?x=1" },
		"m", "http://10.0.0.1:8000/v1/chat/completions?x=1", "Authorization", "Bearer sk-upstream")
	azure := func(base string) func(*testKey) {
		return func(k *testKey) {
			k.azure, k.Provider, k.BaseURL = true, "azure", base
		}
	}
	f("azure v1", azure("https://r.openai.azure.com/openai/v1"), "dep",
		"https://r.openai.azure.com/openai/v1/chat/completions", "Api-Key", "sk-upstream")
	f("azure dated", azure("https://r.openai.azure.com"), "my dep",
		"https://r.openai.azure.com/openai/deployments/my%20dep/chat/completions?api-version=2024-10-21", "Api-Key", "sk-upstream")
	f("azure dated with version in base", azure("https://r.openai.azure.com/openai?api-version=2025-01-01-preview"), "d",
		"https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2025-01-01-preview", "Api-Key", "sk-upstream")
	f("azure deployment in base", azure("https://r.openai.azure.com/openai/deployments/fixed"), "ignored",
		"https://r.openai.azure.com/openai/deployments/fixed/chat/completions?api-version=2024-10-21", "Api-Key", "sk-upstream")
	f("azure dot segment escaped", azure("https://r.openai.azure.com"), "..",
		"https://r.openai.azure.com/openai/deployments/%2E%2E/chat/completions?api-version=2024-10-21", "Api-Key", "sk-upstream")
}

func TestAzureRequiresBase(t *testing.T) {
	_, err := compile(key(func(k *testKey) { k.azure = true }))
	if !errors.Is(err, adapters.ErrConfig) {
		t.Fatalf("got %v; want ErrConfig", err)
	}
}

func TestAzureBodyRules(t *testing.T) {
	k := key(func(k *testKey) {
		k.azure, k.Provider, k.BaseURL = true, "openai", "https://r.openai.azure.com/openai/v1"
	})
	req := build(t, k, &adapters.ChatInput{UpstreamModel: "o3",
		Body: []byte(`{"max_tokens":5,"messages":[{"role":"developer","content":"x"}]}`)})
	jsonEqual(t, string(req.Body()), `{"max_completion_tokens":5,"messages":[{"role":"system","content":"x"}],"model":"o3"}`)
}

func TestUserInfoBecomesBasicAuth(t *testing.T) {
	// Documented fasthttp behaviour: user-info in the URL is sent as Basic
	// auth and replaces the Bearer credential when the request is written.
	req := build(t, key(func(k *testKey) { k.BaseURL = "https://u:p%40ss@h.example/v1" }),
		&adapters.ChatInput{Body: []byte(`{}`), UpstreamModel: "m"})
	var sb strings.Builder
	if _, err := req.WriteTo(&sb); err != nil {
		t.Fatal(err)
	}
	wire := sb.String()
	if !strings.Contains(wire, "Authorization: Basic ") || strings.Contains(wire, "Bearer") {
		t.Fatalf("want Basic auth from user-info, got:\n%s", wire)
	}
	if !strings.HasPrefix(wire, "POST /v1/chat/completions HTTP/1.1\r\n") || !strings.Contains(wire, "Host: h.example\r\n") {
		t.Fatalf("user-info leaked into the request line or host:\n%s", wire)
	}
}

func TestHeadersThroughBuildChat(t *testing.T) {
	k := key(func(k *testKey) {
		k.Headers.ForwardClientHeaders = []string{"x-trace-*", "authorization"}
		k.Headers.DefaultHeaders = []headers.Template{
			{Name: "x-team", Parts: []headers.Part{{Literal: "t-"}, {Var: headers.VarAPIKeyTeamID}}},
			{Name: "authorization", Parts: []headers.Part{{Literal: "Bearer evil"}}},
			{Name: "content-type", Parts: []headers.Part{{Literal: "text/plain"}}},
		}
	})
	client := &fasthttp.RequestHeader{}
	client.Set("Authorization", "Bearer sk-gw-caller")
	client.Set("X-Trace-Id", "abc")
	client.Set("Content-Type", "application/json; charset=utf-8")
	in := &adapters.ChatInput{Body: []byte(`{}`), UpstreamModel: "m", ClientHeaders: client,
		CallerCredential: headers.SlotAuthorization}
	in.Vars[headers.VarAPIKeyTeamID] = "42"
	req := build(t, k, in)
	for k, want := range map[string]string{
		"Authorization": "Bearer sk-upstream", // caller's gw key never relayed; default cannot override
		"X-Team":        "t-42",
		"X-Trace-Id":    "abc",
		"Content-Type":  "application/json",
	} {
		if got := string(req.Header.Peek(k)); got != want {
			t.Errorf("%s = %q; want %q", k, got, want)
		}
	}
}

func TestAdapterStringHidesKey(t *testing.T) {
	a, _ := compile(key(nil))
	for _, s := range []string{a.(*Adapter).String(), a.(*Adapter).GoString()} {
		if strings.Contains(s, "sk-upstream") {
			t.Fatalf("credential printed: %s", s)
		}
	}
}

func TestIsReasoningModel(t *testing.T) {
	yes := []string{"o1", "o1-mini", "o1-preview", "o3", "o3-mini", "o3-pro", "o4-mini", "O3", "gpt-5", "gpt-5-mini",
		"gpt-5.1", "GPT-5-nano-2025-08-07", "gpt-6", "openai/o3", "gpt-10"}
	no := []string{"", "o", "omni-moderation", "gpt-4o", "gpt-4.1", "gpt-4o-mini", "gpt-3.5-turbo", "o3x", "gpt-5x",
		"gpt-", "gpt-05", "llama-3", "claude-3-opus"}
	for _, m := range yes {
		if !IsReasoningModel(m) {
			t.Errorf("%q: got false; want true", m)
		}
	}
	for _, m := range no {
		if IsReasoningModel(m) {
			t.Errorf("%q: got true; want false", m)
		}
	}
}

func TestConcurrentBuildChat(t *testing.T) {
	a, _ := compile(key(func(k *testKey) { k.Provider = "x"; k.Body.ContentListToString = true }))
	body := []byte(`{"model":"a","messages":[{"role":"developer","content":[{"type":"text","text":"x"}]}],"stream":true}`)
	done := make(chan string, 8)
	for range 8 {
		go func() {
			for range 200 {
				req := fasthttp.AcquireRequest()
				if err := a.BuildChat(req, &adapters.ChatInput{Body: body, UpstreamModel: "up", Stream: true, ForceUsage: true}); err != nil {
					done <- err.Error()
					return
				}
				want := `{"model":"up","messages":[{"role":"system","content":"x"}],"stream":true,"stream_options":{"include_usage":true}}`
				if got := string(req.Body()); got != want {
					done <- got
					return
				}
				fasthttp.ReleaseRequest(req)
			}
			done <- ""
		}()
	}
	for range 8 {
		if s := <-done; s != "" {
			t.Fatal(s)
		}
	}
}

// TestDeveloperRoleTable is the spec's developer-role table for the
// chat-completions families (docs/PROVIDERS.md#developer-role).
func TestDeveloperRoleTable(t *testing.T) {
	const body = `{"messages":[{"role":"user","content":"a"},{"role":"developer","content":"b"}]}`
	f := func(row string, mod func(*testKey), modelProvider, wantRole string) {
		t.Helper()
		t.Run(row, func(t *testing.T) {
			req := build(t, key(mod), &adapters.ChatInput{Body: []byte(body), UpstreamModel: "gpt-4o", Provider: modelProvider})
			want := `{"messages":[{"role":"user","content":"a"},{"role":"` + wantRole + `","content":"b"}],"model":"gpt-4o"}`
			jsonEqual(t, string(req.Body()), want)
		})
	}
	f("provider openai key, default api_base", nil, "", "developer")
	f("provider openai key, any api_base", func(k *testKey) { k.BaseURL = "https://proxy.example/v1" }, "", "developer")
	f("other chat-completions provider", func(k *testKey) { k.Provider = "deepseek" }, "", "system")
	f("model provider overrides the key's", nil, "groq", "system")
	f("azure-style provider on the openai family", func(k *testKey) { k.Provider = "azure_openai" }, "", "system")
	f("azure-openai family, even with provider openai", func(k *testKey) {
		k.azure, k.BaseURL = true, "https://r.openai.azure.com/openai/v1"
	}, "", "system")
}
