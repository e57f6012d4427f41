package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/responses"

	"gw/perf/mock"
)

// The mock's filler answer is "Hello from the gw mock provider. This reply
// is deterministic filler ... streams through the gateway. ", 8 bytes per
// chunk: "deterministic" (bytes 47-60) always arrives split across chunks.
const guardFile = `_format_version: "1"
provider_keys:
  - display_name: mock
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${GUARD_MOCK}/v1
    apis: {}
    request: {forward_client_headers: ["x-mock-*"]}
  - display_name: claude-key
    provider: anthropic
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${GUARD_MOCK}/v1
    request: {forward_client_headers: ["x-mock-*"]}
  - display_name: oa-native
    provider: openai
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${GUARD_MOCK}/v1
    request: {forward_client_headers: ["x-mock-*"]}
api_keys:
  - display_name: dev
    key_env: E2E_CALLER_KEY
    allowed_models: ["*"]
  - display_name: red
    key_env: GUARD_RED_KEY
    team_id: t-red
    allowed_models: ["*"]
models:
  - {display_name: gpt, provider: openai, model_name: gpt-4o, provider_key: mock}
  - {display_name: claude, provider: anthropic, model_name: claude-x, provider_key: claude-key}
  - {display_name: gpt-native, provider: openai, model_name: gpt-4o, provider_key: oa-native}
  - {display_name: gpt-window, provider: openai, model_name: gpt-4o, provider_key: mock}
  - {display_name: gpt-mask, provider: openai, model_name: gpt-4o, provider_key: mock}
  - {display_name: gpt-mon, provider: openai, model_name: gpt-4o, provider_key: mock}
  - {display_name: gpt-throw, provider: openai, model_name: gpt-4o, provider_key: mock}
  - {display_name: gpt-loop, provider: openai, model_name: gpt-4o, provider_key: mock}
  - {display_name: gpt-mem, provider: openai, model_name: gpt-4o, provider_key: mock}
  - {display_name: gpt-open, provider: openai, model_name: gpt-4o, provider_key: mock}
  - {display_name: gpt-plain, provider: openai, model_name: gpt-4o, provider_key: mock}
  - {display_name: gpt-pii, provider: openai, model_name: gpt-4o, provider_key: mock}
  - {display_name: claude-pii, provider: anthropic, model_name: claude-x, provider_key: claude-key}
guardrails:
  - name: in-words
    kind: keyword
    hook_point: input
    patterns: [{kind: literal, value: forbidden-word}]
  - name: out-words
    kind: keyword
    hook_point: output
    patterns: [{kind: literal, value: deterministic}]
  - name: mon-words
    kind: keyword
    enforcement_mode: monitor
    patterns: [{kind: literal, value: forbidden-word}, {kind: literal, value: deterministic}]
  - name: late-words
    kind: custom
    hook_point: output
    window_size: 16
    window_overlap_size: 8
    script: |
      export function checkOutput(input) {
        for (const t of input.texts) if (t.text.includes("gateway")) return { action: "block", reason: "off-topic answer" };
      }
  - name: mask-token
    kind: custom
    hook_point: input
    script: |
      export function checkInput(input) {
        const texts = input.texts.map(t => t.text.includes("tok-12345") ? t.text.replaceAll("tok-12345", "[TOKEN]") : null);
        return texts.some(t => t !== null) ? { action: "replace", texts } : { action: "allow" };
      }
  - name: js-throw
    kind: custom
    hook_point: input
    script: |
      export function checkInput(input) { throw new TypeError("broken"); }
  - name: js-loop
    kind: custom
    hook_point: input
    timeout_ms: 1000
    script: |
      export function checkInput(input) { for (;;) {} }
  - name: js-mem
    kind: custom
    hook_point: input
    max_memory_bytes: 4194304
    script: |
      export function checkInput(input) { const a = []; for (;;) a.push("x".repeat(1024) + a.length); }
  - name: js-open
    kind: custom
    hook_point: input
    fail_open: true
    script: |
      export function checkInput(input) { throw new Error("broken"); }
  - name: pii-in
    kind: pii
    hook_point: input
guardrail_attachments:
  - {guardrail_id: pii-in, scope_type: model, scope_id: gpt-pii}
  - {guardrail_id: pii-in, scope_type: model, scope_id: claude-pii}
  - {guardrail_id: in-words, scope_type: model, scope_id: gpt}
  - {guardrail_id: out-words, scope_type: model, scope_id: gpt}
  - {guardrail_id: in-words, scope_type: model, scope_id: claude}
  - {guardrail_id: out-words, scope_type: model, scope_id: claude}
  - {guardrail_id: out-words, scope_type: model, scope_id: gpt-native}
  - {guardrail_id: late-words, scope_type: model, scope_id: gpt-window}
  - {guardrail_id: mask-token, scope_type: model, scope_id: gpt-mask}
  - {guardrail_id: mon-words, scope_type: model, scope_id: gpt-mon}
  - {guardrail_id: js-throw, scope_type: model, scope_id: gpt-throw}
  - {guardrail_id: js-loop, scope_type: model, scope_id: gpt-loop}
  - {guardrail_id: js-mem, scope_type: model, scope_id: gpt-mem}
  - {guardrail_id: js-open, scope_type: model, scope_id: gpt-open}
  - {guardrail_id: in-words, scope_type: team, scope_id: t-red}
`

type guardE2E struct {
	g      *proc
	m      *mock.Server
	base   string
	oa     openai.Client
	an     anthropic.Client
	file   string
	reqSeq atomic.Int64
}

func startGuardE2E(t *testing.T) *guardE2E {
	t.Helper()
	m := startMock(t, "GUARD_MOCK", mock.Config{})
	t.Setenv("GUARD_RED_KEY", "red-key")
	p := writeTemp(t, "guard.yaml", guardFile)
	g := startGW(t, p)
	t.Cleanup(func() {
		if log := g.stderr.String(); strings.Contains(log, "DATA RACE") || strings.Contains(log, "panic:") {
			t.Errorf("gw reported a race or a panic:\n%s", log)
		}
	})
	base := "http://" + g.addr
	return &guardE2E{g: g, m: m, base: base, file: p,
		oa: openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0)),
		an: anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey("caller-e2e"), aoption.WithMaxRetries(0))}
}

func userChat(model, text string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}}
}

// wantOpenAIErr checks an openai-go error's status and error.code.
func wantOpenAIErr(t *testing.T, err error, status int, code string) {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != status || ae.Code != code {
		t.Fatalf("got %v; want %d %s", err, status, code)
	}
}

// wantAnthropicErr checks an Anthropic error: type invalid_request_error and error.code.
func wantAnthropicErr(t *testing.T, err error, status int, code string) {
	t.Helper()
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != status || !strings.Contains(ae.RawJSON(), `"invalid_request_error"`) || !strings.Contains(ae.RawJSON(), `"code":"`+code+`"`) {
		t.Fatalf("got %v; want %d invalid_request_error %s", err, status, code)
	}
}

var mockChunks = option.WithHeader("x-mock-chunks", "30")

func TestGuardInputBlock(t *testing.T) {
	e := startGuardE2E(t)
	ctx := context.Background()
	before := len(e.m.Requests())
	_, err := e.oa.Chat.Completions.New(ctx, userChat("gpt", "please say forbidden-word now"))
	wantOpenAIErr(t, err, 422, "content_filter")
	st := e.oa.Chat.Completions.NewStreaming(ctx, userChat("gpt", "forbidden-word"))
	for st.Next() {
	}
	wantOpenAIErr(t, st.Err(), 422, "content_filter")
	// Messages, on a converted (chat) and a native (Anthropic) upstream.
	for _, model := range []string{"gpt", "claude"} {
		_, err = e.an.Messages.New(ctx, anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("forbidden-word"))}})
		wantAnthropicErr(t, err, 422, "content_filter")
	}
	_, err = e.an.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "claude",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"), anthropic.NewToolResultBlock("t1", "forbidden-word", false))}})
	wantAnthropicErr(t, err, 422, "content_filter")
	_, err = e.oa.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("forbidden-word")}})
	wantOpenAIErr(t, err, 422, "content_filter")
	// A tool-call argument is judged too.
	tc := userChat("gpt", "hi")
	tc.Messages = append(tc.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
		ToolCalls: []openai.ChatCompletionMessageToolCallParam{{ID: "c1", Function: openai.ChatCompletionMessageToolCallFunctionParam{Name: "f", Arguments: `{"q":"forbidden-word"}`}}}}},
		openai.ToolMessage("ok", "c1"))
	_, err = e.oa.Chat.Completions.New(ctx, tc)
	wantOpenAIErr(t, err, 422, "content_filter")
	if n := len(e.m.Requests()); n != before {
		t.Fatalf("blocked requests reached the upstream: %d", n-before)
	}
	// Clean requests pass.
	if _, err := e.oa.Chat.Completions.New(ctx, userChat("gpt", "hello")); err != nil {
		t.Fatal(err)
	}
}

// TestGuardOutputBlock: an answer containing a blocked word split across
// upstream chunks is rejected on every surface, buffered and streamed, and
// none of its bytes reach the caller.
func TestGuardOutputBlock(t *testing.T) {
	e := startGuardE2E(t)
	ctx := context.Background()
	_, err := e.oa.Chat.Completions.New(ctx, userChat("gpt", "hello"), mockChunks)
	wantOpenAIErr(t, err, 422, "content_filter")
	st := e.oa.Chat.Completions.NewStreaming(ctx, userChat("gpt", "hello"), mockChunks)
	text := ""
	defer func() {
		if t.Failed() {
			t.Log(e.g.stderr.String())
		}
	}()
	for st.Next() {
		if len(st.Current().Choices) > 0 {
			text += st.Current().Choices[0].Delta.Content
		}
	}
	wantOpenAIErr(t, st.Err(), 422, "content_filter")
	if strings.Contains(text, "determ") {
		t.Fatalf("leaked %q", text)
	}
	// Short answers without the word pass, streamed and whole.
	st = e.oa.Chat.Completions.NewStreaming(ctx, userChat("gpt", "hello"))
	text = ""
	for st.Next() {
		if len(st.Current().Choices) > 0 {
			text += st.Current().Choices[0].Delta.Content
		}
	}
	if st.Err() != nil || text != "Hello from the gw mock provider. This re" {
		t.Fatalf("clean stream: %v %q", st.Err(), text)
	}
	// Messages: converted (gpt) and native (claude), buffered and streamed.
	for _, model := range []string{"gpt", "claude"} {
		p := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 64, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
		_, err := e.an.Messages.New(ctx, p, aoption.WithHeader("x-mock-chunks", "30"))
		wantAnthropicErr(t, err, 422, "content_filter")
		ms := e.an.Messages.NewStreaming(ctx, p, aoption.WithHeader("x-mock-chunks", "30"))
		for ms.Next() {
		}
		wantAnthropicErr(t, ms.Err(), 422, "content_filter")
	}
	// Responses: converted (gpt) and native (gpt-native).
	for _, model := range []string{"gpt", "gpt-native"} {
		p := responses.ResponseNewParams{Model: model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
		_, err := e.oa.Responses.New(ctx, p, mockChunks)
		wantOpenAIErr(t, err, 422, "content_filter")
		rs := e.oa.Responses.NewStreaming(ctx, p, mockChunks)
		for rs.Next() {
		}
		wantOpenAIErr(t, rs.Err(), 422, "content_filter")
	}
}

// rawStream posts body to path and returns the status and the whole SSE body.
func rawStream(t *testing.T, url, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer caller-e2e")
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(bufio.NewReader(resp.Body))
	return resp.StatusCode, string(b)
}

// TestGuardStreamInBand: a block after the commit point ends the stream
// with the caller format's in-band error; the blocked bytes never leave.
func TestGuardStreamInBand(t *testing.T) {
	e := startGuardE2E(t)
	hdr := map[string]string{"x-mock-chunks": "30"}
	status, body := rawStream(t, e.base+"/v1/chat/completions", `{"model":"gpt-window","stream":true,"messages":[{"role":"user","content":"hi"}]}`, hdr)
	if status != 200 || !strings.Contains(body, `"code":"content_filter"`) || !strings.Contains(body, "off-topic answer") || strings.Contains(body, "gatew") || strings.Contains(body, "[DONE]") {
		t.Fatalf("chat: %d\n%s", status, body)
	}
	if !strings.Contains(body, `"content":"Hello fr"`) {
		t.Fatalf("nothing was released before the block:\n%s", body)
	}
	status, body = rawStream(t, e.base+"/v1/messages", `{"model":"gpt-window","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, hdr)
	if status != 200 || !strings.Contains(body, "event: error") || !strings.Contains(body, `"type":"invalid_request_error"`) || !strings.Contains(body, `"code":"content_filter"`) || strings.Contains(body, "gatew") {
		t.Fatalf("messages: %d\n%s", status, body)
	}
	status, body = rawStream(t, e.base+"/v1/responses", `{"model":"gpt-window","stream":true,"input":"hi"}`, hdr)
	if status != 200 || !strings.Contains(body, "response.failed") || !strings.Contains(body, `"content_filter"`) || strings.Contains(body, "gatew") {
		t.Fatalf("responses: %d\n%s", status, body[max(0, len(body)-1500):])
	}
}

// TestGuardMask: a mask rewrites the request that reaches the upstream, on
// the chat surface and on a converted Messages request.
func TestGuardMask(t *testing.T) {
	e := startGuardE2E(t)
	ctx := context.Background()
	if _, err := e.oa.Chat.Completions.New(ctx, userChat("gpt-mask", `my "key" is tok-12345, ok`)); err != nil {
		t.Fatal(err)
	}
	last := e.m.Requests()[len(e.m.Requests())-1].Body
	if strings.Contains(last, "tok-12345") || !strings.Contains(last, `my \"key\" is [TOKEN], ok`) {
		t.Fatalf("upstream body: %s", last)
	}
	if _, err := e.an.Messages.New(ctx, anthropic.MessageNewParams{Model: "gpt-mask", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("use tok-12345"))}}); err != nil {
		t.Fatal(err)
	}
	last = e.m.Requests()[len(e.m.Requests())-1].Body
	if strings.Contains(last, "tok-12345") || !strings.Contains(last, "use [TOKEN]") {
		t.Fatalf("upstream body: %s", last)
	}
}

// TestGuardPII: the pii kind masks what reaches the upstream on every
// surface: chat, Messages (converted and native) and Responses.
func TestGuardPII(t *testing.T) {
	e := startGuardE2E(t)
	ctx := context.Background()
	const mail = "jane.doe@example.com"
	check := func(what string) {
		t.Helper()
		last := e.m.Requests()[len(e.m.Requests())-1].Body
		if strings.Contains(last, mail) || !strings.Contains(last, "[EMAIL_REDACTED]") {
			t.Fatalf("%s: upstream body: %s", what, last)
		}
	}
	if _, err := e.oa.Chat.Completions.New(ctx, userChat("gpt-pii", "mail "+mail+" please")); err != nil {
		t.Fatal(err)
	}
	check("chat")
	for _, model := range []string{"gpt-pii", "claude-pii"} {
		if _, err := e.an.Messages.New(ctx, anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("write to " + mail))}}); err != nil {
			t.Fatal(err)
		}
		check("messages " + model)
	}
	if _, err := e.oa.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-pii", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(mail)}}); err != nil {
		t.Fatal(err)
	}
	check("responses")
	if strings.Contains(e.g.stderr.String(), mail) {
		t.Fatal("the matched value reached the log")
	}
}

func metricsText(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestGuardMonitorAndFailures: monitor mode passes and records; custom
// scripts that throw, loop and run out of memory fail closed (422
// guardrail_unavailable) or, with fail_open, pass with a bypass.
func TestGuardMonitorAndFailures(t *testing.T) {
	e := startGuardE2E(t)
	ctx := context.Background()
	r, err := e.oa.Chat.Completions.New(ctx, userChat("gpt-mon", "forbidden-word"), mockChunks)
	if err != nil || !strings.Contains(r.Choices[0].Message.Content, "deterministic") {
		t.Fatalf("monitor: %v", err)
	}
	for _, model := range []string{"gpt-throw", "gpt-loop", "gpt-mem"} {
		start := time.Now()
		_, err := e.oa.Chat.Completions.New(ctx, userChat(model, "hi"))
		wantOpenAIErr(t, err, 422, "guardrail_unavailable")
		if model == "gpt-loop" && time.Since(start) > 3*time.Second {
			t.Fatalf("timeout_ms not enforced: %v", time.Since(start))
		}
	}
	if _, err := e.oa.Chat.Completions.New(ctx, userChat("gpt-open", "hi")); err != nil {
		t.Fatalf("fail_open: %v", err)
	}
	m := metricsText(t, e.base)
	for _, want := range []string{
		`gw_guardrail_hits_total{guardrail="mon-words",action="would_block"} `,
		`gw_guardrail_hits_total{guardrail="js-throw",action="blocked_fail_closed"} 1`,
		`gw_guardrail_hits_total{guardrail="js-loop",action="blocked_fail_closed"} 1`,
		`gw_guardrail_hits_total{guardrail="js-mem",action="blocked_fail_closed"} 1`,
		`gw_guardrail_bypasses_total{reason="check_failed"} 1`,
		`gw_guardrail_latency_seconds_bucket{phase="input"`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(m, "forbidden-word") || strings.Contains(e.g.stderr.String(), "forbidden-word") {
		t.Fatal("a matched value reached the metrics or the log")
	}
}

// TestGuardTeamAndReload: an attachment to a team applies to its keys only;
// a SIGHUP reload that changes the chains keeps serving.
func TestGuardTeamAndReload(t *testing.T) {
	e := startGuardE2E(t)
	ctx := context.Background()
	red := openai.NewClient(option.WithBaseURL(e.base+"/v1"), option.WithAPIKey("red-key"), option.WithMaxRetries(0))
	_, err := red.Chat.Completions.New(ctx, userChat("gpt-plain", "forbidden-word"))
	wantOpenAIErr(t, err, 422, "content_filter")
	if _, err := e.oa.Chat.Completions.New(ctx, userChat("gpt-plain", "forbidden-word")); err != nil {
		t.Fatalf("another team's attachment applied: %v", err)
	}

	// Reload under load: drop the team attachment.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var fails atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := e.oa.Chat.Completions.New(ctx, userChat("gpt", "hello")); err != nil {
					fails.Add(1)
				}
			}
		}()
	}
	next := strings.Replace(guardFile, "  - {guardrail_id: in-words, scope_type: team, scope_id: t-red}\n", "", 1)
	if err := os.WriteFile(e.file, []byte(next), 0o600); err != nil {
		t.Fatal(err)
	}
	e.g.cmd.Process.Signal(syscall.SIGHUP)
	waitStatus(t, e.g.addr, func(s configStatus) bool { return s.ApplySeq == 2 })
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	if fails.Load() > 0 {
		t.Fatalf("%d requests failed across the reload", fails.Load())
	}
	if _, err := red.Chat.Completions.New(ctx, userChat("gpt-plain", "forbidden-word")); err != nil {
		t.Fatalf("after reload: %v", err)
	}
}
