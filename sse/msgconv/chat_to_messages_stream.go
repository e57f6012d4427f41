package msgconv

import (
	"bytes"
	"strconv"
	"sync"

	"gw/sse"
	"gw/sse/chatchunk"
	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// ChatToMessagesStream turns a chat completions stream into the Anthropic
// messages event sequence (protocols.md §4.9 B): an Anthropic caller in
// front of an OpenAI-compatible upstream. The upstream request should carry
// stream_options.include_usage (MessagesRequestToChat sets it).
//
// Output, as `event: x` + `data: {...}` frames:
//
//   - the first chunk with choices or usage → message_start (id msg_<chat id
//     without chatcmpl->, the model given to Reset, usage placeholders 0);
//     chunks with neither (Azure's prompt_filter_results) produce nothing;
//   - delta.content and delta.refusal → a text block, delta.reasoning_content
//     and delta.reasoning → a thinking block: content_block_start, then a
//     text_delta / thinking_delta per fragment; switching kinds closes the
//     open block (content_block_stop) first, so one block is open at a time;
//   - delta.thinking_blocks (a converted upstream's signed reasoning: an
//     Anthropic signature_delta through MessagesToChatStream, a Converse
//     reasoning signature, see sse/converse) → for a thinking element, its
//     text as thinking_delta (usually empty: the text came as
//     reasoning_content), then signature_delta on the open thinking block
//     (one is opened when none is) and content_block_stop, so a Messages
//     caller gets the block exactly as Anthropic streams it and can send it
//     back on its next turn; a redacted_thinking element → its own block
//     {type: redacted_thinking, data}, started and stopped;
//   - a new delta.tool_calls[j] → a tool_use block {id, name, input: {}}
//     at the next block index, its arguments fragments → input_json_delta.
//     If call j starts while call k's arguments are not yet a complete JSON
//     value (fragments interleaving, legal but not seen in practice), j is
//     buffered and replayed once k completes or the choice finishes;
//   - finish_reason → closes the open block and sets stop_reason;
//   - the usage chunk → recorded;
//   - [DONE], or End when the upstream just ended → message_delta
//     {stop_reason, stop_sequence: null, usage: {input_tokens,
//     cache_creation_input_tokens, cache_read_input_tokens, output_tokens}}
//     and message_stop.
//
// A chunk carrying an `error` object produces an Anthropic `error` event and
// ends the stream (see Err). Choices other than index 0 are ignored.
//
// The zero value is ready after Reset. Not safe for concurrent use. After
// warm-up, events do not allocate.
type ChatToMessagesStream struct {
	noCopy noCopy //nolint:unused

	model []byte // quoted alias
	msgID []byte // quoted id
	tmp   []byte
	tmp2  []byte

	vals [4][]byte
	cv   [3][]byte
	dv   [6][]byte
	tv   [3][]byte
	bv   [4][]byte // one thinking_blocks element
	fv   [2][]byte

	walker chatchunk.Walker
	ck     chatchunk.Chunk
	tc     chatchunk.ToolCall
	noWalk bool // tests: read every chunk and tool call the generic way

	nextBlock int
	openKind  uint8
	openIndex int
	openTool  int // index into tools when openKind is blockTool

	tools []c2mTool
	queue []int // tools waiting for the open tool block to complete

	stop string // mapped stop reason once finish_reason came

	usage     transcode.Usage
	usageSeen bool
	inputEst  int64 // message_start's input_tokens until the upstream reports usage

	begun   bool
	started bool
	ended   bool
	err     *UpstreamError
}

// c2mTool is one chat tool call of the stream.
type c2mTool struct {
	j       int64 // the chat tool_calls index
	state   uint8
	id      []byte // quoted; kept while queued
	name    []byte // quoted; kept while queued
	pending []byte // decoded argument text received while queued
	track   jsonTrack
}

const (
	toolQueued uint8 = iota
	toolOpen
	toolClosed
)

// maxTools bounds the tool table; later calls are ignored.
const maxTools = 1024

var _ transcode.Stream = (*ChatToMessagesStream)(nil)

// NewChatToMessagesStream returns a new, unpooled stream; call Reset before
// use. Prefer AcquireChatToMessagesStream on hot paths.
func NewChatToMessagesStream() transcode.Stream { return new(ChatToMessagesStream) }

var c2mPool sync.Pool

// AcquireChatToMessagesStream returns a pooled stream reset for model.
// Return it with ReleaseChatToMessagesStream.
func AcquireChatToMessagesStream(model []byte) *ChatToMessagesStream {
	s, _ := c2mPool.Get().(*ChatToMessagesStream)
	if s == nil {
		s = new(ChatToMessagesStream)
	}
	s.Reset(model)
	return s
}

// ReleaseChatToMessagesStream returns s to the pool; s must not be used
// after this call.
func ReleaseChatToMessagesStream(s *ChatToMessagesStream) {
	s.Reset(nil)
	s.model, s.msgID, s.tmp, s.tmp2 = keep(s.model), keep(s.msgID), keep(s.tmp), keep(s.tmp2)
	if cap(s.tools) > maxTools {
		s.tools = nil
	}
	for i := range s.tools[:cap(s.tools)] {
		t := &s.tools[:cap(s.tools)][i]
		t.id, t.name, t.pending = keep(t.id), keep(t.name), keep(t.pending)
	}
	c2mPool.Put(s)
}

// Reset starts a new stream whose events carry model.
func (s *ChatToMessagesStream) Reset(model []byte) {
	s.model = appendQuoted(s.model[:0], model, &s.tmp)
	s.msgID = s.msgID[:0]
	clear(s.vals[:])
	clear(s.cv[:])
	clear(s.dv[:])
	clear(s.bv[:])
	clear(s.tv[:])
	clear(s.fv[:])
	s.nextBlock, s.openKind, s.openIndex, s.openTool = 0, blockNone, 0, 0
	s.tools = s.tools[:0]
	s.queue = s.queue[:0]
	s.stop = ""
	s.usage, s.usageSeen, s.inputEst = transcode.Usage{}, false, 0
	s.begun, s.started, s.ended = false, false, false
	s.err = nil
}

// Started reports whether a content block has been produced;
// message_start, message_delta and message_stop do not count: a stream that
// ends without content stays uncommitted (the edge answers 502).
func (s *ChatToMessagesStream) Started() bool { return s.started }

// Usage returns the usage of the upstream's usage chunk.
func (s *ChatToMessagesStream) Usage() (transcode.Usage, bool) { return s.usage, s.usageSeen }

// Err returns the error the upstream reported in-band, or nil. Its error
// event has been appended already.
func (s *ChatToMessagesStream) Err() error {
	if s.err == nil {
		return nil
	}
	return s.err
}

func c2mSlot(name []byte) int {
	switch string(name) {
	case "choices":
		return 0
	case "usage":
		return 1
	case "error":
		return 2
	case "id":
		return 3
	}
	return -1
}

// Event handles one chat chunk (name is ignored; chat streams are unnamed).
func (s *ChatToMessagesStream) Event(dst, _, data []byte) ([]byte, error) {
	if s.ended {
		return dst, nil
	}
	if sse.IsDone(data) {
		return s.finish(dst), nil
	}
	ck := &s.ck
	if s.noWalk || !s.walker.Walk(data, ck, acceptChoice) {
		if err := s.readGeneric(data); err != nil {
			if len(trimWS(data)) == 0 {
				return dst, nil
			}
			return dst, ErrMalformedEvent
		}
	}
	return s.Feed(dst, ck)
}

// Feed handles one chat chunk already read into ck (chatchunk.Sink): what
// Event does after reading the chunk, and the entry of a source converter
// that fills ck itself instead of writing chat JSON (see chatchunk.Sink).
func (s *ChatToMessagesStream) Feed(dst []byte, ck *chatchunk.Chunk) ([]byte, error) {
	if s.ended {
		return dst, nil
	}
	if ck.Done {
		return s.finish(dst), nil
	}
	if e := ck.Error; rawjson.KindOf(e) == rawjson.Object {
		return s.upstreamError(dst, e), nil
	}
	usage := ck.Usage
	hasUsage := rawjson.KindOf(usage) == rawjson.Object
	if !ck.Choice && !hasUsage && !ck.HasCounted {
		return dst, nil // Azure's prompt_filter_results chunk and the like
	}
	// Before begin: a first chunk with usage gives message_start exact counts.
	if hasUsage {
		s.readUsage(usage)
	} else if ck.HasCounted {
		s.usage, s.usageSeen = ck.Counted, true
	}
	dst = s.begin(dst, ck.ID)
	if ck.Choice {
		dst = s.choice(dst, ck)
	}
	return dst, nil
}

// acceptChoice: the choice to follow has index 0 or none (n > 1 is not
// supported: choice 0 is kept).
func acceptChoice(index []byte) bool {
	n, ok := rawjson.ParseInt(index)
	return !ok || n == 0
}

// readGeneric reads data level by level into s.ck: the top with
// scanKeys, each choice element, then the delta of the accepted one. It is
// the reference the walk must agree with, and the reading of shapes the
// walk rejects.
func (s *ChatToMessagesStream) readGeneric(data []byte) error {
	if err := scanKeys(data, s.vals[:], c2mSlot); err != nil {
		return err
	}
	ck := &s.ck
	*ck = chatchunk.Chunk{Usage: s.vals[1], Error: s.vals[2], ID: s.vals[3]}
	if rawjson.KindOf(s.vals[0]) == rawjson.Array {
		ck.Choices = true
		_ = rawjson.ForEachElem(s.vals[0], func(_ int, c []byte, k rawjson.Kind) bool {
			if k != rawjson.Object || scanKeys(c, s.cv[:], c2mChoiceSlot) != nil {
				return true
			}
			if !acceptChoice(s.cv[0]) {
				return true
			}
			ck.Choice = true
			return false
		})
	}
	if ck.Choice {
		ck.Index, ck.Finish = s.cv[0], s.cv[2]
		if d := s.cv[1]; rawjson.KindOf(d) == rawjson.Object && scanKeys(d, s.dv[:], c2mDeltaSlot) == nil {
			ck.DeltaObject = true
			ck.Content, ck.ReasoningContent, ck.Reasoning, ck.Refusal, ck.ToolCalls, ck.ThinkingBlocks = s.dv[0], s.dv[1], s.dv[2], s.dv[3], s.dv[4], s.dv[5]
		}
	}
	return nil
}

func c2mChoiceSlot(name []byte) int {
	switch string(name) {
	case "index":
		return 0
	case "delta":
		return 1
	case "finish_reason":
		return 2
	}
	return -1
}

func c2mDeltaSlot(name []byte) int {
	switch string(name) {
	case "content":
		return 0
	case "reasoning_content":
		return 1
	case "reasoning":
		return 2
	case "refusal":
		return 3
	case "tool_calls":
		return 4
	case "thinking_blocks":
		return 5
	}
	return -1
}

// choice handles choice 0, whose members the reading left in ck.
func (s *ChatToMessagesStream) choice(dst []byte, ck *chatchunk.Chunk) []byte {
	if ck.DeltaObject {
		r := ck.ReasoningContent // or the reasoning some backends send
		if r == nil {
			r = ck.Reasoning
		}
		if isNonEmptyStr(r) {
			dst = s.textDelta(dst, blockThinking, r)
		}
		if tb := ck.ThinkingBlocks; rawjson.KindOf(tb) == rawjson.Array {
			_ = rawjson.ForEachElem(tb, func(_ int, b []byte, k rawjson.Kind) bool {
				if k == rawjson.Object {
					dst = s.thinkingBlock(dst, b)
				}
				return true
			})
		}
		for _, t := range [2][]byte{ck.Content, ck.Refusal} {
			if isNonEmptyStr(t) {
				dst = s.textDelta(dst, blockText, t)
			}
		}
		if ck.HasCall {
			c := &ck.Call
			s.tv = [3][]byte{c.Index, c.ID, nil}
			s.fv = [2][]byte{c.Name, c.Arguments}
			dst = s.toolCall(dst)
		} else if tcs := ck.ToolCalls; rawjson.KindOf(tcs) == rawjson.Array {
			_ = rawjson.ForEachElem(tcs, func(_ int, tc []byte, k rawjson.Kind) bool {
				if k == rawjson.Object {
					dst = s.toolDelta(dst, tc)
				}
				return true
			})
		}
	}
	if r := word(ck.Finish, &s.tmp); r != nil {
		s.stop = StopReason(r)
		dst = s.closeAll(dst)
	}
	return dst
}

// begin appends message_start once.
func (s *ChatToMessagesStream) begin(dst, id []byte) []byte {
	if s.begun {
		return dst
	}
	s.begun = true
	t := append(s.tmp2[:0], strMsgPrefix...)
	n := len(t)
	if rawjson.KindOf(id) == rawjson.String {
		if u, err := rawjson.AppendUnquote(t, id); err == nil {
			if bytes.HasPrefix(u[n:], strChatcmplPrefix) {
				u = append(u[:n], u[n+len(strChatcmplPrefix):]...)
			}
			t = u
		}
	}
	if len(t) == n {
		t = appendFallbackID(t)
	}
	s.tmp2 = t
	s.msgID = rawjson.AppendQuoteBytes(s.msgID[:0], t)
	dst = append(dst, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":"...)
	dst = append(dst, s.msgID...)
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = append(dst, s.model...)
	dst = append(dst, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
	u := &s.usage
	if !s.usageSeen {
		u = &transcode.Usage{Prompt: s.inputEst}
	}
	return append(appendUsageTail(dst, u, 0), "}}}\n\n"...)
}

// appendUsageTail appends input_tokens' value and the rest of a Messages
// usage object but its closing brace.
func appendUsageTail(dst []byte, u *transcode.Usage, output int64) []byte {
	dst = strconv.AppendInt(dst, anthropicInput(u), 10)
	dst = append(dst, `,"cache_creation_input_tokens":`...)
	dst = strconv.AppendInt(dst, u.CacheCreation, 10)
	dst = append(dst, `,"cache_read_input_tokens":`...)
	dst = strconv.AppendInt(dst, u.Cached, 10)
	dst = append(dst, `,"output_tokens":`...)
	return strconv.AppendInt(dst, output, 10)
}

// SetInputEstimate sets the input_tokens message_start reports when the
// upstream has not reported usage by then. Chat-completions upstreams report
// usage only in their last chunk, after message_start must be sent; the
// edge passes its estimate of the prompt (the one count_tokens answers
// without a native upstream) and message_delta carries the exact counts.
func (s *ChatToMessagesStream) SetInputEstimate(n int64) { s.inputEst = n }

// textDelta appends a text or thinking fragment, opening a block of that
// kind first if needed.
func (s *ChatToMessagesStream) textDelta(dst []byte, kind uint8, val []byte) []byte {
	if s.openKind != kind {
		dst = s.closeAll(dst)
		dst = s.openBlock(dst, kind, nil, nil)
	}
	n := len(dst)
	dst = s.deltaHead(dst)
	if kind == blockText {
		dst = append(dst, `{"type":"text_delta","text":`...)
	} else {
		dst = append(dst, `{"type":"thinking_delta","thinking":`...)
	}
	var ok bool
	if dst, ok = appendStr(dst, val, &s.tmp); !ok {
		return dst[:n]
	}
	return append(dst, "}}\n\n"...)
}

// thinkingBlock appends the events of one delta.thinking_blocks element.
func (s *ChatToMessagesStream) thinkingBlock(dst, b []byte) []byte {
	if rawjson.ScanTop(b, thinkingBlockKeys, s.bv[:]) != nil {
		return dst
	}
	switch {
	case rawjson.StringEquals(s.bv[0], "thinking"):
		if isNonEmptyStr(s.bv[1]) {
			dst = s.textDelta(dst, blockThinking, s.bv[1])
		}
		if rawjson.KindOf(s.bv[2]) != rawjson.String {
			return dst
		}
		if s.openKind != blockThinking {
			dst = s.closeAll(dst)
			dst = s.openBlock(dst, blockThinking, nil, nil)
		}
		n := len(dst)
		dst = append(s.deltaHead(dst), `{"type":"signature_delta","signature":`...)
		var ok bool
		if dst, ok = appendStr(dst, s.bv[2], &s.tmp); !ok {
			return dst[:n]
		}
		// The signature ends its block, as in Anthropic's own streams:
		// reasoning that follows belongs to a new block.
		return s.closeOpen(append(dst, "}}\n\n"...))
	case rawjson.StringEquals(s.bv[0], "redacted_thinking"):
		if rawjson.KindOf(s.bv[3]) != rawjson.String {
			return dst
		}
		dst = s.closeAll(dst)
		n := len(dst)
		dst = append(dst, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
		dst = rawjson.AppendInt(dst, int64(s.nextBlock))
		dst = append(dst, `,"content_block":{"type":"redacted_thinking","data":`...)
		var ok bool
		if dst, ok = appendStr(dst, s.bv[3], &s.tmp); !ok {
			return dst[:n]
		}
		s.openKind, s.openIndex = blockRedacted, s.nextBlock
		s.nextBlock++
		s.started = true
		return s.closeOpen(append(dst, "}}\n\n"...))
	}
	return dst
}

func (s *ChatToMessagesStream) deltaHead(dst []byte) []byte {
	dst = append(dst, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
	dst = rawjson.AppendInt(dst, int64(s.openIndex))
	return append(dst, `,"delta":`...)
}

// openBlock appends content_block_start for a new block of kind; id and
// name are the quoted tool id and name for a tool block.
func (s *ChatToMessagesStream) openBlock(dst []byte, kind uint8, id, name []byte) []byte {
	s.openKind, s.openIndex = kind, s.nextBlock
	s.nextBlock++
	s.started = true
	dst = append(dst, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
	dst = rawjson.AppendInt(dst, int64(s.openIndex))
	switch kind {
	case blockText:
		dst = append(dst, `,"content_block":{"type":"text","text":""}}`...)
	case blockThinking:
		dst = append(dst, `,"content_block":{"type":"thinking","thinking":"","signature":""}}`...)
	default:
		dst = append(dst, `,"content_block":{"type":"tool_use","id":`...)
		dst = append(dst, id...)
		dst = append(dst, `,"name":`...)
		dst = append(dst, name...)
		dst = append(dst, `,"input":{}}}`...)
	}
	return append(dst, "\n\n"...)
}

// closeOpen appends content_block_stop for the open block, if any.
func (s *ChatToMessagesStream) closeOpen(dst []byte) []byte {
	if s.openKind == blockNone {
		return dst
	}
	if s.openKind == blockTool {
		s.tools[s.openTool].state = toolClosed
	}
	s.openKind = blockNone
	dst = append(dst, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":"...)
	dst = rawjson.AppendInt(dst, int64(s.openIndex))
	return append(dst, "}\n\n"...)
}

// closeAll closes the open block and replays every queued tool call, each
// as a complete block.
func (s *ChatToMessagesStream) closeAll(dst []byte) []byte {
	dst = s.closeOpen(dst)
	for _, i := range s.queue {
		dst = s.openQueued(dst, i)
		dst = s.closeOpen(dst)
	}
	s.queue = s.queue[:0]
	return dst
}

func c2mToolSlot(name []byte) int {
	switch string(name) {
	case "index":
		return 0
	case "id":
		return 1
	case "function":
		return 2
	}
	return -1
}

func c2mFuncSlot(name []byte) int {
	switch string(name) {
	case "name":
		return 0
	case "arguments":
		return 1
	}
	return -1
}

// toolDelta handles one element of delta.tool_calls.
func (s *ChatToMessagesStream) toolDelta(dst, tc []byte) []byte {
	if t := &s.tc; !s.noWalk && s.walker.WalkToolCall(tc, t) {
		// Fast path - one pass over the element and its function.
		s.tv = [3][]byte{t.Index, t.ID, nil}
		s.fv = [2][]byte{t.Name, t.Arguments}
	} else {
		if scanKeys(tc, s.tv[:], c2mToolSlot) != nil {
			return dst
		}
		clear(s.fv[:])
		if rawjson.KindOf(s.tv[2]) == rawjson.Object {
			_ = scanKeys(s.tv[2], s.fv[:], c2mFuncSlot)
		}
	}
	return s.toolCall(dst)
}

// toolCall handles one tool call whose index and id are in s.tv and whose
// function name and arguments are in s.fv.
func (s *ChatToMessagesStream) toolCall(dst []byte) []byte {
	var ti int
	if j, ok := rawjson.ParseInt(s.tv[0]); ok {
		ti = s.tool(j)
	} else {
		// Slow path - a backend that omits index: a new id starts a new
		// call, fragments without id continue the last one.
		ti = s.toolWithoutIndex()
	}
	if ti < 0 {
		if len(s.tools) >= maxTools {
			return dst
		}
		j, hasIndex := rawjson.ParseInt(s.tv[0])
		if !hasIndex {
			j = -1 - int64(len(s.tools)) // no real index is negative
		}
		ti = s.newTool(j)
		t := &s.tools[ti]
		t.id = s.appendToolID(t.id[:0], s.tv[1])
		var ok bool
		if t.name, ok = appendStr(t.name[:0], s.fv[0], &s.tmp); !ok {
			t.name = append(t.name, `""`...)
		}
		if s.openKind == blockTool && !s.tools[s.openTool].track.complete() {
			// Slow path - another call is still streaming its arguments.
			s.queue = append(s.queue, ti)
		} else {
			dst = s.closeAll(dst)
			t.state = toolOpen
			s.openTool = ti
			dst = s.openBlock(dst, blockTool, t.id, t.name)
		}
	}
	args := s.fv[1]
	if !isNonEmptyStr(args) {
		return dst
	}
	dec, err := rawjson.AppendUnquote(s.tmp2[:0], args)
	if err != nil {
		return dst
	}
	s.tmp2 = dec
	t := &s.tools[ti]
	switch t.state {
	case toolOpen:
		t.track.feed(dec)
		dst = s.argsDelta(dst, args)
		if len(s.queue) > 0 && t.track.complete() {
			dst = s.promote(dst)
		}
	case toolQueued:
		t.track.feed(dec)
		t.pending = append(t.pending, dec...)
	}
	// toolClosed: the call was judged complete; later text cannot be valid.
	return dst
}

// appendToolID appends the quoted tool call id, or a generated one.
func (s *ChatToMessagesStream) appendToolID(dst, id []byte) []byte {
	if isNonEmptyStr(id) {
		if out, ok := appendStr(dst, id, &s.tmp); ok {
			return out
		}
	}
	dst = append(dst, `"toolu_`...)
	dst = appendFallbackID(dst)
	return append(dst, '"')
}

// argsDelta appends an input_json_delta (frag is a string literal) on the
// open tool block.
func (s *ChatToMessagesStream) argsDelta(dst, frag []byte) []byte {
	n := len(dst)
	dst = s.deltaHead(dst)
	dst = append(dst, `{"type":"input_json_delta","partial_json":`...)
	var ok bool
	if dst, ok = appendStr(dst, frag, &s.tmp); !ok {
		return dst[:n]
	}
	return append(dst, "}}\n\n"...)
}

// promote closes the open, complete tool block and opens queued ones while
// each is complete in turn.
func (s *ChatToMessagesStream) promote(dst []byte) []byte {
	for len(s.queue) > 0 && s.openKind == blockTool && s.tools[s.openTool].track.complete() {
		dst = s.closeOpen(dst)
		i := s.queue[0]
		s.queue = s.queue[:copy(s.queue, s.queue[1:])]
		dst = s.openQueued(dst, i)
	}
	return dst
}

// openQueued opens the block of queued tool i and replays its arguments.
func (s *ChatToMessagesStream) openQueued(dst []byte, i int) []byte {
	t := &s.tools[i]
	t.state = toolOpen
	s.openTool = i
	dst = s.openBlock(dst, blockTool, t.id, t.name)
	if len(t.pending) > 0 {
		s.tmp = rawjson.AppendQuoteBytes(s.tmp[:0], t.pending)
		dst = s.deltaHead(dst)
		dst = append(dst, `{"type":"input_json_delta","partial_json":`...)
		dst = append(dst, s.tmp...)
		dst = append(dst, "}}\n\n"...)
	}
	return dst
}

// toolWithoutIndex returns the table index for a tool_calls element that
// has no index, or -1 for a new call.
func (s *ChatToMessagesStream) toolWithoutIndex() int {
	n := len(s.tools)
	if n == 0 {
		return -1
	}
	if !isNonEmptyStr(s.tv[1]) {
		return n - 1
	}
	// The same id as the last call continues it.
	t := &s.tools[n-1]
	if id, ok := appendStr(s.tmp2[:0], s.tv[1], &s.tmp); ok {
		s.tmp2 = id
		if bytes.Equal(id, t.id) {
			return n - 1
		}
	}
	return -1
}

// tool returns the table index of chat tool call j, or -1.
func (s *ChatToMessagesStream) tool(j int64) int {
	for i := range s.tools {
		if s.tools[i].j == j {
			return i
		}
	}
	return -1
}

// newTool appends a queued tool entry for call j, reusing the buffers of a
// previous stream's entry.
func (s *ChatToMessagesStream) newTool(j int64) int {
	n := len(s.tools)
	if n < cap(s.tools) {
		s.tools = s.tools[:n+1]
	} else {
		s.tools = append(s.tools, c2mTool{})
	}
	t := &s.tools[n]
	t.j, t.state, t.track = j, toolQueued, jsonTrack{}
	t.id, t.name, t.pending = t.id[:0], t.name[:0], t.pending[:0]
	return n
}

var chatUsageKeys = []string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details"}

// readUsage records an OpenAI usage object.
func (s *ChatToMessagesStream) readUsage(u []byte) {
	readChatUsage(u, &s.usage)
	s.usageSeen = true
}

// readChatUsage parses an OpenAI usage object into u.
func readChatUsage(raw []byte, u *transcode.Usage) {
	var v [5][]byte
	if rawjson.ScanTop(raw, chatUsageKeys, v[:]) != nil {
		return
	}
	u.Prompt, _ = parseCount(v[0])
	u.Completion, _ = parseCount(v[1])
	if n, ok := parseCount(v[2]); ok {
		u.Total = n
	} else {
		u.Total = u.Prompt + u.Completion
	}
	if d, _, ok := rawjson.Get(v[3], "cached_tokens"); ok {
		u.Cached, _ = parseCount(d)
	}
	if d, _, ok := rawjson.Get(v[3], "cache_write_tokens"); ok {
		u.CacheCreation, _ = parseCount(d)
	}
	if d, _, ok := rawjson.Get(v[4], "reasoning_tokens"); ok {
		u.Reasoning, _ = parseCount(d)
	}
}

// anthropicInput is input_tokens for a chat usage: the prompt without cache
// reads and writes, never negative.
func anthropicInput(u *transcode.Usage) int64 {
	return max(u.Prompt-u.Cached-u.CacheCreation, 0)
}

// finish ends the message: closes blocks, message_delta, message_stop.
func (s *ChatToMessagesStream) finish(dst []byte) []byte {
	dst = s.begin(dst, nil)
	dst = s.closeAll(dst)
	stop := s.stop
	if stop == "" {
		stop = "end_turn"
		if len(s.tools) > 0 {
			stop = "tool_use"
		}
	}
	s.ended = true
	dst = append(dst, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\""...)
	dst = append(dst, stop...)
	dst = append(dst, `","stop_sequence":null},"usage":{"input_tokens":`...)
	dst = append(appendUsageTail(dst, &s.usage, s.usage.Completion), "}}\n\n"...)
	return append(dst, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
}

var chatErrorKeys = []string{"message", "type", "code"}

// upstreamError handles a chunk carrying an error object.
func (s *ChatToMessagesStream) upstreamError(dst, e []byte) []byte {
	var v [3][]byte
	_ = rawjson.ScanTop(e, chatErrorKeys, v[:])
	msg, _ := rawjson.AppendUnquote(s.tmp2[:0], v[0])
	s.tmp2 = msg
	var codeBuf []byte
	code := word(v[2], &codeBuf)
	typ := anthropicTypeForChatError(code, word(v[1], &s.tmp))
	s.err = &UpstreamError{Type: string(word(v[1], &s.tmp)), Code: codeForAnthropicError([]byte(typ), msg), Message: string(msg)}
	if len(msg) == 0 {
		msg = append(msg, "upstream stream failed"...)
		s.tmp2 = msg
	}
	return s.appendError(dst, typ, "", msg)
}

// appendError appends an Anthropic error event and ends the stream. code is
// written as error.code when not empty.
func (s *ChatToMessagesStream) appendError(dst []byte, typ, code string, msg []byte) []byte {
	s.ended = true
	dst = append(dst, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"...)
	dst = rawjson.AppendQuote(dst, typ)
	if code != "" {
		dst = append(dst, `,"code":`...)
		dst = rawjson.AppendQuote(dst, code)
	}
	dst = append(dst, `,"message":`...)
	dst = rawjson.AppendQuoteBytes(dst, msg)
	return append(dst, "}}\n\n"...)
}

// End appends what is missing of the message (block stops, message_delta,
// message_stop) when the upstream ended without [DONE]. After [DONE] or an
// error it appends nothing.
func (s *ChatToMessagesStream) End(dst []byte) []byte {
	if s.ended {
		return dst
	}
	return s.finish(dst)
}

// Fail appends an Anthropic `error` event: {"type":"error","error":{"type",
// "message"}} with type overloaded_error for server_is_overloaded,
// rate_limit_error for rate_limit_exceeded and slow_down, timeout_error for
// stream_timeout, invalid_request_error for context_length_exceeded and
// invalid_prompt, billing_error for insufficient_quota and api_error for the
// rest. A code that is not a transcode.Code* constant is a gateway rejection
// and is handled as Reject does (spec errors 4).
func (s *ChatToMessagesStream) Fail(dst []byte, code, message string) []byte {
	if s.ended {
		return dst
	}
	if !isUpstreamCode(code) {
		return s.Reject(dst, code, message)
	}
	s.tmp2 = append(s.tmp2[:0], message...)
	return s.appendError(dst, anthropicErrorType(code), "", s.tmp2)
}

// Reject appends a gateway rejection (a streaming guardrail block): the
// error event keeps type invalid_request_error, as the spec requires on
// /v1/messages, and adds error.code (e.g. content_filter).
func (s *ChatToMessagesStream) Reject(dst []byte, code, message string) []byte {
	if s.ended {
		return dst
	}
	s.tmp2 = append(s.tmp2[:0], message...)
	return s.appendError(dst, "invalid_request_error", code, s.tmp2)
}

// jsonTrack follows the nesting of a JSON text fed in pieces, to tell when
// a tool call's arguments form a complete value.
type jsonTrack struct {
	depth  int32
	inStr  bool
	esc    bool
	opened bool
}

func (t *jsonTrack) feed(b []byte) {
	for _, c := range b {
		if t.inStr {
			switch {
			case t.esc:
				t.esc = false
			case c == '\\':
				t.esc = true
			case c == '"':
				t.inStr = false
			}
			continue
		}
		switch c {
		case '"':
			t.inStr = true
		case '{', '[':
			t.depth++
			t.opened = true
		case '}', ']':
			t.depth--
		}
	}
}

// complete reports whether an object or array was opened and closed again.
func (t *jsonTrack) complete() bool { return t.opened && t.depth <= 0 && !t.inStr }
