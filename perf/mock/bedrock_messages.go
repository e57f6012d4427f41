package mock

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/base64"

	"github.com/valyala/fasthttp"

	"gw/sse/eventstream"
	"gw/sse/rawjson"
)

// AWS Bedrock InvokeModel for Claude models (a model id holding "anthropic." or
// "claude"): POST .../model/{modelId}/invoke and .../invoke-with-response-stream, signed
// like Converse. The body is Anthropic's Messages body as Bedrock takes it: anthropic_version
// must be bedrock-2023-05-31, and `model` and `stream` are refused (400 ValidationException
// "extraneous key", as Bedrock answers); an assistant thinking block without its signature
// is refused too, as Anthropic refuses it. The answer is the Messages answer of the
// Anthropic renderer (anthropic_messages.go): buffered, the Messages body; streamed, each
// Messages event base64-encoded in an event-stream `chunk` event
// ({"bytes":"...","p":padding}), message_stop carrying Bedrock's
// amazon-bedrock-invocationMetrics. A stream request with thinking enabled replays
// testdata/anthropic_thinking_then_text.sse (a recorded thinking block with its signature,
// then text) the same way. stream_error sends a throttlingException frame before any
// content and a modelStreamErrorException after, as ConverseStream does.

// BedrockAnthropicVersion is the anthropic_version InvokeModel Claude bodies carry.
const BedrockAnthropicVersion = "bedrock-2023-05-31"

var (
	strInvokeStream = []byte("/invoke-with-response-stream")
	strBedrockStop  = []byte(`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":`)
)

//go:embed testdata/anthropic_thinking_then_text.sse
var anthropicThinkingFixture []byte

// anthropicThinkingEvents are the fixture's events' data.
var anthropicThinkingEvents = func() [][]byte {
	var out [][]byte
	for _, line := range bytes.Split(anthropicThinkingFixture, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			out = append(out, bytes.TrimSpace(d))
		}
	}
	return out
}()

// isBedrockClaude reports a Claude model id, as the adapter decides it.
func isBedrockClaude(model []byte) bool {
	return bytes.Contains(model, []byte("anthropic.")) || bytes.Contains(model, []byte("claude"))
}

// serveBedrockClaude answers InvokeModel / InvokeModelWithResponseStream of a Claude model
// (the signature is already checked).
func (s *Server) serveBedrockClaude(ctx *fasthttp.RequestCtx, k *Knobs, model []byte, stream bool) {
	invalid := func(msg string) { s.bedrockError(ctx, fasthttp.StatusBadRequest, "ValidationException", msg) }
	body, err := requestBody(ctx)
	if err != nil || rawjson.KindOf(body) != rawjson.Object {
		invalid("Malformed input request, please reformat your input and try again.")
		return
	}
	if v, _, _ := rawjson.Get(body, "anthropic_version"); !rawjson.StringEquals(v, BedrockAnthropicVersion) {
		invalid("Malformed input request: #/anthropic_version: expected " + BedrockAnthropicVersion + ", please reformat your input and try again.")
		return
	}
	for _, key := range []string{"model", "stream"} {
		if _, _, ok := rawjson.Get(body, key); ok {
			invalid("Malformed input request: #: extraneous key [" + key + "] is not permitted, please reformat your input and try again.")
			return
		}
	}
	if msg := unsignedThinking(body); msg != "" {
		invalid(msg)
		return
	}
	_, _, thinking := rawjson.Get(body, "thinking")
	// The Anthropic renderer reads model and stream from the body.
	b, err := rawjson.SetString(nil, body, "model", string(model))
	if err == nil && stream {
		b, err = rawjson.Set(nil, b, "stream", []byte("true"))
	}
	if err != nil {
		invalid("Malformed input request, please reformat your input and try again.")
		return
	}
	ctx.Request.SetBody(b)
	a := &bedrockMessagesAnswer{messagesAnswer: acquireMessagesAnswer(), replay: stream && thinking}
	s.serveFormat(ctx, k, a, appendBedrockError, setBedrockRequestID)
	if stream && !ctx.Hijacked() {
		ctx.Response.Header.SetContentTypeBytes(strAmzEventStream)
	}
}

// unsignedThinking returns Anthropic's 400 message when an assistant turn carries a
// thinking block without a signature (the native path must keep signatures), else "".
func unsignedThinking(body []byte) string {
	msgs, _, _ := rawjson.Get(body, "messages")
	msg := ""
	_ = rawjson.ForEachElem(msgs, func(_ int, m []byte, _ rawjson.Kind) bool {
		content, _, _ := rawjson.Get(m, "content")
		_ = rawjson.ForEachElem(content, func(_ int, b []byte, _ rawjson.Kind) bool {
			if t, _, _ := rawjson.Get(b, "type"); rawjson.StringEquals(t, "thinking") {
				if sig, kind, _ := rawjson.Get(b, "signature"); kind != rawjson.String || len(sig) <= 2 {
					msg = "messages: a thinking block needs its signature (mock)"
				}
			}
			return msg == ""
		})
		return msg == ""
	})
	return msg
}

// bedrockMessagesAnswer renders the Anthropic answer, streamed as chunk frames.
type bedrockMessagesAnswer struct {
	*messagesAnswer
	replay  bool // the thinking fixture
	written int
	sse     bytes.Buffer
	inner   *bufio.Writer
	frame   []byte
	payload []byte
}

func (a *bedrockMessagesAnswer) release() { a.messagesAnswer.release() }

func (a *bedrockMessagesAnswer) events() int {
	if a.replay {
		return len(anthropicThinkingEvents)
	}
	return a.messagesAnswer.events()
}

// render runs one of the Anthropic renderer's writers and sends each event it wrote as
// a chunk frame.
func (a *bedrockMessagesAnswer) render(w *bufio.Writer, write func(*bufio.Writer)) {
	if a.inner == nil {
		a.inner = bufio.NewWriter(&a.sse)
	}
	a.sse.Reset()
	write(a.inner)
	_ = a.inner.Flush()
	for _, ev := range bytes.Split(a.sse.Bytes(), []byte("\n\n")) {
		for _, line := range bytes.Split(ev, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				a.writeChunk(w, d)
			}
		}
	}
}

// writeChunk writes one Messages event as a chunk frame; message_stop gets Bedrock's
// invocation metrics.
func (a *bedrockMessagesAnswer) writeChunk(w *bufio.Writer, event []byte) {
	if t, _, _ := rawjson.Get(event, "type"); rawjson.StringEquals(t, "message_stop") {
		ev := append(append([]byte(nil), strBedrockStop...), '1', '0')
		ev = append(ev, `,"outputTokenCount":`...)
		ev = appendInt(ev, a.outputTokens())
		event = append(ev, `,"invocationLatency":12,"firstByteLatency":5}}`...)
	}
	a.payload = append(a.payload[:0], `{"bytes":"`...)
	a.payload = base64.StdEncoding.AppendEncode(a.payload, event)
	a.payload = append(a.payload, `","p":"abcdefghij"}`...)
	a.frame = eventstream.AppendMessage(a.frame[:0], []eventstream.Header{
		{Name: ":event-type", Value: "chunk"}, {Name: ":content-type", Value: "application/json"}, {Name: ":message-type", Value: "event"},
	}, a.payload)
	w.Write(a.frame)
}

func (a *bedrockMessagesAnswer) writeStart(w *bufio.Writer) {
	// Bedrock throttles before the model's first event: stream_error_after=0
	// sends the exception alone.
	if !a.replay && (!a.k.StreamError || a.k.StreamErrorAfter > 0) {
		a.render(w, a.messagesAnswer.writeStart)
	}
}

func (a *bedrockMessagesAnswer) writeEvent(w *bufio.Writer, i int) {
	a.written++
	if a.replay {
		a.writeChunk(w, anthropicThinkingEvents[i])
		return
	}
	a.render(w, func(iw *bufio.Writer) { a.messagesAnswer.writeEvent(iw, i) })
}

func (a *bedrockMessagesAnswer) writeEnd(w *bufio.Writer) {
	if !a.replay {
		a.render(w, a.messagesAnswer.writeEnd)
	}
}

func (a *bedrockMessagesAnswer) writeStreamError(w *bufio.Writer) {
	typ, msg := "modelStreamErrorException", `{"message":"Model stream error (mock: stream_error_after)","originalStatusCode":500}`
	if a.written == 0 {
		typ, msg = "throttlingException", `{"message":"Too many requests, please wait before trying again. (mock: stream_error_after=0)"}`
	}
	a.frame = eventstream.AppendMessage(a.frame[:0], []eventstream.Header{
		{Name: ":exception-type", Value: typ}, {Name: ":content-type", Value: "application/json"}, {Name: ":message-type", Value: "exception"},
	}, []byte(msg))
	w.Write(a.frame)
}
