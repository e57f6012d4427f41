package aiproxymulti

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/edge/gateway/plugin"
	"gw/edge/gateway/vars"
)

func TestDecode(t *testing.T) {
	inst := func(name string) string {
		return `{"name":"` + name + `","provider":"openai","weight":1}`
	}
	for _, tc := range []struct {
		conf, err string
		notBuilt  bool
	}{
		{`{"instances":[` + inst("a") + `,` + inst("b") + `]}`, "", false},
		{`{"instances":[` + inst("a") + `,` + inst("a") + `,` + inst("b") + `,` + inst("b") + `]}`, "duplicate instance name a, b", false},
		{`{"instances":[]}`, "at least one instance", false},
		{`{"instances":[` + inst("a") + `],"bogus":1}`, `unknown field "bogus"`, false},
		{`{"instances":[{"name":"a","provider":"openai","weight":1,"checks":{"active":{}}}]}`, "instances[0].checks", true},
		{`{"instances":[{"name":"a","provider":"openai-compatible","weight":1}]}`, "override.endpoint: required", false},
		{`{"instances":[{"name":"a","provider":"nope","weight":1}]}`, `unknown provider "nope"`, false},
		{`{"instances":[` + inst("a") + `],"balancer":{"algorithm":"semantic"},"semantic_opts":{}}`, "balancer.algorithm: semantic balancing", true},
		{`{"instances":[` + inst("a") + `],"semantic_opts":{"x":1}}`, "semantic_opts", true},
		{`{"instances":[` + inst("a") + `],"balancer":{"algorithm":"chash","key":"x"}}`, "chash", true},
		{`{"instances":[` + inst("a") + `],"keepalive":false}`, "keepalive", true},
		{`{"instances":[` + inst("a") + `],"keepalive_timeout":60000,"keepalive_pool":30,"keepalive":true}`, "", false},
		{`{"instances":[` + inst("a") + `],"logging":{"summaries":true}}`, "logging", true},
		{`{"instances":[` + inst("a") + `],"fallback_strategy":"instance_health_and_rate_limiting"}`, "fallback_strategy", true},
		{`{"instances":[` + inst("a") + `],"fallback_http_statuses":[429,503],"fallback_strategy":"http_5xx","timeout":1000}`, "", false},
		{`{"instances":[{"name":"a","provider":"openai","weight":1,"options":{"stream":true}}]}`, "options.stream", true},
	} {
		_, err := Decode(json.RawMessage(tc.conf))
		if tc.err == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.conf, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: got %v; want %q", tc.conf, err, tc.err)
			continue
		}
		if errors.Is(err, plugin.ErrNotBuilt) != tc.notBuilt {
			t.Errorf("%s: %v: not-built %v; want %v", tc.conf, err, !tc.notBuilt, tc.notBuilt)
		}
	}
}

func TestBaseURL(t *testing.T) {
	for _, tc := range []struct{ provider, endpoint, want, err string }{
		{"openai", "", "https://api.openai.com/v1", ""},
		{"openai-compatible", "http://h:1/v1/chat/completions", "http://h:1/v1", ""},
		{"openai-compatible", "http://h:1", "http://h:1/v1", ""},
		{"deepseek", "http://h:1/", "http://h:1", ""},
		{"azure-openai", "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21",
			"https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21", ""},
		{"openai-compatible", "http://h:1/v1/embeddings", "", "must be empty or end with /chat/completions"},
		{"openai-compatible", "ftp://h", "", "absolute http"},
	} {
		ic := &instanceConf{Provider: tc.provider}
		ic.Override.Endpoint = tc.endpoint
		got, err := baseURL(ic)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: got %q %v; want error %q", tc.endpoint, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q %v; want %q", tc.endpoint, got, err, tc.want)
		}
	}
}

// backend answers chat requests as an OpenAI server would, with status
// (when not 200) before reading anything, and records what it saw.
type backend struct {
	srv    *httptest.Server
	status int
	hits   atomic.Int64
	last   atomic.Value // string: auth header + " " + body
}

func newBackend(t *testing.T, name string, status int) *backend {
	b := &backend{status: status}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		b.last.Store(r.URL.RequestURI() + " " + r.Header.Get("Authorization") + " " + string(body))
		if b.status != 200 {
			w.WriteHeader(b.status)
			io.WriteString(w, `{"error":{"message":"busy"}}`)
			return
		}
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\""+name+"\"}}]}\n\n")
			w.(http.Flusher).Flush()
			if strings.Contains(string(body), `"include_usage":true`) {
				// Split across writes, as a usage chunk may reach the relay.
				io.WriteString(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,")
				w.(http.Flusher).Flush()
				io.WriteString(w, "\"completion_tokens\":4,\"total_tokens\":15}}\r\n\r\n")
			}
			io.WriteString(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req-"+name)
		io.WriteString(w, `{"choices":[{"message":{"content":"`+name+`"}}],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10,"prompt_tokens_details":{"cached_tokens":2}}}`)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func run(t *testing.T, p plugin.Plugin, body string) *fasthttp.Response {
	t.Helper()
	r := &fasthttp.RequestCtx{}
	r.Request.Header.SetMethod("POST")
	r.Request.SetRequestURI("/chat")
	r.Request.SetBodyString(body)
	c := &plugin.Ctx{}
	c.Reset(r, &vars.Context{})
	if p.Access(c) {
		t.Fatal("Access let the request through; want it answered")
	}
	out := &r.Response
	if out.IsBodyStream() {
		b, _ := io.ReadAll(out.BodyStream())
		out.SetBodyRaw(b)
	}
	return out
}

func TestAccessFallback(t *testing.T) {
	busy := newBackend(t, "busy", 429)
	good := newBackend(t, "good", 200)
	conf := `{"instances":[
		{"name":"busy","provider":"openai-compatible","weight":1,"priority":1,"override":{"endpoint":"` + busy.srv.URL + `/v1/chat/completions"},"auth":{"header":{"Authorization":"Bearer k-busy"}}},
		{"name":"good","provider":"openai-compatible","weight":1,"override":{"endpoint":"` + good.srv.URL + `"},"auth":{"header":{"Authorization":"Bearer k-good"},"query":{"tenant":"t1"}},"options":{"model":"m-good","temperature":0.5}}
	],"fallback_http_statuses":[429]}`
	p, err := New(json.RawMessage(conf), &plugin.Env{Shared: plugin.NewShared()}, "route/1")
	if err != nil {
		t.Fatal(err)
	}
	resp := run(t, p, `{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":1}`)
	if resp.StatusCode() != 200 || !strings.Contains(string(resp.Body()), `"good"`) || string(resp.Header.Peek("X-Request-Id")) != "req-good" {
		t.Fatalf("got %d %s", resp.StatusCode(), resp.Body())
	}
	if busy.hits.Load() != 1 || good.hits.Load() != 1 {
		t.Fatalf("hits busy %d good %d; want 1 1", busy.hits.Load(), good.hits.Load())
	}
	seen := good.last.Load().(string)
	for _, want := range []string{"/v1/chat/completions?tenant=t1 ", "Bearer k-good", `"model":"m-good"`, `"temperature":0.5`} {
		if !strings.Contains(seen, want) {
			t.Errorf("good saw %q; want %q in it", seen, want)
		}
	}
	if s := busy.last.Load().(string); !strings.Contains(s, "Bearer k-busy") || !strings.Contains(s, `"model":"m"`) {
		t.Errorf("busy saw %q", s)
	}

	resp = run(t, p, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode() != 200 || !strings.Contains(string(resp.Body()), `"content":"good"`) || !strings.Contains(string(resp.Body()), "[DONE]") {
		t.Fatalf("stream: got %d %s", resp.StatusCode(), resp.Body())
	}

	// Without 429 among the fallback statuses, the higher-priority busy
	// instance's answer is relayed.
	p2, err := New(json.RawMessage(strings.Replace(conf, `"fallback_http_statuses":[429]`, `"fallback_http_statuses":[503]`, 1)), nil, "route/2")
	if err != nil {
		t.Fatal(err)
	}
	if resp := run(t, p2, `{"model":"m","messages":[]}`); resp.StatusCode() != 429 {
		t.Fatalf("got %d; want the busy instance's 429", resp.StatusCode())
	}
	if resp := run(t, p2, `not json`); resp.StatusCode() != 400 {
		t.Fatalf("got %d; want 400", resp.StatusCode())
	}
}

func TestAccessConnectionError(t *testing.T) {
	good := newBackend(t, "good", 200)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	conf := `{"instances":[
		{"name":"dead","provider":"openai-compatible","weight":1,"priority":1,"override":{"endpoint":"` + deadURL + `"}},
		{"name":"good","provider":"openai-compatible","weight":1,"override":{"endpoint":"` + good.srv.URL + `"}}]}`
	p, err := New(json.RawMessage(conf), nil, "route/3")
	if err != nil {
		t.Fatal(err)
	}
	if resp := run(t, p, `{"model":"m","messages":[]}`); resp.StatusCode() != 200 {
		t.Fatalf("got %d %s; want the good instance's answer", resp.StatusCode(), resp.Body())
	}
	one := `{"instances":[{"name":"dead","provider":"openai-compatible","weight":1,"override":{"endpoint":"` + deadURL + `"}}]}`
	p, err = New(json.RawMessage(one), nil, "route/4")
	if err != nil {
		t.Fatal(err)
	}
	if resp := run(t, p, `{"model":"m","messages":[]}`); resp.StatusCode() != 502 {
		t.Fatalf("got %d %s; want 502", resp.StatusCode(), resp.Body())
	}
}
