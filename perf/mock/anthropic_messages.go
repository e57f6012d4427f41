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

// Anthropic Messages: POST .../messages and POST .../messages/count_tokens, with any
// prefix. The request is read in place with rawjson; the answer is rendered from static
// fragments. Wire format: protocols.md §3 and testdata/anthropic_*.
//
// A stream is, as recorded in testdata/anthropic_text.sse:
//
//	message_start, content_block_start (text), ping, content_block_delta (text_delta) × chunks,
//	content_block_stop, message_delta (stop_reason, usage), message_stop
//
// and with tool calls, as in testdata/anthropic_tool_use_json.jsonl, per call a
// content_block_start (tool_use) and an empty input_json_delta (a ping after the first
// one), then the argument fragments as input_json_delta, then content_block_stop.

var anthropicMessagesRoute = route{
	method:      fasthttp.MethodPost,
	match:       func(path []byte) bool { return bytes.HasSuffix(path, strMessagesPath) },
	serve:       (*Server).serveAnthropicMessages,
	appendError: appendAnthropicError,
}

var anthropicCountTokensRoute = route{
	method:      fasthttp.MethodPost,
	match:       func(path []byte) bool { return bytes.HasSuffix(path, strCountTokensPath) },
	serve:       (*Server).serveAnthropicCountTokens,
	appendError: appendAnthropicError,
}

var (
	strMessagesPath     = []byte("/messages")
	strCountTokensPath  = []byte("/messages/count_tokens")
	strAnthropicVersion = []byte("anthropic-version")
	strRequestID        = []byte("Request-Id")
)

// Interface guards.
var _ streamBody = (*messagesAnswer)(nil)

// Pre-rendered Anthropic events and fragments.
var (
	strAnthropicMessageStartOpen = []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":")
	strAnthropicTextBlockStart   = []byte("event: content_block_start\ndata: " +
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n")
	strAnthropicPing          = []byte("event: ping\ndata: {\"type\":\"ping\"}\n\n")
	strAnthropicTextDeltaOpen = []byte("event: content_block_delta\ndata: " +
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`)
	strAnthropicTextDeltaClose = []byte("\"}}\n\n")
	strAnthropicMessageStop    = []byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	// The stream_error_after event: Anthropic's mid-stream overload (protocols.md §3.4).
	strAnthropicStreamError = []byte("event: error\ndata: " +
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded (mock: stream_error_after)"}}` + "\n\n")
)

// Messages of the 400 answers, worded as Anthropic words them.
const (
	msgAnthropicBadJSON      = "There was an error parsing the body of your request: it is not a valid JSON object. (mock)"
	msgAnthropicNoModel      = "model: Field required"
	msgAnthropicNoMaxTokens  = "max_tokens: Field required"
	msgAnthropicBadMaxTokens = "max_tokens: Input should be a valid integer greater than or equal to 1"
	msgAnthropicNoMessages   = "messages: Field required"
	msgAnthropicBadMessages  = "messages: Input should be a valid list"
	msgAnthropicNoMessage    = "messages: at least one message is required"
	msgAnthropicNoVersion    = "anthropic-version: header is required"
)

// Errors of ParseMessagesRequest and ParseCountTokensRequest. Each message is that of the
// mock's 400 answer.
var (
	ErrMessagesBadJSON      = errors.New(msgAnthropicBadJSON)      // the body is not a JSON object
	ErrMessagesNoModel      = errors.New(msgAnthropicNoModel)      // model is absent, empty or not a string
	ErrMessagesNoMaxTokens  = errors.New(msgAnthropicNoMaxTokens)  // max_tokens is absent
	ErrMessagesBadMaxTokens = errors.New(msgAnthropicBadMaxTokens) // max_tokens is not an integer >= 1
	ErrMessagesNoMessages   = errors.New(msgAnthropicNoMessages)   // messages is absent
	ErrMessagesBadMessages  = errors.New(msgAnthropicBadMessages)  // messages is not an array
	ErrMessagesEmpty        = errors.New(msgAnthropicNoMessage)    // messages is an empty array
)

// MessagesRequestInfo is what the mock reads from an Anthropic Messages (or count_tokens)
// request body. Slices alias the body.
type MessagesRequestInfo struct {
	// Model is the contents of the "model" string with its escapes kept.
	Model     []byte
	Stream    bool  // "stream" is true (not read for count_tokens)
	MaxTokens int64 // "max_tokens" (not read for count_tokens)
	Messages  int   // length of the "messages" array
	HasTools  bool  // "tools" is an array with at least one element

	toolNames  [maxToolNames][]byte
	nToolNames int
}

// ToolNames returns the "name" of the first declared tools, in order, escapes kept. Tools
// without a name are skipped; at most 16 names are kept.
func (r *MessagesRequestInfo) ToolNames() [][]byte { return r.toolNames[:r.nToolNames] }

// ParseMessagesRequest reads body as the mock reads a POST /v1/messages request, with
// gw/sse/rawjson: keys compare decoded and the last of repeated members wins. model,
// max_tokens (an integer >= 1) and a non-empty messages array are required. The error is
// one of the ErrMessages* errors; its message is that of the 400 answer. Members are
// checked in order: a "model" that is not a string, a "max_tokens" that is not an integer
// >= 1 or a "messages" that is not an array ends the read with its error, even if the body
// is malformed further on.
func ParseMessagesRequest(body []byte) (MessagesRequestInfo, error) {
	var r MessagesRequestInfo
	err := r.parse(body, false)
	return r, err
}

// ParseCountTokensRequest is ParseMessagesRequest for POST /v1/messages/count_tokens: it
// does not read max_tokens nor stream.
func ParseCountTokensRequest(body []byte) (MessagesRequestInfo, error) {
	var r MessagesRequestInfo
	err := r.parse(body, true)
	return r, err
}

// Top-level members of a Messages request that the mock reads, indexes into messagesMembers.
const (
	messagesModel = iota
	messagesMaxTokens
	messagesMessages
	messagesStream
	messagesTools
)

var messagesMembers = []string{messagesModel: "model", messagesMaxTokens: "max_tokens",
	messagesMessages: "messages", messagesStream: "stream", messagesTools: "tools"}

// parse is ParseMessagesRequest (countTokens false) or ParseCountTokensRequest in place;
// it does not allocate.
func (r *MessagesRequestInfo) parse(body []byte, countTokens bool) error {
	*r = MessagesRequestInfo{}
	hasModel, hasMaxTokens, hasMessages := false, false, false
	var bad error
	err := rawjson.ForEachKey(body, func(key, val []byte, kind rawjson.Kind) bool {
		switch memberIndex(key, messagesMembers) {
		case messagesModel:
			if kind != rawjson.String {
				bad = ErrMessagesNoModel
				return false
			}
			r.Model = val[1 : len(val)-1]
			hasModel = len(r.Model) > 0
		case messagesMaxTokens:
			if countTokens {
				break
			}
			n, ok := rawjson.ParseInt(val)
			if !ok || n < 1 {
				bad = ErrMessagesBadMaxTokens
				return false
			}
			r.MaxTokens, hasMaxTokens = n, true
		case messagesMessages:
			n, ok := countElems(val)
			if !ok {
				bad = ErrMessagesBadMessages
				return false
			}
			r.Messages, hasMessages = n, true
		case messagesStream:
			if !countTokens {
				r.Stream = kind == rawjson.True
			}
		case messagesTools:
			r.HasTools, r.nToolNames = readNamedTools(val, &r.toolNames)
		}
		return true
	})
	switch {
	case bad != nil:
		return bad
	case err != nil:
		return ErrMessagesBadJSON
	case !hasModel:
		return ErrMessagesNoModel
	case !countTokens && !hasMaxTokens:
		return ErrMessagesNoMaxTokens
	case !hasMessages:
		return ErrMessagesNoMessages
	case r.Messages == 0:
		return ErrMessagesEmpty
	}
	return nil
}

// messagesAnswer renders one Anthropic Messages answer, buffered or streamed. It is
// pooled; it implements streamBody.
type messagesAnswer struct {
	answerBase
	req    MessagesRequestInfo // valid only between parse and prepare
	stream bool
}

var messagesAnswerPool = sync.Pool{New: func() any { return new(messagesAnswer) }}

func acquireMessagesAnswer() *messagesAnswer { return messagesAnswerPool.Get().(*messagesAnswer) }

func (a *messagesAnswer) release() {
	a.trim()
	messagesAnswerPool.Put(a)
}

// checkAnthropicVersion answers 400 and returns false when the request has no
// anthropic-version header, as Anthropic does.
func (s *Server) checkAnthropicVersion(ctx *fasthttp.RequestCtx) bool {
	if len(ctx.Request.Header.PeekBytes(strAnthropicVersion)) > 0 {
		return true
	}
	s.writeError(ctx, appendAnthropicError, fasthttp.StatusBadRequest, msgAnthropicNoVersion)
	return false
}

func (s *Server) serveAnthropicMessages(ctx *fasthttp.RequestCtx, k *Knobs) {
	if !s.checkAnthropicVersion(ctx) {
		return
	}
	s.serveFormat(ctx, k, acquireMessagesAnswer(), appendAnthropicError, setAnthropicRequestID)
}

func (a *messagesAnswer) load(s *Server, k *Knobs, body []byte) string {
	if err := a.req.parse(body, false); err != nil {
		return err.Error()
	}
	return a.prepare(s, k, len(body))
}

func (a *messagesAnswer) streaming() bool                  { return a.stream }
func (a *messagesAnswer) appendBuffered(dst []byte) []byte { return a.appendMessage(dst) }
func (a *messagesAnswer) requestID() uint64                { return a.id }

// serveAnthropicCountTokens answers {"input_tokens":N}, N estimated as chat's
// prompt_tokens: max(1, len(body)/4).
func (s *Server) serveAnthropicCountTokens(ctx *fasthttp.RequestCtx, k *Knobs) {
	if !s.checkAnthropicVersion(ctx) {
		return
	}
	body, err := requestBody(ctx)
	if err != nil {
		s.writeError(ctx, appendAnthropicError, fasthttp.StatusBadRequest, "mock: cannot decode the request body: "+err.Error())
		return
	}
	var r MessagesRequestInfo
	if err := r.parse(body, true); err != nil {
		s.writeError(ctx, appendAnthropicError, fasthttp.StatusBadRequest, err.Error())
		return
	}
	id := s.seq.Add(1)
	setAnthropicRequestID(ctx, id)
	if k.Fail {
		s.hangUp(ctx)
		return
	}
	var buf [48]byte
	b := append(buf[:0], `{"input_tokens":`...)
	b = appendInt(b, promptTokens(len(body)))
	b = append(b, '}')
	ctx.SetContentTypeBytes(strJSON)
	ctx.SetBody(b)
}

// setAnthropicRequestID sets Anthropic's request-id header besides X-Request-Id.
func setAnthropicRequestID(ctx *fasthttp.RequestCtx, id uint64) {
	var buf [32]byte
	b := strconv.AppendUint(append(buf[:0], strRequestIDStart...), id, 10)
	ctx.Response.Header.SetCanonical(strXRequestID, b)
	ctx.Response.Header.SetCanonical(strRequestID, b)
}

// prepare copies what the answer needs out of a.req, so that the answer outlives the
// request body. It returns the message of a 400 answer, or "".
func (a *messagesAnswer) prepare(s *Server, k *Knobs, bodyLen int) string {
	r := &a.req
	if msg := a.prepareBase(s, k, bodyLen, r.Model, r.HasTools, r.ToolNames()); msg != "" {
		return msg
	}
	a.stream = r.Stream
	a.req = MessagesRequestInfo{}
	return ""
}

func (a *messagesAnswer) stopReason() string {
	if a.toolCalls > 0 {
		return "tool_use"
	}
	return "end_turn"
}

// appendMessageHead renders the message object up to its content: id, type, role, model.
func (a *messagesAnswer) appendMessageHead(dst []byte) []byte {
	dst = append(dst, `{"id":"msg_mock_`...)
	dst = strconv.AppendUint(dst, a.id, 10)
	dst = append(dst, `","type":"message","role":"assistant","model":"`...)
	dst = append(dst, a.model...)
	return append(dst, `","content":`...)
}

// appendUsage renders the usage object; the mock never reads or writes a cache.
func (a *messagesAnswer) appendUsage(dst []byte, outputTokens int) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = appendInt(dst, a.promptTokens)
	dst = append(dst, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":`...)
	dst = appendInt(dst, outputTokens)
	return append(dst, '}')
}

func (a *messagesAnswer) appendToolUseID(dst []byte, c int) []byte {
	return a.appendToolID(dst, "toolu_mock_", c)
}

// appendMessage renders the buffered message object.
func (a *messagesAnswer) appendMessage(dst []byte) []byte {
	dst = a.appendMessageHead(dst)
	dst = append(dst, '[')
	if a.toolCalls > 0 {
		for c := 0; c < a.toolCalls; c++ {
			if c > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"type":"tool_use","id":"`...)
			dst = a.appendToolUseID(dst, c)
			dst = append(dst, `","name":"`...)
			dst = a.appendToolName(dst, c)
			dst = append(dst, `","input":`...)
			dst = append(dst, a.args...)
			dst = append(dst, '}')
		}
	} else {
		dst = append(dst, `{"type":"text","text":"`...)
		dst = appendFiller(dst, 0, a.contentLen())
		dst = append(dst, `"}`...)
	}
	dst = append(dst, `],"stop_reason":"`...)
	dst = append(dst, a.stopReason()...)
	dst = append(dst, `","stop_sequence":null,"usage":`...)
	dst = a.appendUsage(dst, a.outputTokens())
	return append(dst, '}')
}

func (a *messagesAnswer) events() int {
	if a.k.EmptyStream {
		return 0
	}
	return a.outputTokens()
}

// writeStart writes message_start and, for a text answer, opens the text block.
func (a *messagesAnswer) writeStart(w *bufio.Writer) {
	if a.k.EmptyStream {
		return
	}
	d := a.appendMessageHead(a.scratch[:0])
	d = append(d, `[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	d = a.appendUsage(d, min(1, a.outputTokens())) // a placeholder, as Anthropic sends
	d = append(d, "}}\n\n"...)
	a.scratch = d
	w.Write(strAnthropicMessageStartOpen)
	w.Write(d)
	if a.toolCalls == 0 {
		_ = w.Flush()
		w.Write(strAnthropicTextBlockStart)
		_ = w.Flush()
		w.Write(strAnthropicPing)
	}
}

func (a *messagesAnswer) writeEvent(w *bufio.Writer, i int) {
	if a.toolCalls == 0 {
		// Fast path - a text delta.
		w.Write(strAnthropicTextDeltaOpen)
		writeFiller(w, i*a.k.ChunkSize, a.k.ChunkSize)
		w.Write(strAnthropicTextDeltaClose)
		return
	}
	c, j := a.toolEvent(i)
	if j > 0 {
		a.writeInputJSONDelta(w, c, a.argFragment(j-1))
		return
	}
	// A call's header: close the previous block, open a tool_use block, send the empty
	// input_json_delta Anthropic starts with, and after the first one a ping.
	if c > 0 {
		a.writeBlockStop(w, c-1)
		_ = w.Flush()
	}
	d := append(a.scratch[:0], `{"type":"content_block_start","index":`...)
	d = appendInt(d, c)
	d = append(d, `,"content_block":{"type":"tool_use","id":"`...)
	d = a.appendToolUseID(d, c)
	d = append(d, `","name":"`...)
	d = a.appendToolName(d, c)
	d = append(d, `","input":{}}}`...)
	a.scratch = d
	writeNamedEvent(w, "content_block_start", d)
	_ = w.Flush()
	a.writeInputJSONDelta(w, c, nil)
	if c == 0 {
		_ = w.Flush()
		w.Write(strAnthropicPing)
	}
}

func (a *messagesAnswer) writeInputJSONDelta(w *bufio.Writer, c int, fragment []byte) {
	d := append(a.scratch[:0], `{"type":"content_block_delta","index":`...)
	d = appendInt(d, c)
	d = append(d, `,"delta":{"type":"input_json_delta","partial_json":`...)
	d = rawjson.AppendQuoteBytes(d, fragment)
	d = append(d, "}}"...)
	a.scratch = d
	writeNamedEvent(w, "content_block_delta", d)
}

func (a *messagesAnswer) writeBlockStop(w *bufio.Writer, index int) {
	d := append(a.scratch[:0], `{"type":"content_block_stop","index":`...)
	d = appendInt(d, index)
	d = append(d, '}')
	a.scratch = d
	writeNamedEvent(w, "content_block_stop", d)
}

// writeEnd closes the open block, then sends message_delta and message_stop.
func (a *messagesAnswer) writeEnd(w *bufio.Writer) {
	if a.k.EmptyStream {
		return
	}
	if a.toolCalls > 0 {
		a.writeBlockStop(w, a.toolCalls-1)
	} else {
		a.writeBlockStop(w, 0)
	}
	_ = w.Flush()
	d := append(a.scratch[:0], `{"type":"message_delta","delta":{"stop_reason":"`...)
	d = append(d, a.stopReason()...)
	d = append(d, `","stop_sequence":null},"usage":`...)
	d = a.appendUsage(d, a.outputTokens())
	d = append(d, '}')
	a.scratch = d
	writeNamedEvent(w, "message_delta", d)
	if !a.k.NoDone {
		_ = w.Flush()
		w.Write(strAnthropicMessageStop)
	}
}

func (a *messagesAnswer) writeStreamError(w *bufio.Writer) { w.Write(strAnthropicStreamError) }

// appendAnthropicError renders {"type":"error","error":{"type","message"}} with the error
// type Anthropic uses for status (protocols.md §3.5).
func appendAnthropicError(dst []byte, status int, message string) []byte {
	dst = append(dst, `{"type":"error","error":{"type":"`...)
	dst = append(dst, anthropicErrorType(status)...)
	dst = append(dst, `","message":`...)
	dst = rawjson.AppendQuote(dst, message)
	return append(dst, "}}"...)
}

func anthropicErrorType(status int) string {
	switch status {
	case fasthttp.StatusBadRequest:
		return "invalid_request_error"
	case fasthttp.StatusUnauthorized:
		return "authentication_error"
	case fasthttp.StatusPaymentRequired:
		return "billing_error"
	case fasthttp.StatusForbidden:
		return "permission_error"
	case fasthttp.StatusNotFound:
		return "not_found_error"
	case fasthttp.StatusRequestEntityTooLarge:
		return "request_too_large"
	case fasthttp.StatusTooManyRequests:
		return "rate_limit_error"
	case fasthttp.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error" // Anthropic's type for the other 4xx
}
