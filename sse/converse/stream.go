package converse

import (
	"bytes"
	"strconv"
	"sync"

	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// ToChatStream turns ConverseStream events (protocols.md §5.4; name is the
// `:event-type`, or the `:exception-type` of an exception, data the JSON
// payload) into chat completion chunks: a chat caller in front of Bedrock.
//
// Output, as `data: {...}` frames that all carry one generated id
// (chatcmpl-gw…), created and model (the alias given to Reset):
//
//   - messageStart → a chunk with delta {role: assistant, content: ""};
//   - contentBlockDelta text → delta.content; reasoningContent.text →
//     delta.reasoning_content; a toolUse block start → tool_calls [{index,
//     id, type: function, function: {name, arguments: ""}}], index counting
//     tool blocks from 0; toolUse.input → tool_calls [{index, function:
//     {arguments}}]; a tool block that stops without input gets "{}";
//   - messageStop → the finish chunk (delta {}, finish_reason);
//   - metadata → the usage chunk (choices [], usage);
//   - End → the finish and usage chunks if they did not come, then
//     `data: [DONE]`.
//
// An exception (a name ending in "Exception", or "error" for unmodeled
// errors) produces the chat error frame `data: {"error":{message, type,
// param, code}}` and ends the stream: End appends nothing, Err reports it
// and ErrStatus gives its HTTP status. A reasoning signature becomes
// delta.thinking_blocks [{type: thinking, thinking: "", signature}] and
// redacted reasoning delta.thinking_blocks [{type: redacted_thinking,
// data}] (msgconv's forms); text that follows another kind of block is
// preceded by a content delta msgconv.BlockSeparator. Citations and
// unknown events produce nothing.
//
// After warm-up, events do not allocate. Not safe for concurrent use.
type ToChatStream struct {
	noCopy noCopy //nolint:unused

	model  []byte // quoted alias
	prefix []byte // `data: {"id":…,"model":…,"choices":[`
	tmp    []byte

	vals [7][]byte
	sub  [4][]byte

	blocks   []block
	nextTool int

	usage     transcode.Usage
	usageSeen bool

	begun, started, finishSent, usageSent, ended bool
	hadText, textBreak                           bool // BlockSeparator before text that follows another kind of block

	err *StreamError
}

// block is one upstream tool content block.
type block struct {
	index int64
	tool  int
	args  bool
}

const maxBlocks = 4096

// StreamError is an exception the upstream reported in-band.
type StreamError struct {
	Type    string // the exception type
	Status  int    // the HTTP status it stands for
	Code    string // transcode.Code*
	Message string
}

func (e *StreamError) Error() string {
	return "converse: upstream stream failed: " + e.Type + ": " + e.Message
}

var _ transcode.Stream = (*ToChatStream)(nil)

var streamPool sync.Pool

// AcquireToChatStream returns a pooled stream reset for model (the alias).
func AcquireToChatStream(model []byte) *ToChatStream {
	s, _ := streamPool.Get().(*ToChatStream)
	if s == nil {
		s = new(ToChatStream)
	}
	s.Reset(model)
	return s
}

// ReleaseToChatStream returns s to the pool.
func ReleaseToChatStream(s *ToChatStream) {
	s.Reset(nil)
	s.model, s.prefix, s.tmp = keep(s.model), keep(s.prefix), keep(s.tmp)
	if cap(s.blocks) > 64 {
		s.blocks = nil
	}
	streamPool.Put(s)
}

// Reset starts a new stream whose chunks carry model.
func (s *ToChatStream) Reset(model []byte) {
	s.tmp = append(s.tmp[:0], model...)
	s.model = rawjson.AppendQuoteBytes(s.model[:0], s.tmp)
	s.prefix = s.prefix[:0]
	clear(s.vals[:])
	clear(s.sub[:])
	s.blocks = s.blocks[:0]
	s.nextTool = 0
	s.usage, s.usageSeen = transcode.Usage{}, false
	s.begun, s.started, s.finishSent, s.usageSent, s.ended = false, false, false, false, false
	s.hadText, s.textBreak = false, false
	s.err = nil
}

// Started reports whether content, reasoning or a tool call was produced.
func (s *ToChatStream) Started() bool { return s.started }

// Usage returns the usage seen so far in chat terms.
func (s *ToChatStream) Usage() (transcode.Usage, bool) { return s.usage, s.usageSeen }

// Err returns the exception the upstream reported in-band, or nil.
func (s *ToChatStream) Err() error {
	if s.err == nil {
		return nil
	}
	return s.err
}

// ErrStatus is the HTTP status of the in-band exception (0 without one):
// the edge answers it when the exception comes before the commit point.
func (s *ToChatStream) ErrStatus() int {
	if s.err == nil {
		return 0
	}
	return s.err.Status
}

// The payload members read, and their slots in vals.
const (
	kIndex = iota
	kDelta
	kStart
	kStop
	kUsage
	kMessage
	kCode
)

func slot(name []byte) int {
	switch string(name) {
	case "contentBlockIndex":
		return kIndex
	case "delta":
		return kDelta
	case "start":
		return kStart
	case "stopReason":
		return kStop
	case "usage":
		return kUsage
	case "message", "Message":
		return kMessage
	case "code":
		return kCode
	}
	return -1
}

// Event handles one ConverseStream event.
func (s *ToChatStream) Event(dst, name, data []byte) ([]byte, error) {
	if s.ended {
		return dst, nil
	}
	if err := scanKeys(data, s.vals[:], slot); err != nil {
		if len(bytes.TrimSpace(data)) == 0 && !isException(name) {
			return dst, nil
		}
		if !isException(name) {
			return dst, ErrMalformedEvent
		}
	}
	switch string(name) {
	case "contentBlockDelta":
		return s.blockDelta(dst), nil
	case "contentBlockStart":
		return s.blockStart(dst), nil
	case "contentBlockStop":
		return s.blockStop(dst), nil
	case "messageStart":
		return s.begin(dst), nil
	case "messageStop":
		return s.messageStop(dst), nil
	case "metadata":
		s.readUsage(s.vals[kUsage])
		return s.appendUsageChunk(s.begin(dst)), nil
	}
	if isException(name) {
		return s.exception(dst, name), nil
	}
	return dst, nil
}

// isException reports an exception's (or an unmodeled error's) name.
func isException(name []byte) bool {
	return bytes.HasSuffix(name, strException) || bytes.HasSuffix(name, strExceptionUpper) || string(name) == "error"
}

var (
	strException      = []byte("Exception")
	strExceptionUpper = []byte("exception")
)

func (s *ToChatStream) begin(dst []byte) []byte {
	if s.begun {
		return dst
	}
	p := append(s.prefix[:0], `{"id":"`...)
	p = appendID(p)
	p = append(p, `","object":"chat.completion.chunk","created":`...)
	p = strconv.AppendInt(p, nowUnix(), 10)
	p = append(p, `,"model":`...)
	p = append(p, s.model...)
	p = append(p, `,"choices":[`...)
	s.prefix = p
	s.begun = true
	dst = s.chunk(dst)
	return append(dst, `{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n"...)
}

func (s *ToChatStream) chunk(dst []byte) []byte {
	dst = append(dst, "data: "...)
	return append(dst, s.prefix...)
}

// deltaSlot maps the members of a contentBlockDelta's delta.
func deltaSlot(name []byte) int {
	switch string(name) {
	case "text":
		return 0
	case "toolUse":
		return 1
	case "reasoningContent":
		return 2
	}
	return -1
}

func (s *ToChatStream) blockDelta(dst []byte) []byte {
	if scanKeys(s.vals[kDelta], s.sub[:3], deltaSlot) != nil {
		return dst
	}
	if s.sub[0] == nil && s.hadText {
		s.textBreak = true // text that comes next starts a new paragraph
	}
	switch {
	case isNonEmptyStr(s.sub[0]):
		dst = s.begin(dst)
		if s.textBreak {
			dst = s.appendDelta(dst, `"content":`, strBlockSeparatorLit)
			s.textBreak = false
		}
		s.hadText = true
		return s.appendDelta(dst, `"content":`, s.sub[0])
	case s.sub[1] != nil:
		in, _, _ := rawjson.Get(s.sub[1], "input")
		if !isNonEmptyStr(in) {
			return dst
		}
		idx, ok := rawjson.ParseInt(s.vals[kIndex])
		if !ok {
			return dst
		}
		b := s.block(idx)
		if b == nil {
			// A toolUse delta whose block never started: give it a call
			// so the arguments are not lost.
			b = s.addBlock(idx)
			if b == nil {
				return dst
			}
			dst = s.appendToolStart(s.begin(dst), b.tool, nil, nil)
		}
		b.args = true
		return s.appendArgs(s.begin(dst), b.tool, in)
	case s.sub[2] != nil:
		var r [3][]byte // text, signature, redactedContent
		if rawjson.ScanTop(s.sub[2], reasoningDeltaKeys, r[:]) != nil {
			return dst
		}
		switch {
		case isNonEmptyStr(r[0]):
			return s.appendDelta(s.begin(dst), `"reasoning_content":`, r[0])
		case isNonEmptyStr(r[1]):
			// The signature closes the reasoning block: the caller gets it
			// as msgconv gives an Anthropic signature_delta, and sends it
			// back in thinking_blocks on its next turn.
			return s.appendThinkingBlock(s.begin(dst), strSignedBlockOpen, r[1])
		case isNonEmptyStr(r[2]):
			return s.appendThinkingBlock(s.begin(dst), strRedactedOpen, r[2])
		}
	}
	return dst // citation, empty deltas
}

var (
	reasoningDeltaKeys   = []string{"text", "signature", "redactedContent"}
	strSignedBlockOpen   = []byte(`{"type":"thinking","thinking":"","signature":`)
	strBlockSeparatorLit = []byte(`"` + "\\n\\n" + `"`)
)

// appendThinkingBlock appends a chunk whose delta carries one thinking
// block: open (the block up to its one string member) then val.
func (s *ToChatStream) appendThinkingBlock(dst, open, val []byte) []byte {
	n := len(dst)
	dst = s.chunk(dst)
	dst = append(dst, `{"index":0,"delta":{"thinking_blocks":[`...)
	dst = append(dst, open...)
	var ok bool
	if dst, ok = appendStr(dst, val, &s.tmp); !ok {
		return dst[:n]
	}
	s.started = true
	return append(dst, `}]},"finish_reason":null}]}`+"\n\n"...)
}

func (s *ToChatStream) blockStart(dst []byte) []byte {
	dst = s.begin(dst)
	idx, ok := rawjson.ParseInt(s.vals[kIndex])
	if !ok {
		return dst
	}
	tu, kind, ok := rawjson.Get(s.vals[kStart], "toolUse")
	if !ok || kind != rawjson.Object {
		return dst // toolResult / image starts have no chat form
	}
	var v [2][]byte
	if rawjson.ScanTop(tu, toolStartKeys, v[:]) != nil {
		return dst
	}
	if s.hadText {
		s.textBreak = true // a tool block after text: the next text is a new paragraph
	}
	b := s.addBlock(idx)
	if b == nil {
		return dst
	}
	return s.appendToolStart(dst, b.tool, v[0], v[1])
}

var toolStartKeys = []string{"toolUseId", "name"}

func (s *ToChatStream) blockStop(dst []byte) []byte {
	idx, ok := rawjson.ParseInt(s.vals[kIndex])
	if !ok {
		return dst
	}
	if b := s.block(idx); b != nil && !b.args {
		b.args = true
		return s.appendArgs(s.begin(dst), b.tool, strEmptyObjectLit)
	}
	return dst
}

var strEmptyObjectLit = []byte(`"{}"`)

// addBlock registers tool block idx with the next tool index; nil once the
// table is full.
func (s *ToChatStream) addBlock(idx int64) *block {
	if b := s.block(idx); b != nil {
		return b
	}
	if len(s.blocks) >= maxBlocks {
		return nil
	}
	s.blocks = append(s.blocks, block{index: idx, tool: s.nextTool})
	s.nextTool++
	return &s.blocks[len(s.blocks)-1]
}

func (s *ToChatStream) block(idx int64) *block {
	for i := len(s.blocks) - 1; i >= 0; i-- {
		if s.blocks[i].index == idx {
			return &s.blocks[i]
		}
	}
	return nil
}

func (s *ToChatStream) messageStop(dst []byte) []byte {
	dst = s.begin(dst)
	if s.finishSent {
		return dst
	}
	reason := "stop"
	if r := s.vals[kStop]; rawjson.KindOf(r) == rawjson.String {
		if w, ok := inner(r); ok {
			reason = FinishReason(w)
		}
	}
	if reason == "stop" && s.nextTool > 0 {
		reason = "tool_calls"
	}
	return s.appendFinishChunk(dst, reason)
}

func (s *ToChatStream) appendFinishChunk(dst []byte, reason string) []byte {
	s.finishSent = true
	dst = s.chunk(dst)
	dst = append(dst, `{"index":0,"delta":{},"finish_reason":"`...)
	dst = append(dst, reason...)
	return append(dst, `"}]}`+"\n\n"...)
}

// readUsage folds a Converse usage object into the totals.
func (s *ToChatStream) readUsage(u []byte) {
	if readUsage(u, &s.usage) {
		s.usageSeen = true
	}
}

var usageKeys = []string{"inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens"}

// readUsage converts a Converse usage object to chat terms.
func readUsage(raw []byte, u *transcode.Usage) bool {
	var v [4][]byte
	if rawjson.KindOf(raw) != rawjson.Object || rawjson.ScanTop(raw, usageKeys, v[:]) != nil {
		return false
	}
	in, ok1 := parseCount(v[0])
	out, ok2 := parseCount(v[1])
	read, _ := parseCount(v[2])
	write, _ := parseCount(v[3])
	if !ok1 && !ok2 {
		return false
	}
	u.Prompt = in + read + write
	u.Completion = out
	u.Cached = read
	u.CacheCreation = write
	u.Total = u.Prompt + u.Completion
	return true
}

func (s *ToChatStream) appendUsageChunk(dst []byte) []byte {
	if s.usageSent {
		return dst
	}
	if !s.finishSent {
		dst = s.appendFinishChunk(dst, s.defaultReason())
	}
	s.usageSent = true
	dst = s.chunk(dst)
	dst = append(dst, `],"usage":`...)
	dst = appendChatUsage(dst, &s.usage)
	return append(dst, "}\n\n"...)
}

func (s *ToChatStream) defaultReason() string {
	if s.nextTool > 0 {
		return "tool_calls"
	}
	return "stop"
}

// appendDelta appends a chunk whose delta has the one member key (quoted,
// with its colon) set to the string literal val.
func (s *ToChatStream) appendDelta(dst []byte, key string, val []byte) []byte {
	n := len(dst)
	dst = s.chunk(dst)
	dst = append(dst, `{"index":0,"delta":{`...)
	dst = append(dst, key...)
	var ok bool
	if dst, ok = appendStr(dst, val, &s.tmp); !ok {
		return dst[:n]
	}
	s.started = true
	return append(dst, `},"finish_reason":null}]}`+"\n\n"...)
}

func (s *ToChatStream) appendToolStart(dst []byte, tool int, id, name []byte) []byte {
	s.started = true
	dst = s.chunk(dst)
	dst = append(dst, `{"index":0,"delta":{"tool_calls":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(tool), 10)
	dst = append(dst, `,"id":`...)
	var ok bool
	if dst, ok = appendStr(dst, id, &s.tmp); !ok {
		dst = append(dst, `"call_gw`...)
		dst = strconv.AppendInt(dst, int64(tool), 10)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"type":"function","function":{"name":`...)
	if dst, ok = appendStr(dst, name, &s.tmp); !ok {
		dst = append(dst, `""`...)
	}
	return append(dst, `,"arguments":""}}]},"finish_reason":null}]}`+"\n\n"...)
}

func (s *ToChatStream) appendArgs(dst []byte, tool int, frag []byte) []byte {
	n := len(dst)
	dst = s.chunk(dst)
	dst = append(dst, `{"index":0,"delta":{"tool_calls":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(tool), 10)
	dst = append(dst, `,"function":{"arguments":`...)
	var ok bool
	if dst, ok = appendStr(dst, frag, &s.tmp); !ok {
		return dst[:n]
	}
	s.started = true
	return append(dst, `}}]},"finish_reason":null}]}`+"\n\n"...)
}

// exception handles an exception event: the chat error frame, and the end.
func (s *ToChatStream) exception(dst, name []byte) []byte {
	typ := name
	if string(name) == "error" {
		typ, _ = inner(s.vals[kCode])
	}
	status, fcode := ExceptionStatus(typ)
	msg := s.tmp[:0]
	if m := s.vals[kMessage]; rawjson.KindOf(m) == rawjson.String {
		msg, _ = rawjson.AppendUnquote(msg, m)
	}
	if len(msg) == 0 {
		msg = append(msg, "the upstream stream failed"...)
	}
	s.tmp = msg
	s.err = &StreamError{Type: string(typ), Status: status, Code: fcode, Message: string(msg)}
	return s.appendError(dst, chatErrorType(fcode), fcode, msg)
}

func (s *ToChatStream) appendError(dst []byte, typ, code string, msg []byte) []byte {
	s.ended = true
	dst = append(dst, `data: {"error":{"message":`...)
	dst = rawjson.AppendQuoteBytes(dst, msg)
	dst = append(dst, `,"type":`...)
	dst = rawjson.AppendQuote(dst, typ)
	dst = append(dst, `,"param":null,"code":`...)
	dst = rawjson.AppendQuote(dst, code)
	return append(dst, "}}\n\n"...)
}

// End appends the finish and usage chunks if they did not come, then
// `data: [DONE]`; after an exception it appends nothing.
func (s *ToChatStream) End(dst []byte) []byte {
	if s.ended {
		return dst
	}
	dst = s.begin(dst)
	dst = s.appendUsageChunk(dst)
	s.ended = true
	return append(dst, "data: [DONE]\n\n"...)
}

// Fail appends the chat error frame for a failure after the commit point.
func (s *ToChatStream) Fail(dst []byte, code, message string) []byte {
	if s.ended {
		return dst
	}
	s.tmp = append(s.tmp[:0], message...)
	return s.appendError(dst, chatErrorType(code), code, s.tmp)
}
