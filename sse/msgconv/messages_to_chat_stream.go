package msgconv

import (
	"strconv"
	"sync"

	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// MessagesToChatStream turns an Anthropic messages stream into chat
// completion chunks (protocols.md §4.9 A): a chat caller in front of an
// Anthropic upstream.
//
// Output, as `data: {...}` frames that all carry the same id
// (chatcmpl-<msg id>), created and model (the alias given to Reset):
//
//   - message_start → a chunk with delta {role: assistant, content: ""};
//   - text_delta → delta.content; thinking_delta → delta.reasoning_content;
//     a text block that follows another kind of block after earlier text
//     (text, tool use, text; text, web search, text) starts with "\n\n"
//     (BlockSeparator); text blocks that follow each other directly are
//     one passage split at citations and are joined as they are;
//   - signature_delta → delta.thinking_blocks [{type: thinking, thinking:
//     "", signature}] and a redacted_thinking block → delta.thinking_blocks
//     [{type: redacted_thinking, data}] (LiteLLM's shape: the text came as
//     reasoning_content; a caller sends the block back on its next turn
//     with the text filled in, or empty and the message's
//     reasoning_content is used — see ChatRequestToMessages);
//   - a tool_use block start → tool_calls [{index, id, type: function,
//     function: {name, arguments: ""}}], index counting tool blocks from 0;
//     input_json_delta → tool_calls [{index, function: {arguments}}]; a
//     tool block that ends without argument text gets arguments "{}";
//   - message_delta → the finish chunk (delta {}, finish_reason);
//   - message_stop → the usage chunk (choices [], usage), always sent;
//   - End → `data: [DONE]` (after the finish and usage chunks if the
//     upstream never sent them).
//
// ping, citations_delta, server-side blocks and unknown
// events produce nothing. An upstream `error` event produces the chat error
// frame `data: {"error":{message, type, param, code}}` and ends the stream:
// no [DONE] follows, End and Fail append nothing, and Err reports it.
//
// The zero value is ready after Reset. A MessagesToChatStream must not be
// used from several goroutines at once. After warm-up, events do not
// allocate.
type MessagesToChatStream struct {
	noCopy noCopy //nolint:unused

	model  []byte // quoted alias
	prefix []byte // `data: {"id":…,"model":…,"choices":[`
	tmp    []byte
	tmp2   []byte

	vals [7][]byte
	sub  [7][]byte

	blocks   []m2cBlock
	nextTool int

	finish string // mapped finish reason once message_delta came

	usage     transcode.Usage
	in, read  int64 // input and cache-read tokens
	create    int64 // cache-creation tokens
	usageSeen bool

	textSeen   bool // a text block was opened
	textBreak  bool // another kind of block followed it: the next text starts a paragraph
	begun      bool // the role chunk went out
	started    bool
	finishSent bool
	usageSent  bool
	ended      bool
	err        *UpstreamError
}

// m2cBlock is one upstream content block.
type m2cBlock struct {
	index int64
	kind  uint8
	tool  int  // tool-call index, for blockTool
	args  bool // argument text was sent
}

const (
	blockNone uint8 = iota
	blockText
	blockThinking
	blockTool
	blockOther    // server tools, results, redacted thinking: no chat form
	blockRedacted // ChatToMessagesStream: a redacted_thinking block
)

// maxBlocks bounds the block table; later blocks are ignored.
const maxBlocks = 4096

var _ transcode.Stream = (*MessagesToChatStream)(nil)

// NewMessagesToChatStream returns a new, unpooled stream; call Reset before
// use. Prefer AcquireMessagesToChatStream on hot paths.
func NewMessagesToChatStream() transcode.Stream { return new(MessagesToChatStream) }

var m2cPool sync.Pool

// AcquireMessagesToChatStream returns a pooled stream reset for model.
// Return it with ReleaseMessagesToChatStream.
func AcquireMessagesToChatStream(model []byte) *MessagesToChatStream {
	s, _ := m2cPool.Get().(*MessagesToChatStream)
	if s == nil {
		s = new(MessagesToChatStream)
	}
	s.Reset(model)
	return s
}

// ReleaseMessagesToChatStream returns s to the pool; s must not be used
// after this call.
func ReleaseMessagesToChatStream(s *MessagesToChatStream) {
	s.Reset(nil)
	s.model, s.prefix, s.tmp, s.tmp2 = keep(s.model), keep(s.prefix), keep(s.tmp), keep(s.tmp2)
	if cap(s.blocks) > maxBlocks {
		s.blocks = nil
	}
	m2cPool.Put(s)
}

// Reset starts a new stream whose chunks carry model.
func (s *MessagesToChatStream) Reset(model []byte) {
	s.model = appendQuoted(s.model[:0], model, &s.tmp)
	s.prefix = s.prefix[:0]
	clear(s.vals[:])
	clear(s.sub[:])
	s.blocks = s.blocks[:0]
	s.nextTool = 0
	s.finish = ""
	s.usage = transcode.Usage{}
	s.in, s.read, s.create = 0, 0, 0
	s.usageSeen = false
	s.textSeen, s.textBreak = false, false
	s.begun, s.started, s.finishSent, s.usageSent, s.ended = false, false, false, false, false
	s.err = nil
}

// Started reports whether content, reasoning or a tool call has been
// produced. The role, finish and usage chunks do not count: a stream that
// ends without content stays uncommitted (the edge answers 502).
func (s *MessagesToChatStream) Started() bool { return s.started }

// Usage returns the usage seen so far in chat terms.
func (s *MessagesToChatStream) Usage() (transcode.Usage, bool) { return s.usage, s.usageSeen }

// Err returns the error the upstream reported in-band, or nil. Its error
// frame has been appended already.
func (s *MessagesToChatStream) Err() error {
	if s.err == nil {
		return nil
	}
	return s.err
}

// The members read from every event, and their slots in vals.
const (
	mkType = iota
	mkIndex
	mkDelta
	mkBlock
	mkMessage
	mkUsage
	mkError
)

func m2cSlot(name []byte) int {
	switch string(name) {
	case "type":
		return mkType
	case "index":
		return mkIndex
	case "delta":
		return mkDelta
	case "content_block":
		return mkBlock
	case "message":
		return mkMessage
	case "usage":
		return mkUsage
	case "error":
		return mkError
	}
	return -1
}

// Event handles one Anthropic event. name is the SSE event name; the JSON
// type wins when both are present, so unframed events (name empty) work.
func (s *MessagesToChatStream) Event(dst, name, data []byte) ([]byte, error) {
	if s.ended {
		return dst, nil
	}
	if err := scanKeys(data, s.vals[:], m2cSlot); err != nil {
		if len(trimWS(data)) == 0 {
			return dst, nil // an event without data (e.g. a bare ping)
		}
		return dst, ErrMalformedEvent
	}
	typ := name
	if t := word(s.vals[mkType], &s.tmp); t != nil {
		typ = t
	}
	switch string(typ) {
	case "content_block_delta":
		return s.blockDelta(dst), nil
	case "content_block_start":
		return s.blockStart(dst), nil
	case "content_block_stop":
		return s.blockStop(dst), nil
	case "message_start":
		return s.messageStart(dst), nil
	case "message_delta":
		return s.messageDelta(dst), nil
	case "message_stop":
		return s.appendUsageChunk(s.begin(dst)), nil
	case "error":
		return s.upstreamError(dst), nil
	}
	return dst, nil // ping and unknown events
}

var m2cMessageKeys = []string{"id", "usage"}

func (s *MessagesToChatStream) messageStart(dst []byte) []byte {
	msg := s.vals[mkMessage]
	if rawjson.ScanTop(msg, m2cMessageKeys, s.sub[:]) != nil {
		return s.begin(dst)
	}
	s.readUsage(s.sub[1])
	if s.begun {
		return dst
	}
	s.buildPrefix(s.sub[0])
	return s.appendRoleChunk(dst)
}

// begin makes sure the role chunk went out (a stream whose message_start was
// lost still gets one, with a generated id).
func (s *MessagesToChatStream) begin(dst []byte) []byte {
	if s.begun {
		return dst
	}
	s.buildPrefix(nil)
	return s.appendRoleChunk(dst)
}

// buildPrefix builds everything a chunk carries before its choices.
func (s *MessagesToChatStream) buildPrefix(id []byte) {
	p := append(s.prefix[:0], `{"id":`...)
	t := append(s.tmp2[:0], "chatcmpl-"...)
	n := len(t)
	if rawjson.KindOf(id) == rawjson.String {
		if u, err := rawjson.AppendUnquote(t, id); err == nil {
			t = u
		}
	}
	if len(t) == n {
		t = append(t, "msg_"...)
		t = appendFallbackID(t)
	}
	s.tmp2 = t
	p = rawjson.AppendQuoteBytes(p, t)
	p = append(p, `,"object":"chat.completion.chunk","created":`...)
	p = strconv.AppendInt(p, nowUnix(), 10)
	p = append(p, `,"model":`...)
	p = append(p, s.model...)
	p = append(p, `,"choices":[`...)
	s.prefix = p
	s.begun = true
}

// chunk opens a chunk frame: `data: ` and the prefix up to `"choices":[`.
func (s *MessagesToChatStream) chunk(dst []byte) []byte {
	dst = append(dst, strDataPrefix...)
	return append(dst, s.prefix...)
}

func (s *MessagesToChatStream) appendRoleChunk(dst []byte) []byte {
	dst = s.chunk(dst)
	return append(dst, `{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n"...)
}

// m2cBlockSlot maps the members of a content_block.
func m2cBlockSlot(name []byte) int {
	switch string(name) {
	case "type":
		return 0
	case "id":
		return 1
	case "name":
		return 2
	case "input":
		return 3
	case "text":
		return 4
	case "thinking":
		return 5
	case "data":
		return 6
	}
	return -1
}

func (s *MessagesToChatStream) blockStart(dst []byte) []byte {
	dst = s.begin(dst)
	idx, ok := rawjson.ParseInt(s.vals[mkIndex])
	if !ok {
		return dst
	}
	if scanKeys(s.vals[mkBlock], s.sub[:], m2cBlockSlot) != nil {
		return dst
	}
	b := s.addBlock(idx)
	if b == nil {
		return dst
	}
	typ := word(s.sub[0], &s.tmp)
	if string(typ) == "text" {
		if s.textBreak {
			dst = s.appendDelta(dst, strContentKey, strBlockSeparator)
		}
		s.textSeen, s.textBreak = true, false
	} else if s.textSeen {
		s.textBreak = true
	}
	switch string(typ) {
	case "text":
		b.kind = blockText
		if isNonEmptyStr(s.sub[4]) {
			dst = s.appendDelta(dst, strContentKey, s.sub[4])
		}
	case "thinking":
		b.kind = blockThinking
		if isNonEmptyStr(s.sub[5]) {
			dst = s.appendDelta(dst, strReasoningKey, s.sub[5])
		}
	case "redacted_thinking":
		b.kind = blockOther
		if rawjson.KindOf(s.sub[6]) == rawjson.String {
			dst = s.appendThinkingBlock(dst, strRedactedBlockOpen, s.sub[6])
		}
	case "tool_use":
		b.kind = blockTool
		b.tool = s.nextTool
		s.nextTool++
		dst = s.appendToolStart(dst, b.tool, s.sub[1], s.sub[2])
		// The input is always {} in a real stream; a relay that sends the
		// whole input here gets it as the arguments.
		if in := s.sub[3]; rawjson.KindOf(in) == rawjson.Object && !isEmptyObject(in) {
			s.tmp = rawjson.AppendQuoteBytes(s.tmp[:0], in)
			dst = s.appendArgs(dst, b.tool, s.tmp)
			b.args = true
		}
	default:
		b.kind = blockOther
	}
	return dst
}

// addBlock registers upstream block idx (replacing a previous one with the
// same index) and returns it; nil once the table is full.
func (s *MessagesToChatStream) addBlock(idx int64) *m2cBlock {
	if b := s.block(idx); b != nil {
		*b = m2cBlock{index: idx}
		return b
	}
	if len(s.blocks) >= maxBlocks {
		return nil
	}
	s.blocks = append(s.blocks, m2cBlock{index: idx})
	return &s.blocks[len(s.blocks)-1]
}

// block finds upstream block idx, newest first (one block is open at a
// time, so this is the last one in practice).
func (s *MessagesToChatStream) block(idx int64) *m2cBlock {
	for i := len(s.blocks) - 1; i >= 0; i-- {
		if s.blocks[i].index == idx {
			return &s.blocks[i]
		}
	}
	return nil
}

// m2cDeltaSlot maps the members of a delta (block or message).
func m2cDeltaSlot(name []byte) int {
	switch string(name) {
	case "type":
		return 0
	case "text":
		return 1
	case "partial_json":
		return 2
	case "thinking":
		return 3
	case "stop_reason":
		return 4
	case "signature":
		return 5
	}
	return -1
}

func (s *MessagesToChatStream) blockDelta(dst []byte) []byte {
	if scanKeys(s.vals[mkDelta], s.sub[:6], m2cDeltaSlot) != nil {
		return dst
	}
	switch string(word(s.sub[0], &s.tmp)) {
	case "text_delta":
		if isNonEmptyStr(s.sub[1]) {
			return s.appendDelta(s.begin(dst), strContentKey, s.sub[1])
		}
	case "thinking_delta":
		if isNonEmptyStr(s.sub[3]) {
			return s.appendDelta(s.begin(dst), strReasoningKey, s.sub[3])
		}
	case "signature_delta":
		if isNonEmptyStr(s.sub[5]) {
			return s.appendThinkingBlock(s.begin(dst), strSignedBlockOpen, s.sub[5])
		}
	case "input_json_delta":
		idx, ok := rawjson.ParseInt(s.vals[mkIndex])
		if !ok || !isNonEmptyStr(s.sub[2]) {
			return dst
		}
		if b := s.block(idx); b != nil && b.kind == blockTool {
			b.args = true
			return s.appendArgs(s.begin(dst), b.tool, s.sub[2])
		}
	}
	return dst // citations_delta, empty deltas
}

func (s *MessagesToChatStream) blockStop(dst []byte) []byte {
	idx, ok := rawjson.ParseInt(s.vals[mkIndex])
	if !ok {
		return dst
	}
	if b := s.block(idx); b != nil && b.kind == blockTool && !b.args {
		// A tool without arguments still has a JSON object for them.
		b.args = true
		return s.appendArgs(s.begin(dst), b.tool, strEmptyObjectLit)
	}
	return dst
}

func (s *MessagesToChatStream) messageDelta(dst []byte) []byte {
	dst = s.begin(dst)
	s.readUsage(s.vals[mkUsage])
	if s.finishSent {
		return dst
	}
	reason := "stop"
	if scanKeys(s.vals[mkDelta], s.sub[:5], m2cDeltaSlot) == nil {
		if r := word(s.sub[4], &s.tmp); r != nil {
			reason = FinishReason(r)
		}
	}
	s.finish = reason
	return s.appendFinishChunk(dst)
}

func (s *MessagesToChatStream) appendFinishChunk(dst []byte) []byte {
	s.finishSent = true
	dst = s.chunk(dst)
	dst = append(dst, `{"index":0,"delta":{},"finish_reason":"`...)
	dst = append(dst, s.finish...)
	return append(dst, `"}]}`+"\n\n"...)
}

var usageKeys = []string{"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens_details"}

// readUsage folds an Anthropic usage object (cumulative values) into the
// totals.
func (s *MessagesToChatStream) readUsage(u []byte) {
	var v [5][]byte
	if rawjson.KindOf(u) != rawjson.Object || rawjson.ScanTop(u, usageKeys, v[:]) != nil {
		return
	}
	seen := false
	if n, ok := parseCount(v[0]); ok {
		s.in, seen = n, true
	}
	if n, ok := parseCount(v[1]); ok {
		s.usage.Completion, seen = n, true
	}
	if n, ok := parseCount(v[2]); ok {
		s.read, seen = n, true
	}
	if n, ok := parseCount(v[3]); ok {
		s.create, seen = n, true
	}
	if d, _, ok := rawjson.Get(v[4], "thinking_tokens"); ok {
		if n, ok := parseCount(d); ok {
			s.usage.Reasoning = n
		}
	}
	if !seen {
		return
	}
	s.usageSeen = true
	s.usage.Prompt = s.in + s.read + s.create
	s.usage.Cached = s.read
	s.usage.CacheCreation = s.create
	s.usage.Total = s.usage.Prompt + s.usage.Completion
}

// appendUsageChunk appends the usage chunk (choices [] and the totals) once.
func (s *MessagesToChatStream) appendUsageChunk(dst []byte) []byte {
	if s.usageSent {
		return dst
	}
	s.usageSent = true
	dst = s.chunk(dst)
	dst = append(dst, `],"usage":`...)
	dst = appendChatUsage(dst, &s.usage)
	return append(dst, "}\n\n"...)
}

// appendDelta appends a chunk whose delta has the one member key (quoted,
// with its colon) set to the string literal val.
func (s *MessagesToChatStream) appendDelta(dst, key, val []byte) []byte {
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

// appendThinkingBlock appends a chunk whose delta carries one thinking
// block: open (the block up to its one string member) then val.
func (s *MessagesToChatStream) appendThinkingBlock(dst, open, val []byte) []byte {
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

func (s *MessagesToChatStream) appendToolStart(dst []byte, tool int, id, name []byte) []byte {
	s.started = true
	dst = s.chunk(dst)
	dst = append(dst, `{"index":0,"delta":{"tool_calls":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(tool), 10)
	dst = append(dst, `,"id":`...)
	var ok bool
	if dst, ok = appendStr(dst, id, &s.tmp); !ok {
		dst = append(dst, `""`...)
	}
	dst = append(dst, `,"type":"function","function":{"name":`...)
	if dst, ok = appendStr(dst, name, &s.tmp); !ok {
		dst = append(dst, `""`...)
	}
	return append(dst, `,"arguments":""}}]},"finish_reason":null}]}`+"\n\n"...)
}

// appendArgs appends an argument fragment (a string literal) for a tool.
func (s *MessagesToChatStream) appendArgs(dst []byte, tool int, frag []byte) []byte {
	n := len(dst)
	dst = s.chunk(dst)
	dst = append(dst, `{"index":0,"delta":{"tool_calls":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(tool), 10)
	dst = append(dst, `,"function":{"arguments":`...)
	var ok bool
	if dst, ok = appendStr(dst, frag, &s.tmp2); !ok {
		return dst[:n]
	}
	s.started = true
	return append(dst, `}}]},"finish_reason":null}]}`+"\n\n"...)
}

var errorKeys = []string{"type", "message"}

// upstreamError handles an Anthropic `error` event.
func (s *MessagesToChatStream) upstreamError(dst []byte) []byte {
	var v [2][]byte
	_ = rawjson.ScanTop(s.vals[mkError], errorKeys, v[:])
	typ := word(v[0], &s.tmp)
	msg, _ := rawjson.AppendUnquote(s.tmp2[:0], v[1])
	s.tmp2 = msg
	code := codeForAnthropicError(typ, msg)
	s.err = &UpstreamError{Type: string(typ), Code: code, Message: string(msg)}
	if len(msg) == 0 {
		msg = append(msg, "upstream stream failed"...)
		s.tmp2 = msg
	}
	return s.appendError(dst, chatErrorType(code), code, msg)
}

// appendError appends the chat error frame and ends the stream.
func (s *MessagesToChatStream) appendError(dst []byte, typ, code string, msg []byte) []byte {
	s.ended = true
	dst = append(dst, `data: {"error":{"message":`...)
	dst = rawjson.AppendQuoteBytes(dst, msg)
	dst = append(dst, `,"type":`...)
	dst = rawjson.AppendQuote(dst, typ)
	dst = append(dst, `,"param":null,"code":`...)
	dst = rawjson.AppendQuote(dst, code)
	return append(dst, "}}\n\n"...)
}

// End appends the finish chunk and the usage chunk if the upstream did not
// trigger them, then `data: [DONE]`. After an error frame it appends nothing.
func (s *MessagesToChatStream) End(dst []byte) []byte {
	if s.ended {
		return dst
	}
	dst = s.begin(dst)
	if !s.finishSent {
		s.finish = "stop"
		if s.nextTool > 0 {
			s.finish = "tool_calls"
		}
		dst = s.appendFinishChunk(dst)
	}
	dst = s.appendUsageChunk(dst)
	s.ended = true
	return append(dst, strDoneEvent...)
}

// Fail appends the chat error frame `data: {"error":{message, type, param:
// null, code}}` and no [DONE]. type follows code: rate_limit_error for
// rate_limit_exceeded and slow_down, insufficient_quota, invalid_request_error
// for context_length_exceeded and invalid_prompt, server_error for the other
// transcode codes. A code that is not a transcode.Code* constant is a gateway
// rejection (content_filter, guardrail_unavailable) and gets
// invalid_request_error, as Reject does.
func (s *MessagesToChatStream) Fail(dst []byte, code, message string) []byte {
	if s.ended {
		return dst
	}
	s.tmp2 = append(s.tmp2[:0], message...)
	return s.appendError(dst, chatErrorType(code), code, s.tmp2)
}

// Reject appends a gateway rejection (a streaming guardrail block): the chat
// error frame with type invalid_request_error and the given code.
func (s *MessagesToChatStream) Reject(dst []byte, code, message string) []byte {
	if s.ended {
		return dst
	}
	s.tmp2 = append(s.tmp2[:0], message...)
	return s.appendError(dst, "invalid_request_error", code, s.tmp2)
}
