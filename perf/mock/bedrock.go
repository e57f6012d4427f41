package mock

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/valyala/fasthttp"

	"gw/sse/eventstream"
	"gw/sse/rawjson"
)

// AWS Bedrock Converse: POST .../model/{modelId}/converse and .../converse-stream, with
// any prefix (protocols.md §5). Every request must carry a SigV4 signature by
// BedrockAccessKeyID / BedrockSecretAccessKey (any region, signing name bedrock); the
// mock recomputes it with the AWS SDK's signer over the request as received and answers
// Bedrock's 403 when it differs. Streams are binary event-stream frames
// (application/vnd.amazon.eventstream).
//
// A stream request for a nova-micro model that declares a tool named get_temperature
// replays testdata/bedrock_converse_stream_text_then_tool_use.eventstream byte for byte,
// one frame per content event. Other streams are generated: messageStart, reasoning
// deltas (two, then a signature) when additionalModelRequestFields.thinking is set, text
// deltas (chunks × chunk_size of filler) or tool calls (contentBlockStart toolUse, input
// fragments, contentBlockStop), messageStop, metadata (usage). The knobs apply as for the
// other formats; stream_error ends the stream with a throttlingException frame when no
// content event was sent yet (stream_error_after=0: Bedrock throttling reported in-band)
// and with a modelStreamErrorException after content.

// The credentials the mock accepts.
const (
	BedrockAccessKeyID     = "AKIAMOCKBEDROCK00001"
	BedrockSecretAccessKey = "mock/bedrock+secret/key/0000000000000000"
)

var bedrockConverseRoute = route{
	method: fasthttp.MethodPost,
	match: func(path []byte) bool {
		return bytes.Contains(path, strBedrockModel) && (bytes.HasSuffix(path, strConverse) || bytes.HasSuffix(path, strConverseStream) ||
			bytes.HasSuffix(path, strInvoke) || bytes.HasSuffix(path, strInvokeStream))
	},
	serve:       (*Server).serveBedrockConverse,
	appendError: appendBedrockError,
}

var (
	strBedrockModel    = []byte("/model/")
	strConverse        = []byte("/converse")
	strConverseStream  = []byte("/converse-stream")
	strAmzEventStream  = []byte("application/vnd.amazon.eventstream")
	strAmznErrorType   = []byte("X-Amzn-ErrorType")
	strAmznRequestID   = []byte("X-Amzn-Requestid")
	strGetTemperature  = []byte("get_temperature")
	strNovaMicro       = []byte("nova-micro")
	bedrockSigMismatch = "The request signature we calculated does not match the signature you provided. " +
		"Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
)

//go:embed testdata/bedrock_converse_stream_text_then_tool_use.eventstream
var bedrockFixture []byte

// bedrockFixtureFrames are the fixture's frames, each a sub-slice of bedrockFixture.
var bedrockFixtureFrames = func() [][]byte {
	var out [][]byte
	for b := bedrockFixture; len(b) >= 4; {
		n := int(b[0])<<24 | int(b[1])<<16 | int(b[2])<<8 | int(b[3])
		if n < 16 || n > len(b) {
			break
		}
		out = append(out, b[:n:n])
		b = b[n:]
	}
	return out
}()

// appendBedrockError renders Bedrock's error body {"message": ...}.
func appendBedrockError(dst []byte, _ int, message string) []byte {
	dst = append(dst, `{"message":`...)
	dst = rawjson.AppendQuote(dst, message)
	return append(dst, '}')
}

func (s *Server) bedrockError(ctx *fasthttp.RequestCtx, status int, typ, message string) {
	ctx.Response.Header.SetCanonical(strAmznErrorType, []byte(typ))
	s.writeError(ctx, appendBedrockError, status, message)
}

func (s *Server) serveBedrockConverse(ctx *fasthttp.RequestCtx, k *Knobs) {
	if bytes.HasSuffix(ctx.Path(), strInvoke) || bytes.HasSuffix(ctx.Path(), strInvokeStream) {
		s.serveBedrockInvoke(ctx, k) // bedrock_invoke.go
		return
	}
	if typ, msg := verifyBedrockSignature(ctx); typ != "" {
		s.bedrockError(ctx, fasthttp.StatusForbidden, typ, msg)
		return
	}
	a := acquireConverseAnswer()
	path := ctx.Path()
	a.stream = bytes.HasSuffix(path, strConverseStream)
	i := bytes.Index(path, strBedrockModel) + len(strBedrockModel)
	end := len(path) - len(strConverse)
	if a.stream {
		end = len(path) - len(strConverseStream)
	}
	a.modelID = append(a.modelID[:0], path[i:max(i, end)]...)
	stream := a.stream // a belongs to the stream writer once serveFormat returns
	s.serveFormat(ctx, k, a, appendBedrockError, setBedrockRequestID)
	if stream && !ctx.Hijacked() {
		ctx.Response.Header.SetContentTypeBytes(strAmzEventStream)
	}
}

func setBedrockRequestID(ctx *fasthttp.RequestCtx, id uint64) {
	setRequestID(ctx, id)
	ctx.Response.Header.SetCanonical(strAmznRequestID, ctx.Response.Header.Peek("X-Request-Id"))
}

// verifyBedrockSignature recomputes the SigV4 signature of the request with the AWS SDK
// signer and returns Bedrock's error type and message when it does not match.
func verifyBedrockSignature(ctx *fasthttp.RequestCtx) (string, string) {
	auth := string(ctx.Request.Header.Peek("Authorization"))
	const algo = "AWS4-HMAC-SHA256 "
	if !strings.HasPrefix(auth, algo) {
		return "MissingAuthenticationTokenException", "Missing Authentication Token"
	}
	var cred, signed string
	for _, part := range strings.Split(auth[len(algo):], ",") {
		part = strings.TrimSpace(part)
		if v, ok := strings.CutPrefix(part, "Credential="); ok {
			cred = v
		} else if v, ok := strings.CutPrefix(part, "SignedHeaders="); ok {
			signed = v
		}
	}
	scope := strings.Split(cred, "/") // AKID/date/region/service/aws4_request
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return "IncompleteSignatureException", "Authorization header requires a valid Credential."
	}
	if scope[0] != BedrockAccessKeyID {
		return "UnrecognizedClientException", "The security token included in the request is invalid."
	}
	if scope[3] != "bedrock" {
		return "InvalidSignatureException", "Credential should be scoped to correct service: 'bedrock'."
	}
	date := string(ctx.Request.Header.Peek("X-Amz-Date"))
	t, err := time.Parse("20060102T150405Z", date)
	if err != nil || !strings.HasPrefix(date, scope[1]) {
		return "InvalidSignatureException", "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP."
	}
	raw := string(ctx.Request.URI().PathOriginal())
	dec, err := url.PathUnescape(raw)
	if err != nil {
		return "InvalidSignatureException", bedrockSigMismatch
	}
	hreq := &http.Request{Method: string(ctx.Method()), Host: string(ctx.Host()), Header: http.Header{},
		URL: &url.URL{Scheme: "https", Host: string(ctx.Host()), Path: dec, RawPath: raw, RawQuery: string(ctx.URI().QueryString())}}
	for _, name := range strings.Split(signed, ";") {
		switch name {
		case "host", "x-amz-date", "x-amz-security-token":
			continue // the signer sets them
		}
		hreq.Header.Set(name, string(ctx.Request.Header.Peek(name)))
	}
	sum := sha256.Sum256(ctx.PostBody())
	creds := aws.Credentials{AccessKeyID: BedrockAccessKeyID, SecretAccessKey: BedrockSecretAccessKey,
		SessionToken: string(ctx.Request.Header.Peek("X-Amz-Security-Token"))}
	if err := bedrockSigner.SignHTTP(context.Background(), creds, hreq, hex.EncodeToString(sum[:]), "bedrock", scope[2], t); err != nil {
		return "InvalidSignatureException", bedrockSigMismatch
	}
	if hreq.Header.Get("Authorization") != auth {
		return "InvalidSignatureException", bedrockSigMismatch
	}
	return "", ""
}

var bedrockSigner = v4.NewSigner()

// converseAnswer is one Converse answer.
type converseAnswer struct {
	answerBase
	stream    bool
	replay    bool // the fixture, frame by frame
	reasoning bool // two reasoning deltas and a signature first
	modelID   []byte
	written   int // content events written (the stream error's type depends on it)
	frame     []byte
	payload   []byte
	maxTokens int64
	toolNames [maxToolNames][]byte
}

var converseAnswerPool = sync.Pool{New: func() any { return new(converseAnswer) }}

func acquireConverseAnswer() *converseAnswer { return converseAnswerPool.Get().(*converseAnswer) }

func (a *converseAnswer) release() {
	a.trim()
	a.stream, a.replay, a.reasoning, a.written, a.maxTokens = false, false, false, 0, 0
	converseAnswerPool.Put(a)
}

func (a *converseAnswer) streaming() bool   { return a.stream }
func (a *converseAnswer) requestID() uint64 { return a.id }

// load reads the Converse request: messages are required; toolConfig.tools names,
// additionalModelRequestFields.thinking and inferenceConfig.maxTokens are read.
func (a *converseAnswer) load(s *Server, k *Knobs, body []byte) string {
	var v [4][]byte
	if rawjson.ScanTop(body, []string{"messages", "toolConfig", "additionalModelRequestFields", "inferenceConfig"}, v[:]) != nil {
		return "Malformed input request, please reformat your input and try again."
	}
	if n, ok := countElems(v[0]); !ok || n == 0 {
		return "The messages field is required and must be a non-empty list."
	}
	n := 0
	hasTools := false
	tools, _, _ := rawjson.Get(v[1], "tools")
	_ = rawjson.ForEachElem(tools, func(_ int, t []byte, _ rawjson.Kind) bool {
		hasTools = true
		if name, kind, _ := rawjson.GetPath(t, "toolSpec", "name"); kind == rawjson.String && len(name) > 2 && n < maxToolNames {
			a.toolNames[n] = name[1 : len(name)-1]
			n++
		}
		return true
	})
	_, _, a.reasoning = rawjson.Get(v[2], "thinking")
	if mt, _, ok := rawjson.Get(v[3], "maxTokens"); ok {
		a.maxTokens, _ = rawjson.ParseInt(mt)
	}
	a.replay = false
	if a.stream && bytes.Contains(a.modelID, strNovaMicro) {
		for _, name := range a.toolNames[:n] {
			if bytes.Equal(name, strGetTemperature) {
				a.replay = true
			}
		}
	}
	a.written = 0
	return a.prepareBase(s, k, len(body), a.modelID, hasTools, a.toolNames[:n])
}

// reasoningEvents is the number of reasoning deltas of a reasoning answer.
func (a *converseAnswer) reasoningEvents() int {
	if a.reasoning {
		return 2
	}
	return 0
}

func (a *converseAnswer) events() int {
	switch {
	case a.replay:
		return len(bedrockFixtureFrames)
	case a.k.EmptyStream:
		return 0
	}
	return a.reasoningEvents() + a.outputTokens()
}

// writeFrame writes one event frame with payload a.payload.
func (a *converseAnswer) writeFrame(w *bufio.Writer, typ string) {
	a.frame = eventstream.AppendMessage(a.frame[:0], []eventstream.Header{
		{Name: ":event-type", Value: typ}, {Name: ":content-type", Value: "application/json"}, {Name: ":message-type", Value: "event"},
	}, a.payload)
	w.Write(a.frame)
}

func (a *converseAnswer) writeStart(w *bufio.Writer) {
	if a.replay || a.k.EmptyStream {
		return
	}
	a.payload = append(a.payload[:0], `{"p":"abcdef","role":"assistant"}`...)
	a.writeFrame(w, "messageStart")
}

// textBlock is the content block index of the text (or first tool call).
func (a *converseAnswer) textBlock() int {
	if a.reasoning {
		return 1
	}
	return 0
}

func (a *converseAnswer) writeEvent(w *bufio.Writer, i int) {
	a.written++
	if a.replay {
		w.Write(bedrockFixtureFrames[i])
		return
	}
	if r := a.reasoningEvents(); i < r {
		a.payload = append(a.payload[:0], `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"`...)
		a.payload = appendFiller(a.payload, i*a.k.ChunkSize, a.k.ChunkSize)
		a.payload = append(a.payload, `"}},"p":"abc"}`...)
		a.writeFrame(w, "contentBlockDelta")
		if i == r-1 {
			a.payload = append(a.payload[:0], `{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"mock-signature"}}}`...)
			a.writeFrame(w, "contentBlockDelta")
			a.payload = append(a.payload[:0], `{"contentBlockIndex":0}`...)
			a.writeFrame(w, "contentBlockStop")
		}
		return
	} else {
		i -= r
	}
	tb := a.textBlock()
	if a.toolCalls == 0 {
		a.payload = append(a.payload[:0], `{"contentBlockIndex":`...)
		a.payload = appendInt(a.payload, tb)
		a.payload = append(a.payload, `,"delta":{"text":"`...)
		a.payload = appendFiller(a.payload, i*a.k.ChunkSize, a.k.ChunkSize)
		a.payload = append(a.payload, `"},"p":"abcdefgh"}`...)
		a.writeFrame(w, "contentBlockDelta")
		return
	}
	c, j := a.toolEvent(i)
	a.payload = append(a.payload[:0], `{"contentBlockIndex":`...)
	a.payload = appendInt(a.payload, tb+c)
	if j == 0 {
		a.payload = append(a.payload, `,"start":{"toolUse":{"toolUseId":"`...)
		a.payload = a.appendToolID(a.payload, "tooluse_", c)
		a.payload = append(a.payload, `","name":"`...)
		a.payload = a.appendToolName(a.payload, c)
		a.payload = append(a.payload, `"}}}`...)
		a.writeFrame(w, "contentBlockStart")
		return
	}
	a.payload = append(a.payload, `,"delta":{"toolUse":{"input":`...)
	a.scratch = append(a.scratch[:0], a.argFragment(j-1)...)
	a.payload = rawjson.AppendQuoteBytes(a.payload, a.scratch)
	a.payload = append(a.payload, `}}}`...)
	a.writeFrame(w, "contentBlockDelta")
	if j == a.frags {
		a.payload = append(a.payload[:0], `{"contentBlockIndex":`...)
		a.payload = appendInt(a.payload, tb+c)
		a.payload = append(a.payload, '}')
		a.writeFrame(w, "contentBlockStop")
	}
}

func (a *converseAnswer) stopReason() string {
	switch {
	case a.toolCalls > 0:
		return "tool_use"
	case a.maxTokens > 0 && int64(a.outputTokens()) >= a.maxTokens:
		return "max_tokens"
	}
	return "end_turn"
}

func (a *converseAnswer) appendUsage(dst []byte) []byte {
	out := a.outputTokens() + a.reasoningEvents()
	dst = append(dst, `"usage":{"inputTokens":`...)
	dst = appendInt(dst, a.promptTokens)
	dst = append(dst, `,"outputTokens":`...)
	dst = appendInt(dst, out)
	dst = append(dst, `,"totalTokens":`...)
	dst = appendInt(dst, a.promptTokens+out)
	return append(dst, '}')
}

func (a *converseAnswer) writeEnd(w *bufio.Writer) {
	if a.replay || a.k.EmptyStream {
		return
	}
	if a.toolCalls == 0 {
		a.payload = append(a.payload[:0], `{"contentBlockIndex":`...)
		a.payload = appendInt(a.payload, a.textBlock())
		a.payload = append(a.payload, '}')
		a.writeFrame(w, "contentBlockStop")
	}
	if a.k.NoDone {
		return
	}
	a.payload = append(a.payload[:0], `{"p":"ab","stopReason":"`...)
	a.payload = append(a.payload, a.stopReason()...)
	a.payload = append(a.payload, `"}`...)
	a.writeFrame(w, "messageStop")
	a.payload = append(a.payload[:0], `{"metrics":{"latencyMs":1},"p":"abc",`...)
	a.payload = a.appendUsage(a.payload)
	a.payload = append(a.payload, '}')
	a.writeFrame(w, "metadata")
}

func (a *converseAnswer) writeStreamError(w *bufio.Writer) {
	typ, msg := "modelStreamErrorException", `{"message":"Model stream error (mock: stream_error_after)","originalStatusCode":500}`
	if a.written == 0 {
		typ, msg = "throttlingException", `{"message":"Too many requests, please wait before trying again. (mock: stream_error_after=0)"}`
	}
	a.frame = eventstream.AppendMessage(a.frame[:0], []eventstream.Header{
		{Name: ":exception-type", Value: typ}, {Name: ":content-type", Value: "application/json"}, {Name: ":message-type", Value: "exception"},
	}, []byte(msg))
	w.Write(a.frame)
}

// appendBuffered renders the Converse answer.
func (a *converseAnswer) appendBuffered(dst []byte) []byte {
	dst = append(dst, `{"output":{"message":{"role":"assistant","content":[`...)
	if a.reasoning {
		dst = append(dst, `{"reasoningContent":{"reasoningText":{"text":"`...)
		dst = appendFiller(dst, 0, 2*a.k.ChunkSize)
		dst = append(dst, `","signature":"mock-signature"}}},`...)
	}
	if a.toolCalls == 0 {
		dst = append(dst, `{"text":"`...)
		dst = appendFiller(dst, 0, a.contentLen())
		dst = append(dst, `"}`...)
	}
	for c := 0; c < a.toolCalls; c++ {
		if c > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"toolUse":{"toolUseId":"`...)
		dst = a.appendToolID(dst, "tooluse_", c)
		dst = append(dst, `","name":"`...)
		dst = a.appendToolName(dst, c)
		dst = append(dst, `","input":`...)
		dst = append(dst, a.args...)
		dst = append(dst, "}}"...)
	}
	dst = append(dst, `]}},"stopReason":"`...)
	dst = append(dst, a.stopReason()...)
	dst = append(dst, `",`...)
	dst = a.appendUsage(dst)
	return append(dst, `,"metrics":{"latencyMs":1}}`...)
}
