package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"gw/edge/usage/usagetest"
	"gw/perf/mock"
)

// TestGatewayAIProxyMultiE2E: a route with ai-proxy-multi over two real
// mock upstreams; the higher-priority one answers 429 (a knob in its
// endpoint path), so every call falls back to the other, buffered and
// streamed through the OpenAI SDK; duplicate instance names and options
// the plugin does not run are 400s at write time; every call writes the AI
// path's usage records (failed attempt, final with tokens) to an OTLP
// receiver. The same gw serves the
// post_arg.* routes and the $env:// secret references.
func TestGatewayAIProxyMultiE2E(t *testing.T) {
	start := time.Now()
	t.Setenv("GW_E2E_SECRET_KEY", "env-key-1")
	t.Setenv("GW_E2E_SECRET_JSON", `{"hdr":"from-json"}`)
	busy := startMock(t, "AIPM_BUSY", mock.Config{})
	good := startMock(t, "AIPM_GOOD", mock.Config{})
	// Usage records go to an OTLP receiver through the resource file's
	// exporter, as the AI path's do.
	rcv := usagetest.StartOTLP(t)
	t.Setenv("AIPM_OTLP", rcv.URL)
	res := writeTemp(t, "aipm.yaml", "_format_version: \"1\"\nobservability_exporters:\n"+
		"  - {name: otel, kind: otlp_http, endpoint: \"${AIPM_OTLP}\", batch_size: 1, flush_interval_ms: 100}\n")
	g := startAdminGW(t, "--data-dir", t.TempDir(), "--resources-file", res)
	t.Cleanup(func() {
		if log := g.stderr.String(); strings.Contains(log, "DATA RACE") || strings.Contains(log, "panic:") {
			t.Errorf("gw reported a race or a panic:\n%s", log)
		}
		t.Logf("wall time %v", time.Since(start))
	})
	busyURL, goodURL := os.Getenv("AIPM_BUSY"), os.Getenv("AIPM_GOOD")

	route := `{"uri":"/ai/*","plugins":{"ai-proxy-multi":{"fallback_http_statuses":[429],"instances":[
		{"name":"busy","provider":"openai-compatible","weight":1,"priority":1,
		 "override":{"endpoint":"` + busyURL + `/knobs/status=429/v1/chat/completions"},"auth":{"header":{"Authorization":"Bearer sk-busy"}}},
		{"name":"good","provider":"openai-compatible","weight":1,
		 "override":{"endpoint":"` + goodURL + `/v1/chat/completions"},"auth":{"header":{"Authorization":"Bearer sk-good"}},"options":{"model":"gpt-4o-mini"}}]}}}`
	g.want(t, 201, "PUT", "/routes/ai", route)

	client := openai.NewClient(option.WithBaseURL(g.gateway+"/ai"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "caller-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}}

	t.Run("buffered", func(t *testing.T) {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Choices) == 0 || resp.Choices[0].Message.Content == "" {
			t.Fatalf("empty answer: %+v", resp)
		}
		if n := len(busy.Requests()); n != 1 {
			t.Fatalf("busy instance saw %d requests; want 1", n)
		}
		reqs := good.Requests()
		if len(reqs) != 1 {
			t.Fatalf("good instance saw %d requests; want 1", len(reqs))
		}
		if a := reqs[0].Header.Get("Authorization"); a != "Bearer sk-good" {
			t.Errorf("good instance saw Authorization %q", a)
		}
		if !strings.Contains(reqs[0].Body, `"model":"gpt-4o-mini"`) {
			t.Errorf("good instance saw body %s; want options.model", reqs[0].Body)
		}
		if a := busy.Requests()[0].Header.Get("Authorization"); a != "Bearer sk-busy" || !strings.Contains(busy.Requests()[0].Body, `"model":"caller-model"`) {
			t.Errorf("busy instance saw %q %s", a, busy.Requests()[0].Body)
		}
	})

	t.Run("two spellings of one name", func(t *testing.T) {
		before := len(busy.Requests()) + len(good.Requests())
		resp, err := http.Post(g.gateway+"/ai/chat/completions", "application/json",
			strings.NewReader(`{"model":"a","Model":"b","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), "differing only in case") {
			t.Fatalf("got %d %s; want 400", resp.StatusCode, b)
		}
		if n := len(busy.Requests()) + len(good.Requests()); n != before {
			t.Fatal("a body with two spellings of one name reached an instance")
		}
	})

	t.Run("stream", func(t *testing.T) {
		st := client.Chat.Completions.NewStreaming(ctx, params)
		var sb strings.Builder
		for st.Next() {
			if c := st.Current(); len(c.Choices) > 0 {
				sb.WriteString(c.Choices[0].Delta.Content)
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if sb.Len() == 0 {
			t.Fatal("streamed no content")
		}
		if n := len(good.Requests()); n != 2 {
			t.Fatalf("good instance saw %d requests; want 2", n)
		}
	})

	t.Run("usage records", func(t *testing.T) {
		// buffered and stream each wrote a failed attempt (busy, 429) and a
		// final record (good); the mock reports usage in buffered answers.
		deadline := time.Now().Add(10 * time.Second)
		for {
			var failed, buffered, streamed int
			for _, sp := range rcv.Spans() {
				a := func(k string) string { return fmt.Sprint(usagetest.Attr(sp, k)) }
				if a("gw.usage.inbound_protocol") != "chat_completions" {
					continue
				}
				switch {
				case a("gw.usage.attempt_kind") == "failed_attempt" && a("gw.usage.provider_key") == "busy" && a("error.type") == "upstream_status":
					failed++
				case a("gw.usage.attempt_kind") == "final" && a("gw.usage.provider_key") == "good" && a("gw.usage.attempt") == "2" &&
					a("gw.usage.stream") == "false" && a("gw.usage.total_tokens") != "<nil>" && a("gw.usage.total_tokens") != "0":
					buffered++
				case a("gw.usage.attempt_kind") == "final" && a("gw.usage.provider_key") == "good" && a("gw.usage.stream") == "true":
					streamed++
				}
			}
			if failed == 2 && buffered == 1 && streamed == 1 {
				return
			}
			if time.Now().After(deadline) {
				for _, sp := range rcv.Spans() {
					t.Logf("%v", sp.Attributes)
				}
				t.Fatalf("records: %d failed attempts (want 2), %d buffered finals with tokens (1), %d streamed finals (1)", failed, buffered, streamed)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("write-time 400s", func(t *testing.T) {
		for _, tc := range []struct{ body, msg string }{
			{`{"uri":"/x","plugins":{"ai-proxy-multi":{"instances":[{"name":"a","provider":"openai","weight":1},{"name":"a","provider":"openai","weight":1}]}}}`, `duplicate instance name`},
			{`{"uri":"/x","plugins":{"ai-proxy-multi":{"balancer":{"algorithm":"semantic"},"instances":[{"name":"a","provider":"openai","weight":1}]}}}`, `not built in this build`},
		} {
			code, m := g.call(t, "PUT", "/routes/bad", tc.body)
			if code != 400 || !strings.Contains(field(m, "error_msg"), tc.msg) || !strings.Contains(field(m, "error_msg"), "ai-proxy-multi") {
				t.Errorf("%s: got %d %v; want 400 naming %q", tc.body, code, m, tc.msg)
			}
		}
	})

	be := echoBackend(t)

	t.Run("post_arg", func(t *testing.T) {
		g.want(t, 201, "PUT", "/routes/vision", `{"uri":"/pa","priority":1,"vars":[["post_arg.messages[*].content[*].type","has","image_url"]],"upstream":{"nodes":{"`+be+`":1}},
			"plugins":{"proxy-rewrite":{"headers":{"set":{"X-Route":"vision","X-Model":"$post_arg.model.version"}}}}}`)
		g.want(t, 201, "PUT", "/routes/text", `{"uri":"/pa","upstream":{"nodes":{"`+be+`":1}},"plugins":{"proxy-rewrite":{"headers":{"set":{"X-Route":"text"}}}}}`)
		post := func(ct, body string) gwResp {
			resp, err := http.Post(g.gateway+"/pa", ct, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return gwResp{code: resp.StatusCode, body: string(b)}
		}
		post("application/json", `{"model":{"version":"4o"},"messages":[{"role":"user","content":[{"type":"text"},{"type":"image_url"}]}]}`).
			want(t, 200, "X-Route: vision", "X-Model: 4o")
		post("application/json", `{"messages":[{"role":"user","content":[{"type":"text"}]}]}`).want(t, 200, "X-Route: text")
		post("text/plain", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`).want(t, 200, "X-Route: text")
		code, m := g.call(t, "PUT", "/routes/badvars", `{"uri":"/pb","vars":[["post_arg.messages[*].role","==","user"]],"upstream":{"nodes":{"`+be+`":1}}}`)
		if code != 400 || !strings.Contains(field(m, "error_msg"), "only the in and has operators") {
			t.Errorf("list variable with ==: got %d %v; want 400", code, m)
		}
	})

	t.Run("secret references", func(t *testing.T) {
		g.want(t, 201, "PUT", "/consumers", `{"username":"envjack","plugins":{"key-auth":{"key":"$env://GW_E2E_SECRET_KEY"}}}`)
		g.want(t, 201, "PUT", "/routes/sec", `{"uri":"/sec","upstream":{"nodes":{"`+be+`":1}},
			"plugins":{"key-auth":{},"proxy-rewrite":{"headers":{"set":{"X-From-Env":"$env://GW_E2E_SECRET_JSON/hdr"}}}}}`)
		g.do(t, "GET", "/sec", "apikey", "env-key-1").want(t, 200, "X-From-Env: from-json")
		g.do(t, "GET", "/sec", "apikey", "$env://GW_E2E_SECRET_KEY").want(t, 401)
		for _, tc := range []struct{ path, body, msg string }{
			{"/routes/sec2", `{"uri":"/sec2","upstream":{"nodes":{"` + be + `":1}},"plugins":{"proxy-rewrite":{"headers":{"set":{"X":"$secret://vault/1/tok"}}}}}`, "secret manager vault: not built in this build"},
			{"/routes/sec3", `{"uri":"/sec3","upstream":{"nodes":{"` + be + `":1}},"plugins":{"proxy-rewrite":{"headers":{"set":{"X":"$secret://aws/1/tok"}}}}}`, "secret manager aws: not built in this build"},
			{"/consumers", `{"username":"nokey","plugins":{"key-auth":{"key":"$env://GW_E2E_UNSET"}}}`, "$env://GW_E2E_UNSET: the environment variable is not set"},
		} {
			code, m := g.call(t, "PUT", tc.path, tc.body)
			if code != 400 || !strings.Contains(field(m, "error_msg"), tc.msg) {
				t.Errorf("%s: got %d %v; want 400 with %q", tc.path, code, m, tc.msg)
			}
		}
		if strings.Contains(g.stderr.String(), "env-key-1") || strings.Contains(g.stderr.String(), "from-json") {
			t.Error("a resolved secret value reached gw's log")
		}
	})
}
