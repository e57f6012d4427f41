package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"gw/perf/mock"
)

// TestGatewayAIProxyMultiE2E: a route with ai-proxy-multi over two real
// mock upstreams; the higher-priority one answers 429 (a knob in its
// endpoint path), so every call falls back to the other, buffered and
// streamed through the OpenAI SDK; duplicate instance names and options
// the plugin does not run are 400s at write time.
func TestGatewayAIProxyMultiE2E(t *testing.T) {
	start := time.Now()
	busy := startMock(t, "AIPM_BUSY", mock.Config{})
	good := startMock(t, "AIPM_GOOD", mock.Config{})
	g := startAdminGW(t, "--data-dir", t.TempDir())
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
}
