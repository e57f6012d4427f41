package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"gw/perf/mock"
)

// proxyFile is served by the real gw binary against an in-process mock.
const proxyFile = `_format_version: "1"
provider_keys:
  - display_name: mock
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${E2E_MOCK_BASE}/v1
    request:
      forward_client_headers: ["x-mock-*"]
  - display_name: claude-key
    provider: anthropic
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${E2E_MOCK_BASE}/v1
    request:
      forward_client_headers: ["x-mock-*"]
  - display_name: strict
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${E2E_MOCK_BASE}/knobs/no_done=true/v1
    response: {stream_done_marker: required}
  - display_name: nodone
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${E2E_MOCK_BASE}/knobs/no_done=true/v1
    response: {stream_done_marker: none}
  - display_name: dead
    api_key: ${E2E_OPENAI_KEY}
    api_base: http://127.0.0.1:1/v1
api_keys:
  - display_name: dev
    key_env: E2E_CALLER_KEY
    allowed_models: ["*"]
  - display_name: narrow
    key_env: E2E_NARROW_KEY
    allowed_models: [gpt]
  - display_name: off
    key_env: E2E_DISABLED_KEY
    allowed_models: ["*"]
    disabled: true
  - display_name: old
    key_env: E2E_EXPIRED_KEY
    allowed_models: ["*"]
    expires_at: "2020-01-01T00:00:00Z"
models:
  - display_name: gpt
    provider: openai
    model_name: gpt-4o
    provider_key: mock
    stream_timeout: 500
  - display_name: other
    provider: openai
    model_name: gpt-4o-mini
    provider_key: mock
  - display_name: unreachable
    provider: openai
    model_name: gpt-4o
    provider_key: dead
    timeout: 2000
  - display_name: claude
    provider: anthropic
    model_name: claude-sonnet-4-5
    provider_key: claude-key
    auto_prompt_caching: {enabled: true, ttl: 1h}
  - display_name: effort
    provider: openai
    model_name: o3-mini
    provider_key: mock
    effort_mapping: {minimal: low, high: null, "": medium}
  - display_name: retrying
    provider: openai
    model_name: gpt-4o
    provider_key: mock
    retries: 2
  - display_name: strict-done
    provider: openai
    model_name: gpt-4o
    provider_key: strict
  - display_name: no-done
    provider: openai
    model_name: gpt-4o
    provider_key: nodone
  - display_name: group
    routing:
      targets: [{model: unreachable, priority: 1}, {model: other}]
`

type e2e struct {
	gw     *proc
	mock   *mock.Server
	client openai.Client
	base   string
}

func startE2E(t *testing.T) *e2e {
	t.Helper()
	m := startMock(t, "E2E_MOCK_BASE", mock.Config{Knobs: mock.Knobs{ModelSuffix: "-2024-08-06"}})
	t.Setenv("E2E_NARROW_KEY", "narrow-key")
	t.Setenv("E2E_DISABLED_KEY", "disabled-key")
	t.Setenv("E2E_EXPIRED_KEY", "expired-key")
	p := writeTemp(t, "proxy.yaml", proxyFile)
	g := startGW(t, p)
	base := "http://" + g.addr + "/v1"
	return &e2e{gw: g, mock: m, base: base, client: openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))}
}

func chatParams(model string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello")},
	}
}

func TestProxyChatSDK(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()

	t.Run("buffered", func(t *testing.T) {
		var raw *http.Response
		resp, err := e.client.Chat.Completions.New(ctx, chatParams("gpt"), option.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Model != "gpt" {
			t.Fatalf("model = %q; want the alias", resp.Model)
		}
		if resp.Choices[0].Message.Content == "" || resp.Usage.TotalTokens == 0 {
			t.Fatalf("answer: %+v", resp)
		}
		if raw.Header.Get("x-gw-overhead-us") == "" {
			t.Fatal("x-gw-overhead-us missing")
		}
		// Forwarded byte-for-byte except model.
		last := e.mock.Requests()[len(e.mock.Requests())-1]
		var got map[string]any
		json.Unmarshal([]byte(last.Body), &got)
		if got["model"] != "gpt-4o" {
			t.Fatalf("upstream model = %v", got["model"])
		}
		if last.Header.Get("Authorization") != "Bearer sk-e2e" {
			t.Fatalf("upstream credential not the provider key")
		}
	})

	t.Run("stream-include-usage", func(t *testing.T) {
		p := chatParams("gpt")
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		st := e.client.Chat.Completions.NewStreaming(ctx, p)
		var text strings.Builder
		var usage int64
		n := 0
		for st.Next() {
			ch := st.Current()
			n++
			if ch.Model != "gpt" {
				t.Fatalf("chunk model = %q", ch.Model)
			}
			if len(ch.Choices) > 0 {
				text.WriteString(ch.Choices[0].Delta.Content)
			}
			if ch.Usage.TotalTokens > 0 {
				usage = ch.Usage.TotalTokens
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if text.Len() == 0 || usage == 0 || n < 3 {
			t.Fatalf("text=%q usage=%d chunks=%d", text.String(), usage, n)
		}
	})

	t.Run("stream-without-usage-is-asked-and-stripped", func(t *testing.T) {
		st := e.client.Chat.Completions.NewStreaming(ctx, chatParams("gpt"))
		for st.Next() {
			ch := st.Current()
			if ch.JSON.Usage.Valid() || strings.Contains(ch.RawJSON(), `"usage"`) {
				t.Fatalf("caller sees usage it did not ask for: %s", ch.RawJSON())
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		last := e.mock.Requests()[len(e.mock.Requests())-1]
		if !strings.Contains(last.Body, `"include_usage":true`) {
			t.Fatalf("gw did not ask the upstream for usage: %s", last.Body)
		}
	})

	t.Run("tool-calls", func(t *testing.T) {
		p := chatParams("gpt")
		p.Tools = []openai.ChatCompletionToolParam{{Function: openai.FunctionDefinitionParam{Name: "get_weather"}}}
		resp, err := e.client.Chat.Completions.New(ctx, p, option.WithHeader("x-mock-tool-calls", "2"))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Choices[0].Message.ToolCalls) != 2 || resp.Choices[0].FinishReason != "tool_calls" {
			t.Fatalf("tool calls: %+v", resp.Choices[0])
		}
		st := e.client.Chat.Completions.NewStreaming(ctx, p, option.WithHeader("x-mock-tool-calls", "2"))
		acc := openai.ChatCompletionAccumulator{}
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if len(acc.Choices) == 0 || len(acc.Choices[0].Message.ToolCalls) != 2 || acc.Model != "gpt" {
			t.Fatalf("streamed tool calls: %+v", acc.Choices)
		}
	})

	t.Run("models", func(t *testing.T) {
		page, err := e.client.Models.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range page.Data {
			ids = append(ids, m.ID)
		}
		if strings.Join(ids, ",") != "gpt,other,unreachable,claude,effort,retrying,strict-done,no-done,group" {
			t.Fatalf("models = %v", ids)
		}
		narrow := openai.NewClient(option.WithBaseURL(e.base), option.WithAPIKey("narrow-key"))
		page, err = narrow.Models.List(ctx)
		if err != nil || len(page.Data) != 1 || page.Data[0].ID != "gpt" {
			t.Fatalf("narrow key models: %v %+v", err, page)
		}
	})

	t.Run("failover", func(t *testing.T) {
		resp, err := e.client.Chat.Completions.New(ctx, chatParams("group"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Model != "group" {
			t.Fatalf("model = %q", resp.Model)
		}
	})
}

func apiErr(t *testing.T, err error, status int, code string) {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) {
		t.Fatalf("want API error %d, got %v", status, err)
	}
	if ae.StatusCode != status || (code != "" && ae.Code != code) {
		t.Fatalf("got %d %q (%s); want %d %q", ae.StatusCode, ae.Code, ae.Message, status, code)
	}
}

func TestProxyErrorsSDK(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	keyClient := func(key string) *openai.Client {
		c := openai.NewClient(option.WithBaseURL(e.base), option.WithAPIKey(key), option.WithMaxRetries(0))
		return &c
	}
	_, err := keyClient("wrong").Chat.Completions.New(ctx, chatParams("gpt"))
	apiErr(t, err, 401, "invalid_api_key")
	_, err = keyClient("disabled-key").Chat.Completions.New(ctx, chatParams("gpt"))
	apiErr(t, err, 401, "api_key_disabled")
	_, err = keyClient("expired-key").Chat.Completions.New(ctx, chatParams("gpt"))
	apiErr(t, err, 401, "api_key_expired")
	_, err = e.client.Chat.Completions.New(ctx, chatParams("nope"))
	apiErr(t, err, 404, "model_not_found")
	_, err = keyClient("narrow-key").Chat.Completions.New(ctx, chatParams("other"))
	apiErr(t, err, 404, "model_not_found")

	// Wrong role: rejected before any upstream call.
	before := len(e.mock.Requests())
	_, err = e.client.Chat.Completions.New(ctx, chatParams("gpt"), option.WithJSONSet("messages.0.role", "User"))
	apiErr(t, err, 400, "invalid_value")
	if len(e.mock.Requests()) != before {
		t.Fatal("a request with a bad role reached the upstream")
	}

	// Upstream 500 with a body: relayed with its status and body.
	_, err = e.client.Chat.Completions.New(ctx, chatParams("gpt"), option.WithHeader("x-mock-status", "500"))
	apiErr(t, err, 500, "")
	// Empty upstream error body: the envelope says what happened.
	_, err = e.client.Chat.Completions.New(ctx, chatParams("gpt"), option.WithHeader("x-mock-status", "503"), option.WithHeader("x-mock-error-body", "empty"))
	apiErr(t, err, 503, "upstream_error")
	if !strings.Contains(err.Error(), "upstream returned 503 Service Unavailable") {
		t.Fatalf("empty-body message: %v", err)
	}
	// A 4xx is relayed as is, without retry.
	_, err = e.client.Chat.Completions.New(ctx, chatParams("gpt"), option.WithHeader("x-mock-status", "429"), option.WithHeader("x-mock-retry-after", "1"))
	apiErr(t, err, 429, "")
	// Unreachable upstream: 502.
	_, err = e.client.Chat.Completions.New(ctx, chatParams("unreachable"))
	apiErr(t, err, 502, "upstream_unreachable")

	// Mid-stream cut: the SDK sees an error, not a clean end.
	st := e.client.Chat.Completions.NewStreaming(ctx, chatParams("gpt"), option.WithHeader("x-mock-fail-after", "2"))
	for st.Next() {
	}
	if st.Err() == nil {
		t.Fatal("mid-stream cut ended cleanly")
	}
	// Stream timeout (gap > stream_timeout 500 ms) after content: in-band error.
	st = e.client.Chat.Completions.NewStreaming(ctx, chatParams("gpt"), option.WithHeader("x-mock-stall-after", "1"), option.WithHeader("x-mock-stall-for", "3s"))
	for st.Next() {
	}
	if st.Err() == nil || !strings.Contains(st.Err().Error(), "stream_timeout") && !strings.Contains(st.Err().Error(), "stalled") {
		t.Fatalf("stream timeout: %v", st.Err())
	}
	// A stream with no content: 502 before anything is committed.
	st = e.client.Chat.Completions.NewStreaming(ctx, chatParams("gpt"), option.WithHeader("x-mock-empty-stream", "true"))
	for st.Next() {
	}
	apiErr(t, st.Err(), 502, "empty_stream")
	// Stall before the first token longer than stream_timeout: 504.
	st = e.client.Chat.Completions.NewStreaming(ctx, chatParams("gpt"), option.WithHeader("x-mock-first-token-delay", "2s"))
	for st.Next() {
	}
	apiErr(t, st.Err(), 504, "upstream_timeout")
}

func TestProxyRawHTTP(t *testing.T) {
	e := startE2E(t)
	postTo := func(path, body string, hdr ...string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", e.base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	post := func(body string, hdr ...string) (*http.Response, string) {
		return postTo("/chat/completions", body, hdr...)
	}
	// x-api-key works as well as Authorization.
	resp, body := post(`{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`, "x-api-key", "caller-e2e")
	if resp.StatusCode != 200 || !strings.Contains(body, `"model":"gpt"`) {
		t.Fatalf("x-api-key: %d %s", resp.StatusCode, body)
	}
	// No key: 401 envelope.
	resp, body = post(`{"model":"gpt","messages":[]}`)
	if resp.StatusCode != 401 || !strings.Contains(body, `"type":"invalid_request_error"`) {
		t.Fatalf("missing key: %d %s", resp.StatusCode, body)
	}
	// Malformed JSON: 400 envelope.
	resp, body = post(`{"model":`, "Authorization", "Bearer caller-e2e")
	if resp.StatusCode != 400 || !strings.Contains(body, `"code":"invalid_json"`) {
		t.Fatalf("bad json: %d %s", resp.StatusCode, body)
	}
	// The body is forwarded byte-for-byte with only model rewritten.
	sent := `{"model":"gpt",  "messages":[{"role":"user","content":"hi"}],"temperature":0.5,"metadata":{"k":"v"}}`
	post(sent, "Authorization", "Bearer caller-e2e")
	reqs := e.mock.Requests()
	if got, want := reqs[len(reqs)-1].Body, strings.Replace(sent, `"gpt"`, `"gpt-4o"`, 1); got != want {
		t.Fatalf("forwarded body\n got %s\nwant %s", got, want)
	}
	// Member names are read without case, as an upstream on Go's
	// encoding/json reads them: two spellings of one name in one object
	// are refused before any upstream call, in the caller's format; one
	// spelling in another case is used, and gw writes the model it sets
	// under its own name.
	before := len(e.mock.Requests())
	for _, tc := range []struct{ path, body, want string }{
		{"/chat/completions", `{"model":"gpt","Model":"other","messages":[{"role":"user","content":"hi"}]}`, `"type":"invalid_request_error"`},
		{"/chat/completions", `{"model":"gpt","messages":[{"role":"user","content":"hi","Content":"ho"}]}`, `"Content\" differs only in case`},
		{"/messages", `{"model":"claude","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"MODEL":"x"}`, `"type":"error"`},
		{"/responses", `{"model":"gpt","input":"hi","\u017ftream":true,"stream":false}`, `differs only in case`},
	} {
		resp, b := postTo(tc.path, tc.body, "Authorization", "Bearer caller-e2e")
		if resp.StatusCode != 400 || !strings.Contains(b, tc.want) || !strings.Contains(b, "differs only in case") {
			t.Fatalf("%s %s: %d %s", tc.path, tc.body, resp.StatusCode, b)
		}
	}
	if len(e.mock.Requests()) != before {
		t.Fatal("a body with two spellings of one name reached the upstream")
	}
	resp, body = post(`{"Model":"gpt","messages":[{"Role":"user","content":"hi"}]}`, "Authorization", "Bearer caller-e2e")
	if resp.StatusCode != 200 || !strings.Contains(body, `"model":"gpt"`) {
		t.Fatalf("names in another case: %d %s", resp.StatusCode, body)
	}
	reqs = e.mock.Requests()
	if got, want := reqs[len(reqs)-1].Body, `{"model":"gpt-4o","messages":[{"Role":"user","content":"hi"}]}`; got != want {
		t.Fatalf("forwarded body with names in another case\n got %s\nwant %s", got, want)
	}
	// 413 when Content-Length exceeds the limit (default 32 MiB).
	big := bytes.Repeat([]byte("a"), 33<<20)
	req, _ := http.NewRequest("POST", e.base+"/chat/completions", bytes.NewReader(big))
	req.Header.Set("Authorization", "Bearer caller-e2e")
	r2, err := http.DefaultClient.Do(req)
	if err == nil {
		b, _ := io.ReadAll(r2.Body)
		r2.Body.Close()
		if r2.StatusCode != 413 || !strings.Contains(string(b), "request_too_large") {
			t.Fatalf("413: %d %s", r2.StatusCode, b)
		}
	}
}

func TestProxyClientDisconnect(t *testing.T) {
	e := startE2E(t)
	ctx, cancel := context.WithCancel(context.Background())
	st := e.client.Chat.Completions.NewStreaming(ctx, chatParams("gpt"),
		option.WithHeader("x-mock-chunks", "200"), option.WithHeader("x-mock-chunk-delay", "20ms"))
	if !st.Next() {
		t.Fatalf("no first chunk: %v", st.Err())
	}
	cancel()
	for st.Next() {
	}
	// The upstream call is cancelled: the mock's in-flight count drops to 0
	// well before its 4-second stream would have ended.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if e.mock.Stats().InFlight == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := e.mock.Stats().InFlight; n != 0 {
		t.Fatalf("upstream still streaming after the caller left (in flight %d)", n)
	}
	// The access log records 499.
	deadline = time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(e.gw.stderr.String(), `"status":499`) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(e.gw.stderr.String(), `"status":499`) {
		t.Fatalf("no 499 in the access log:\n%s", e.gw.stderr.String())
	}
}

func TestProxyRetriesAndDoneMarker(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	// retries: 2 on a 5xx: three upstream attempts, then the upstream error.
	before := e.mock.Stats().Requests
	_, err := e.client.Chat.Completions.New(ctx, chatParams("retrying"), option.WithHeader("x-mock-status", "502"))
	apiErr(t, err, 502, "")
	if n := e.mock.Stats().Requests - before; n != 3 {
		t.Fatalf("upstream attempts = %d; want 3", n)
	}
	// stream_done_marker: required and the upstream omits [DONE]: in-band error.
	st := e.client.Chat.Completions.NewStreaming(ctx, chatParams("strict-done"))
	for st.Next() {
	}
	if st.Err() == nil {
		t.Fatal("missing [DONE] with marker required ended cleanly")
	}
	// stream_done_marker: none: the upstream never sends [DONE]; the caller still gets one.
	resp, err := http.DefaultClient.Do(mustReq(t, e.base+"/chat/completions", `{"model":"no-done","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
		t.Fatalf("no [DONE] for the caller:\n%s", b)
	}
}

func mustReq(t *testing.T, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer caller-e2e")
	return req
}

func TestDebugListenerServesHeapProfile(t *testing.T) {
	p := writeTemp(t, "gw.yaml", validFile)
	dbg := freeAddr(t)
	g := startGW(t, p, "--debug-listen", dbg)
	_ = g
	resp, err := http.Get("http://" + dbg + "/debug/pprof/heap")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(b) == 0 {
		t.Fatalf("heap profile: %d (%d bytes)", resp.StatusCode, len(b))
	}
}

func TestGracefulShutdownLetsStreamsFinish(t *testing.T) {
	e := startE2E(t)
	req := mustReq(t, e.base+"/chat/completions", `{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	req.Header.Set("x-mock-chunks", "20")
	req.Header.Set("x-mock-chunk-delay", "40ms")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 64)
	if _, err := resp.Body.Read(first); err != nil {
		t.Fatal(err)
	}
	// SIGTERM mid-stream: no new connections, but this stream runs to its end.
	e.gw.cmd.Process.Signal(syscall.SIGTERM)
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("stream cut by shutdown: %v", err)
	}
	if !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Fatalf("stream did not finish:\n%s", rest)
	}
	done := make(chan error, 1)
	go func() { done <- e.gw.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("gw did not exit after the stream finished")
	}
}

func TestProxyEffortMapping(t *testing.T) {
	e := startE2E(t)
	post := func(body string) string {
		resp, err := http.DefaultClient.Do(mustReq(t, e.base+"/chat/completions", body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		reqs := e.mock.Requests()
		return reqs[len(reqs)-1].Body
	}
	if got := post(`{"model":"effort","reasoning_effort":"minimal","messages":[{"role":"user","content":"hi"}]}`); !strings.Contains(got, `"reasoning_effort":"low"`) {
		t.Fatalf("exact rule not applied: %s", got)
	}
	if got := post(`{"model":"effort","reasoning_effort":"high","messages":[{"role":"user","content":"hi"}]}`); strings.Contains(got, "reasoning_effort") {
		t.Fatalf("null rule did not remove effort: %s", got)
	}
	if got := post(`{"model":"effort","messages":[{"role":"user","content":"hi"}]}`); !strings.Contains(got, `"reasoning_effort":"medium"`) {
		t.Fatalf(`"" rule not applied: %s`, got)
	}
}
