package registry_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/headers"
	"gw/adapters/openai"
	"gw/adapters/registry"
	"gw/adapters/upstream"
	"gw/admin/resources"
	"gw/sse/rawjson"
)

func load(t *testing.T, yaml string, env map[string]string) *resources.Resources {
	t.Helper()
	res := resources.Load([]byte(yaml), func(n string) (string, bool) { v, ok := env[n]; return v, ok })
	if err := res.Err(); err != nil {
		t.Fatalf("cannot load: %v", err)
	}
	return res.Resources
}

// TestExampleFile compiles every provider key of examples/gw.yaml.
func TestExampleFile(t *testing.T) {
	raw, err := os.ReadFile("../../examples/gw.yaml")
	if err != nil {
		t.Skip("examples/gw.yaml not readable:", err)
	}
	env := func(n string) (string, bool) {
		if n == "MOCK_BASE" {
			return "http://127.0.0.1:9999", true
		}
		return "x-" + n + "-" + strings.Repeat("k", 40), true
	}
	res := resources.Load(raw, env)
	if err := res.Err(); err != nil {
		t.Skip("examples/gw.yaml does not load right now (edited concurrently?):", err)
	}
	pool := upstream.NewPool(upstream.Options{})
	for _, pk := range res.Resources.ProviderKeys {
		a, err := registry.New(pk, adapters.Options{})
		if _, ok := registry.Families[pk.Adapter]; !ok {
			if !errors.Is(err, adapters.ErrUnsupported) {
				t.Fatalf("%s (%s): got %v; want ErrUnsupported", pk.DisplayName, pk.Adapter, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", pk.DisplayName, err)
		}
		base, err := registry.BaseURL(pk)
		if err != nil {
			t.Fatalf("%s: %v", pk.DisplayName, err)
		}
		if _, err := pool.Client(upstream.TargetOf(pk, base)); err != nil {
			t.Fatalf("%s: %v", pk.DisplayName, err)
		}
		if s, ok := a.(interface{ String() string }); !ok || strings.Contains(s.String(), "kkkk") {
			t.Fatalf("%s: adapter prints its credential", pk.DisplayName)
		}
	}
}

func TestBaseURL(t *testing.T) {
	f := func(pk resources.ProviderKey, want string, wantErr error) {
		t.Helper()
		got, err := registry.BaseURL(&pk)
		if got != want || !errors.Is(err, wantErr) {
			t.Fatalf("%+v: got %q, %v; want %q, %v", pk.Adapter, got, err, want, wantErr)
		}
	}
	f(resources.ProviderKey{Adapter: resources.AdapterOpenAI}, openai.DefaultBaseURL, nil)
	f(resources.ProviderKey{}, openai.DefaultBaseURL, nil)
	f(resources.ProviderKey{Adapter: resources.AdapterOpenAI, APIBase: "http://h/v1"}, "http://h/v1", nil)
	f(resources.ProviderKey{Adapter: resources.AdapterAzureOpenAI}, "", adapters.ErrConfig)
	f(resources.ProviderKey{Adapter: resources.AdapterBedrock}, "", adapters.ErrUnsupported)
}

// TestEndToEnd drives a key loaded from YAML through BuildChat, the
// upstream client and the response helpers against a local server.
func TestEndToEnd(t *testing.T) {
	type seen struct {
		path, auth, team, trace, xgw, body string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Team"), r.Header.Get("X-Trace-Id"),
			r.Header.Get("X-Gw-Routing-Key"), string(b)}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"id\":\"c1\",\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n")
		io.WriteString(w, "data: {\"id\":\"c1\",\"model\":\"gpt-4o-2024-08-06\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()

	res := load(t, `_format_version: "1"
provider_keys:
  - display_name: local
    provider: vllm
    api_key: ${KEY}
    api_base: ${BASE}/v1
    request:
      default_headers:
        x-team: "$${request.api_key.team_id}"
      forward_client_headers: ["x-trace-*", "x-gw-*"]
`, map[string]string{"KEY": "sk-local", "BASE": srv.URL})
	pk := res.ProviderKeys[0]
	a, err := registry.New(pk, adapters.Options{})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := registry.BaseURL(pk)
	c, err := upstream.NewPool(upstream.Options{}).Client(upstream.TargetOf(pk, base))
	if err != nil {
		t.Fatal(err)
	}

	client := &fasthttp.RequestHeader{}
	client.Set("Authorization", "Bearer sk-gw-caller")
	client.Set("X-Trace-Id", "t-1")
	client.Set("X-Gw-Routing-Key", "rk")
	in := &adapters.ChatInput{
		Body:          []byte(`{"model":"my-alias","stream":true,"messages":[{"role":"developer","content":"terse"}]}`),
		UpstreamModel: "qwen-72b", Stream: true, ForceUsage: true,
		ClientHeaders: client, CallerCredential: headers.SlotAuthorization,
	}
	in.Vars[resources.VarAPIKeyTeamID] = "team-9"
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	if err := a.BuildChat(req, in); err != nil {
		t.Fatal(err)
	}
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	if err := c.DoStream(req, resp, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	s := <-got
	want := seen{"/v1/chat/completions", "Bearer sk-local", "team-9", "t-1", "",
		`{"model":"qwen-72b","stream":true,"messages":[{"role":"system","content":"terse"}],"stream_options":{"include_usage":true}}`}
	if s != want {
		t.Fatalf("upstream saw %+v\nwant %+v", s, want)
	}

	alias := rawjson.AppendQuote(nil, "my-alias")
	upstream.SetReadDeadline(resp, time.Now().Add(5*time.Second))
	body, err := io.ReadAll(resp.BodyStream())
	if err != nil {
		t.Fatal(err)
	}
	resp.CloseBodyStream()
	var out []string
	var usage adapters.Usage
	for _, line := range strings.Split(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		if openai.IsUsageOnlyChunk([]byte(data)) {
			usage, _ = openai.ExtractUsage([]byte(data))
			continue // the caller did not ask for usage
		}
		out = append(out, string(openai.RewriteModel(nil, []byte(data), alias)))
	}
	if len(out) != 1 || out[0] != `{"id":"c1","model":"my-alias","choices":[{"index":0,"delta":{"content":"Hi"}}]}` {
		t.Fatalf("chunks %q", out)
	}
	if usage != (adapters.Usage{Prompt: 3, Completion: 1, Total: 4}) {
		t.Fatalf("usage %+v", usage)
	}
}
