package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/responses"
)

// The native upstream of these tests streams an answer whose e-mail
// address is split across two deltas ("jane.do" | "e@example.com"): the
// perf mock only streams its fixed filler.
const nativeMailFile = `_format_version: "1"
provider_keys:
  - display_name: claude-key
    provider: anthropic
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${NATIVE_MAIL_UPSTREAM}/v1
  - display_name: oa-native
    provider: openai
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${NATIVE_MAIL_UPSTREAM}/v1
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
models:
  - {display_name: claude, provider: anthropic, model_name: claude-x, provider_key: claude-key}
  - {display_name: gpt-native, provider: openai, model_name: gpt-4o, provider_key: oa-native}
guardrails:
  - name: pii-out
    kind: pii
    hook_point: output
guardrail_attachments:
  - {guardrail_id: pii-out, scope_type: model, scope_id: claude}
  - {guardrail_id: pii-out, scope_type: model, scope_id: gpt-native}
`

var nativeMailMessages = []string{
	`event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`,
	`event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	`event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"write to jane.do"}}`,
	`event: ping
data: {"type":"ping"}`,
	`event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"e@example.com today"}}`,
	`event: content_block_stop
data: {"type":"content_block_stop","index":0}`,
	`event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}`,
	`event: message_stop
data: {"type":"message_stop"}`,
}

const nativeMailText = `"write to jane.doe@example.com today"`

var nativeMailResponses = []string{
	`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","model":"gpt-4o","output":[]}}`,
	`{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`,
	`{"type":"response.content_part.added","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}}`,
	`{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"write to jane.do"}`,
	`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"e@example.com today"}`,
	`{"type":"response.output_text.done","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"text":` + nativeMailText + `}`,
	`{"type":"response.content_part.done","sequence_number":6,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":` + nativeMailText + `}}`,
	`{"type":"response.output_item.done","sequence_number":7,"output_index":0,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":` + nativeMailText + `}]}}`,
	`{"type":"response.completed","sequence_number":8,"response":{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-4o","output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":` + nativeMailText + `}]}],"usage":{"input_tokens":5,"output_tokens":9,"total_tokens":14}}}`,
}

// startNativeMailUpstream serves the two native streams, flushing each
// event on its own so gw reads the address in two pieces.
func startNativeMailUpstream(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		switch r.URL.Path {
		case "/v1/messages":
			for _, ev := range nativeMailMessages {
				w.Write([]byte(ev + "\n\n"))
				fl.Flush()
			}
		case "/v1/responses":
			for _, ev := range nativeMailResponses {
				typ := ev[len(`{"type":"`):strings.Index(ev, `","sequence_number"`)]
				w.Write([]byte("event: " + typ + "\ndata: " + ev + "\n\n"))
				fl.Flush()
			}
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	t.Setenv("NATIVE_MAIL_UPSTREAM", "http://"+ln.Addr().String())
}

// TestGuardNativeStreamMask: an output pii guardrail masks an e-mail
// address split across two deltas of a native Messages stream (Anthropic
// key) and of a native Responses stream, as the official SDKs accumulate
// them: deltas, the .done events and the final response agree.
func TestGuardNativeStreamMask(t *testing.T) {
	startNativeMailUpstream(t)
	g := startGW(t, writeTemp(t, "native-mail.yaml", nativeMailFile))
	base := "http://" + g.addr
	ctx := context.Background()
	const want = "write to [EMAIL_REDACTED] today"

	an := anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey("caller-e2e"), aoption.WithMaxRetries(0))
	ms := an.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "claude", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	var msg anthropic.Message
	var deltas int
	for ms.Next() {
		ev := ms.Current()
		if err := msg.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "content_block_delta" {
			deltas++
		}
	}
	if err := ms.Err(); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != want || deltas != 2 || msg.StopReason != "end_turn" {
		t.Fatalf("messages: %d deltas, %+v", deltas, msg.Content)
	}

	oa := openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))
	rs := oa.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "gpt-native", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	var text, done, part, item, final string
	for rs.Next() {
		ev := rs.Current()
		switch ev.Type {
		case "response.output_text.delta":
			text += ev.Delta.OfString
		case "response.output_text.done":
			done = ev.Text
		case "response.content_part.done":
			part = ev.Part.Text
		case "response.output_item.done":
			item = ev.Item.Content[0].Text
		case "response.completed":
			final = ev.Response.OutputText()
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	if text != want || done != want || part != want || item != want || final != want {
		t.Fatalf("responses: deltas %q, done %q, part %q, item %q, completed %q", text, done, part, item, final)
	}
	if strings.Contains(g.stderr.String(), "jane.doe") {
		t.Fatal("the matched value reached the log")
	}
}
