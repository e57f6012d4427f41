package mock

import (
	"bufio"
	"bytes"
	"errors"
	"strconv"
	"sync"

	"github.com/valyala/fasthttp"

	"gw/sse/rawjson"
)

// OpenAI Chat Completions: POST .../chat/completions. The request is read in place with
// rawjson, not decoded; the answer is rendered from static fragments plus a per-answer
// chunk head, so a stream costs a few buffered writes per event. Wire format:
// protocols.md §1 and fixtures/openai_chat_*.sse.

var openAIChatRoute = route{
	method:      fasthttp.MethodPost,
	match:       func(path []byte) bool { return bytes.HasSuffix(path, strChatCompletionsPath) },
	serve:       (*Server).serveOpenAIChat,
	appendError: appendOpenAIError,
}

var strChatCompletionsPath = []byte("/chat/completions")

// Interface guards.
var _ streamBody = (*chatAnswer)(nil)

// Pre-rendered fragments of chat.completion.chunk events. A chunk is
// head + choices + usage tail + "}\n\n", where head is rendered once per answer.
var (
	strChunkChoices      = []byte(`"choices":[{"index":0,"delta":`)
	strChunkContentOpen  = []byte(`"choices":[{"index":0,"delta":{"content":"`)
	strChunkContentClose = [2][]byte{
		[]byte(`"},"logprobs":null,"finish_reason":null}]}` + "\n\n"),
		[]byte(`"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"),
	}
	strChunkChoiceNull  = []byte(`,"logprobs":null,"finish_reason":null}]`)
	strChunkFinishOpen  = []byte(`{},"logprobs":null,"finish_reason":"`)
	strChunkFinishClose = []byte(`"}]`)
	strChunkUsageNull   = []byte(`,"usage":null`)
	strChunkEnd         = []byte("}\n\n")
	strChunkUsageOpen   = []byte(`"choices":[],"usage":`)
	strRoleDeltaText    = []byte(`{"role":"assistant","content":"","refusal":null}`)
	strRoleDeltaTools   = []byte(`{"role":"assistant","content":null}`)
	strSSEDone          = []byte("data: [DONE]\n\n")
	// The stream_error_after event, as OpenAI sends a mid-stream error (protocols.md §1.3):
	// a data line with an error object and no [DONE] after it.
	strChatStreamError = []byte(`data: {"error":{"message":"The server had an error while processing your request. ` +
		`Sorry about that! (mock: stream_error_after)","type":"server_error","param":null,"code":null}}` + "\n\n")
)

const openAIFingerprint = "fp_mock"

// Messages of the 400 answers, worded as OpenAI words them.
const (
	msgBadJSON       = "We could not parse the JSON body of your request. (mock: the body is not a valid JSON object)"
	msgNoModel       = "you must provide a model parameter"
	msgNoMessages    = "Missing required parameter: 'messages'."
	msgBadMessages   = "Invalid type for 'messages': expected an array of objects."
	msgEmptyMessages = "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead."
)

// Errors of ParseChatRequest. Each message is that of the mock's 400 answer.
var (
	ErrBadJSON       = errors.New(msgBadJSON)       // the body is not a JSON object
	ErrNoModel       = errors.New(msgNoModel)       // model is absent, empty or not a string
	ErrNoMessages    = errors.New(msgNoMessages)    // messages is absent
	ErrBadMessages   = errors.New(msgBadMessages)   // messages is not an array
	ErrEmptyMessages = errors.New(msgEmptyMessages) // messages is an empty array
)

// ChatRequestInfo is what the mock reads from a Chat Completions request body. Slices
// alias the body.
type ChatRequestInfo struct {
	// Model is the contents of the "model" string with its escapes kept, ready to be
	// echoed into another JSON string.
	Model        []byte
	Stream       bool // "stream" is true
	IncludeUsage bool // "stream_options" has "include_usage": true
	HasTools     bool // "tools" is an array with at least one element
	Messages     int  // length of the "messages" array

	toolNames  [maxToolNames][]byte
	nToolNames int
}

// ToolNames returns the names of the first declared tools, in order, escapes kept: for
// each tool its function.name, or custom.name for custom tools. Tools without a name are
// skipped; at most 16 names are kept.
func (r *ChatRequestInfo) ToolNames() [][]byte { return r.toolNames[:r.nToolNames] }

// ParseChatRequest reads body as the mock reads a Chat Completions request, with
// gw/sse/rawjson: keys compare decoded and the last of repeated members wins, as in
// encoding/json. The error is ErrBadJSON, ErrNoModel, ErrNoMessages, ErrBadMessages or
// ErrEmptyMessages; its message is that of the 400 answer. Members are checked in order:
// a "model" that is not a string or a "messages" that is not an array ends the read with
// its error, even if the body is malformed further on.
func ParseChatRequest(body []byte) (ChatRequestInfo, error) {
	var r ChatRequestInfo
	err := r.parse(body)
	return r, err
}

// parse is ParseChatRequest in place; it does not allocate.
func (r *ChatRequestInfo) parse(body []byte) error {
	*r = ChatRequestInfo{}
	hasModel, hasMessages := false, false
	var bad error
	err := rawjson.ForEachKey(body, func(key, val []byte, kind rawjson.Kind) bool {
		switch chatMember(key) {
		case memberModel:
			if kind != rawjson.String {
				bad = ErrNoModel
				return false
			}
			r.Model = val[1 : len(val)-1]
			hasModel = len(r.Model) > 0
		case memberStream:
			r.Stream = kind == rawjson.True
		case memberStreamOptions:
			_, k, _ := rawjson.Get(val, "include_usage")
			r.IncludeUsage = k == rawjson.True
		case memberMessages:
			n := 0
			if rawjson.ForEachElem(val, func(int, []byte, rawjson.Kind) bool { n++; return true }) != nil {
				bad = ErrBadMessages
				return false
			}
			r.Messages, hasMessages = n, true // a repeated key wins, as in encoding/json
		case memberTools:
			r.readTools(val)
		}
		return true
	})
	switch {
	case bad != nil:
		return bad
	case err != nil:
		return ErrBadJSON
	case !hasModel:
		return ErrNoModel
	case !hasMessages:
		return ErrNoMessages
	case r.Messages == 0:
		return ErrEmptyMessages
	}
	return nil
}

// Top-level members of a Chat Completions request that the mock reads.
const (
	memberOther = iota
	memberModel
	memberStream
	memberStreamOptions
	memberMessages
	memberTools
)

var memberNames = [...]string{memberModel: "model", memberStream: "stream",
	memberStreamOptions: "stream_options", memberMessages: "messages", memberTools: "tools"}

// chatMember tells which member the raw quoted key names. Keys compare decoded, as in
// rawjson; a key spelled without a backslash decodes to itself or to no ASCII name, so it
// is switched on as it is.
func chatMember(key []byte) int {
	if bytes.IndexByte(key, '\\') >= 0 {
		for m, name := range memberNames {
			if m != memberOther && rawjson.StringEquals(key, name) {
				return m
			}
		}
		return memberOther
	}
	switch string(key) {
	case `"model"`:
		return memberModel
	case `"stream"`:
		return memberStream
	case `"stream_options"`:
		return memberStreamOptions
	case `"messages"`:
		return memberMessages
	case `"tools"`:
		return memberTools
	}
	return memberOther
}

// readTools notes whether tools is a non-empty array and collects the names of its first
// tools: function.name ({"type":"function","function":{"name":...}}), else custom.name.
func (r *ChatRequestInfo) readTools(tools []byte) {
	r.HasTools, r.nToolNames = false, 0 // a repeated key wins, as in encoding/json
	_ = rawjson.ForEachElem(tools, func(_ int, tool []byte, _ rawjson.Kind) bool {
		r.HasTools = true
		name, kind, _ := rawjson.GetPath(tool, "function", "name")
		if kind != rawjson.String || len(name) == 2 {
			name, kind, _ = rawjson.GetPath(tool, "custom", "name")
		}
		if kind == rawjson.String && len(name) > 2 {
			r.toolNames[r.nToolNames] = name[1 : len(name)-1]
			r.nToolNames++
		}
		return r.nToolNames < maxToolNames
	})
}

// chatAnswer renders one Chat Completions answer, buffered or streamed. It is pooled; it
// implements streamBody.
type chatAnswer struct {
	answerBase
	req ChatRequestInfo // valid only between parse and prepare

	stream       bool
	includeUsage bool
	head         []byte // chunk head: `data: {"id":...,"system_fingerprint":"fp_mock",`
}

var chatAnswerPool = sync.Pool{New: func() any { return new(chatAnswer) }}

func acquireChatAnswer() *chatAnswer { return chatAnswerPool.Get().(*chatAnswer) }

func (a *chatAnswer) release() {
	a.trim()
	chatAnswerPool.Put(a)
}

func (s *Server) serveOpenAIChat(ctx *fasthttp.RequestCtx, k *Knobs) {
	s.serveFormat(ctx, k, acquireChatAnswer(), appendOpenAIError, setRequestID)
}

func (a *chatAnswer) load(s *Server, k *Knobs, body []byte) string {
	if err := a.req.parse(body); err != nil {
		return err.Error()
	}
	return a.prepare(s, k, len(body))
}

func (a *chatAnswer) streaming() bool                  { return a.stream }
func (a *chatAnswer) appendBuffered(dst []byte) []byte { return a.appendCompletion(dst) }
func (a *chatAnswer) requestID() uint64                { return a.id }

// prepare copies what the answer needs out of a.req, so that the answer outlives the
// request body. It returns the message of a 400 answer, or "".
func (a *chatAnswer) prepare(s *Server, k *Knobs, bodyLen int) string {
	r := &a.req
	if msg := a.prepareBase(s, k, bodyLen, r.Model, r.HasTools, r.ToolNames()); msg != "" {
		return msg
	}
	a.stream = r.Stream
	a.includeUsage = r.Stream && r.IncludeUsage
	if a.stream {
		a.head = a.appendChunkHead(a.head[:0])
	}
	a.req = ChatRequestInfo{}
	return ""
}

func (a *chatAnswer) finishReason() string {
	if a.toolCalls > 0 {
		return "tool_calls"
	}
	return "stop"
}

// appendCompletion renders the buffered chat.completion object.
func (a *chatAnswer) appendCompletion(dst []byte) []byte {
	dst = append(dst, `{"id":"chatcmpl-mock-`...)
	dst = strconv.AppendUint(dst, a.id, 10)
	dst = append(dst, `","object":"chat.completion","created":`...)
	dst = strconv.AppendInt(dst, a.created, 10)
	dst = append(dst, `,"model":"`...)
	dst = append(dst, a.model...)
	dst = append(dst, `","choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if a.toolCalls > 0 {
		dst = append(dst, `null,"refusal":null,"annotations":[],"tool_calls":[`...)
		for c := 0; c < a.toolCalls; c++ {
			if c > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"id":"`...)
			dst = a.appendToolCallID(dst, c)
			dst = append(dst, `","type":"function","function":{"name":"`...)
			dst = a.appendToolName(dst, c)
			dst = append(dst, `","arguments":`...)
			dst = rawjson.AppendQuoteBytes(dst, a.args)
			dst = append(dst, `}}`...)
		}
		dst = append(dst, ']')
	} else {
		dst = append(dst, '"')
		dst = appendFiller(dst, 0, a.contentLen())
		dst = append(dst, `","refusal":null,"annotations":[]`...)
	}
	dst = append(dst, `},"logprobs":null,"finish_reason":"`...)
	dst = append(dst, a.finishReason()...)
	dst = append(dst, `"}],"usage":`...)
	dst = appendOpenAIUsage(dst, a.promptTokens, a.outputTokens())
	dst = append(dst, `,"service_tier":"default","system_fingerprint":"`+openAIFingerprint+`"}`...)
	return dst
}

func (a *chatAnswer) appendChunkHead(dst []byte) []byte {
	dst = append(dst, `data: {"id":"chatcmpl-mock-`...)
	dst = strconv.AppendUint(dst, a.id, 10)
	dst = append(dst, `","object":"chat.completion.chunk","created":`...)
	dst = strconv.AppendInt(dst, a.created, 10)
	dst = append(dst, `,"model":"`...)
	dst = append(dst, a.model...)
	dst = append(dst, `","service_tier":"default","system_fingerprint":"`+openAIFingerprint+`",`...)
	return dst
}

func (a *chatAnswer) appendToolCallID(dst []byte, c int) []byte {
	return a.appendToolID(dst, "call_mock_", c)
}

func (a *chatAnswer) usageTail() int {
	if a.includeUsage {
		return 1
	}
	return 0
}

// writeChunk writes one chunk whose choice carries delta and finish_reason null.
func (a *chatAnswer) writeChunk(w *bufio.Writer, delta []byte) {
	w.Write(a.head)
	w.Write(strChunkChoices)
	w.Write(delta)
	w.Write(strChunkChoiceNull)
	if a.includeUsage {
		w.Write(strChunkUsageNull)
	}
	w.Write(strChunkEnd)
}

func (a *chatAnswer) events() int {
	if a.k.EmptyStream {
		return 0
	}
	return a.outputTokens()
}

func (a *chatAnswer) writeStart(w *bufio.Writer) {
	switch {
	case a.k.EmptyStream:
	case a.toolCalls > 0:
		a.writeChunk(w, strRoleDeltaTools)
	default:
		a.writeChunk(w, strRoleDeltaText)
	}
}

func (a *chatAnswer) writeEvent(w *bufio.Writer, i int) {
	if a.toolCalls == 0 {
		// Fast path - a content chunk.
		w.Write(a.head)
		w.Write(strChunkContentOpen)
		writeFiller(w, i*a.k.ChunkSize, a.k.ChunkSize)
		w.Write(strChunkContentClose[a.usageTail()])
		return
	}
	// Tool calls: per call one header event (id, type, name, arguments:""), then the
	// argument fragments, as in fixtures/openai_chat_parallel_tool_calls_include_usage.sse.
	c, j := a.toolEvent(i)
	d := append(a.scratch[:0], `{"tool_calls":[{"index":`...)
	d = appendInt(d, c)
	if j == 0 {
		d = append(d, `,"id":"`...)
		d = a.appendToolCallID(d, c)
		d = append(d, `","type":"function","function":{"name":"`...)
		d = a.appendToolName(d, c)
		d = append(d, `","arguments":""}}]}`...)
	} else {
		d = append(d, `,"function":{"arguments":`...)
		d = rawjson.AppendQuoteBytes(d, a.argFragment(j-1))
		d = append(d, `}}]}`...)
	}
	a.scratch = d
	a.writeChunk(w, d)
}

func (a *chatAnswer) writeEnd(w *bufio.Writer) {
	if !a.k.EmptyStream {
		w.Write(a.head)
		w.Write(strChunkChoices)
		w.Write(strChunkFinishOpen)
		w.WriteString(a.finishReason())
		w.Write(strChunkFinishClose)
		if a.includeUsage {
			w.Write(strChunkUsageNull)
		}
		w.Write(strChunkEnd)
		if a.includeUsage {
			_ = w.Flush()
			w.Write(a.head)
			w.Write(strChunkUsageOpen)
			a.scratch = appendOpenAIUsage(a.scratch[:0], a.promptTokens, a.outputTokens())
			w.Write(a.scratch)
			w.Write(strChunkEnd)
		}
	}
	if !a.k.NoDone {
		_ = w.Flush()
		w.Write(strSSEDone)
	}
}

func (a *chatAnswer) writeStreamError(w *bufio.Writer) { w.Write(strChatStreamError) }

func appendOpenAIUsage(dst []byte, prompt, completion int) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = appendInt(dst, prompt)
	dst = append(dst, `,"completion_tokens":`...)
	dst = appendInt(dst, completion)
	dst = append(dst, `,"total_tokens":`...)
	dst = appendInt(dst, prompt+completion)
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},`+
		`"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`...)
	return dst
}

// appendOpenAIError renders {"error":{"message","type","param","code"}} with the type and
// code OpenAI uses for status.
func appendOpenAIError(dst []byte, status int, message string) []byte {
	typ, code := "invalid_request_error", ""
	switch {
	case status == fasthttp.StatusUnauthorized:
		code = "invalid_api_key"
	case status == fasthttp.StatusForbidden:
		code = "unsupported_country_region_territory"
	case status == fasthttp.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case status >= 500:
		typ = "server_error"
	}
	dst = append(dst, `{"error":{"message":`...)
	dst = rawjson.AppendQuote(dst, message)
	dst = append(dst, `,"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","param":null,"code":`...)
	if code == "" {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '"')
		dst = append(dst, code...)
		dst = append(dst, '"')
	}
	return append(dst, "}}"...)
}
