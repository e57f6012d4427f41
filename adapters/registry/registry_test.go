package registry_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/anthropic"
	"gw/adapters/headers"
	"gw/adapters/openai"
	"gw/adapters/registry"
	"gw/adapters/upstream"
	"gw/sse/rawjson"
)

func TestBaseURL(t *testing.T) {
	f := func(c registry.Config, want string, wantErr error) {
		t.Helper()
		got, err := registry.BaseURL(&c)
		if got != want || !errors.Is(err, wantErr) {
			t.Fatalf("%q: got %q, %v; want %q, %v", c.Family, got, err, want, wantErr)
		}
	}
	f(registry.Config{Family: registry.FamilyOpenAI}, openai.DefaultBaseURL, nil)
	f(registry.Config{}, openai.DefaultBaseURL, nil)
	f(registry.Config{Family: registry.FamilyOpenAI, Key: adapters.KeyConfig{BaseURL: "http://h/v1"}}, "http://h/v1", nil)
	f(registry.Config{Family: registry.FamilyAnthropic}, anthropic.DefaultBaseURL, nil)
	f(registry.Config{Family: registry.FamilyAzureOpenAI}, "", adapters.ErrConfig)
	bedrockDoc := adapters.NewSecret(`{"access_key_id":"AKID","secret_access_key":"s","region":"eu-west-3"}`)
	f(registry.Config{Family: registry.FamilyBedrock, Key: adapters.KeyConfig{Credential: bedrockDoc}}, "https://bedrock-runtime.eu-west-3.amazonaws.com", nil)
	f(registry.Config{Family: registry.FamilyBedrock, Key: adapters.KeyConfig{Credential: bedrockDoc, BaseURL: "http://vpce.example"}}, "http://vpce.example", nil)
}

func TestNew(t *testing.T) {
	for _, fam := range []string{"nope"} {
		if _, err := registry.New(&registry.Config{Family: fam}, adapters.Options{}); !errors.Is(err, adapters.ErrUnsupported) {
			t.Fatalf("%s: got %v; want ErrUnsupported", fam, err)
		}
		if registry.Built(fam) {
			t.Fatalf("%s: Built", fam)
		}
	}
	for _, fam := range []string{"", registry.FamilyOpenAI, registry.FamilyAzureOpenAI, registry.FamilyAnthropic, registry.FamilyBedrock, registry.FamilyVertex} {
		if !registry.Built(fam) {
			t.Fatalf("%q: not Built", fam)
		}
	}
	c := &registry.Config{Family: registry.FamilyAnthropic}
	a, err := registry.New(c, adapters.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := a.(adapters.Protocoler); !ok || p.Protocol() != anthropic.ProtocolMessages {
		t.Fatalf("anthropic adapter does not report the messages protocol")
	}
}

// TestCredentialNeverPrinted formats the config and the adapter of every
// family with every common verb: the credential must not appear.
func TestCredentialNeverPrinted(t *testing.T) {
	const secret = "sk-very-secret-credential"
	for _, fam := range []string{registry.FamilyOpenAI, registry.FamilyAzureOpenAI, registry.FamilyAnthropic} {
		c := &registry.Config{Family: fam, Key: adapters.KeyConfig{Name: "k", Credential: adapters.NewSecret(secret),
			BaseURL: "https://r.example/v1", Messages: adapters.NativeSurface{On: true}}}
		a, err := registry.New(c, adapters.Options{})
		if err != nil {
			t.Fatalf("%s: %v", fam, err)
		}
		var out []string
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
			out = append(out, fmt.Sprintf(verb, c), fmt.Sprintf(verb, *c), fmt.Sprintf(verb, a), fmt.Sprintf(verb, c.Key.Credential))
		}
		j, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(j), fmt.Sprint(errors.New(fmt.Sprint(c))))
		for _, s := range out {
			if strings.Contains(s, secret) || strings.Contains(s, fmt.Sprintf("%x", secret)) {
				t.Fatalf("%s: credential printed: %s", fam, s)
			}
		}
		if c.Key.Credential.Reveal() != secret {
			t.Fatalf("Reveal: got %q", c.Key.Credential.Reveal())
		}
	}
}

// TestEndToEnd drives a key through BuildChat, the upstream client and the
// response helpers against a local server. (admin/snapshot checks that the
// same key written in a resource file compiles to this Config.)
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

	c := &registry.Config{
		Family: registry.FamilyOpenAI,
		Key: adapters.KeyConfig{
			Name:       "local",
			Credential: adapters.NewSecret("sk-local"),
			BaseURL:    srv.URL + "/v1",
			Headers: headers.Config{
				DefaultHeaders:       []headers.Template{{Name: "x-team", Parts: []headers.Part{{Var: headers.VarAPIKeyTeamID}}}},
				ForwardClientHeaders: []string{"x-trace-*", "x-gw-*"},
			},
		},
		OpenAI: openai.Config{Provider: "vllm"},
		TLS:    upstream.TLS{Verify: true},
	}
	a, err := registry.New(c, adapters.Options{})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := registry.BaseURL(c)
	cl, err := upstream.NewPool(upstream.Options{}).Client(c.Target(base))
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
	in.Vars[headers.VarAPIKeyTeamID] = "team-9"
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	if err := a.BuildChat(req, in); err != nil {
		t.Fatal(err)
	}
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	if err := cl.DoStream(req, resp, 5*time.Second); err != nil {
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
