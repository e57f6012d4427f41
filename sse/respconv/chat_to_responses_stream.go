package respconv

import (
	"strconv"
	"sync"

	"gw/sse"
	"gw/sse/chatchunk"
	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// ChatToResponses converts a chat-completions SSE stream into the complete
// Responses event sequence, for a Responses caller served by a chat upstream.
// Get one with NewChatToResponsesStream, call Reset (and SetRequest), feed
// every upstream event to Event, finish with End or Fail, and return it with
// ReleaseStream.
//
// Output, with sequence_number strictly increasing from 0 (as in the
// recorded streams): response.created and response.in_progress when the
// first chunk with a choice arrives; then per output item, one open at a
// time, output_index counting from 0:
//
//   - text: response.output_item.added (message), response.content_part.added
//     (output_text), response.output_text.delta…, response.output_text.done,
//     response.content_part.done, response.output_item.done. A refusal gets
//     its own part (response.refusal.delta/.done) in the same message item.
//   - reasoning (delta.reasoning_content or a string delta.reasoning): a
//     reasoning item with one summary part: response.reasoning_summary_part.added,
//     response.reasoning_summary_text.delta…, .done, response.reasoning_summary_part.done.
//     A delta.thinking_blocks signature (an Anthropic upstream, see
//     thinking.go) becomes the encrypted_content of the open reasoning item
//     (one is opened when none is) and seals it: further reasoning opens a
//     new item; a redacted_thinking block is an item of its own.
//   - tool call: response.output_item.added (function_call, arguments ""),
//     response.function_call_arguments.delta…, .done, response.output_item.done.
//     A call that streamed no arguments gets "{}".
//
// A chat item closes when a different kind of output starts, when the
// finish_reason arrives, or at the end. The stream ends with
// response.completed — or response.incomplete (incomplete_details reason
// max_output_tokens for finish_reason length, content_filter for
// content_filter) — at `[DONE]` or End, carrying the full response object:
// every output item and the usage of the usage chunk.
//
// Parallel tool calls: Responses items are sequential, chat fragments are
// keyed by index. A call whose header arrives while another call is open
// waits (its fragments are buffered); it opens when it gets argument text
// and the open call's arguments are already complete JSON — so the usual
// one-call-after-another order streams without delay, and interleaved
// fragments (allowed by the format, never observed) still produce whole
// calls. Waiting calls are flushed in order before any other output and at
// the finish. Fragments for a call already closed with complete arguments
// are dropped.
//
// An upstream `{"error":{...}}` frame ends the stream with response.failed
// (code per ErrorCode and ResponsesErrorCode) and Event returns
// ErrUpstreamFailed. A chunk that is not a JSON object returns an error
// wrapping ErrInvalid and leaves dst and the state as they were; string
// fields that are not valid JSON strings are ignored.
//
// Events before the first chunk with a choice or usage (Azure's prompt-filter
// chunk) only contribute their id. Choices other than index 0 are ignored.
type ChatToResponses struct {
	noCopy noCopy

	r          respObj
	model      []byte // alias literal, or the upstream model when Reset got none
	base       []byte // id base storage
	createdBuf []byte // created_at storage (respObj.createdLit)
	echo       []byte // appendEcho output

	seq       int64
	header    bool // response.created and response.in_progress written
	content   bool // caller-visible output produced (Started)
	done      bool // a terminal event was written
	sawDone   bool // the upstream's [DONE] arrived
	finish    uint8
	usage     transcode.Usage
	haveUsage bool

	nItems  int    // output items opened = next output_index
	nClosed int    // items in output
	output  []byte // JSON of the closed items, comma separated

	open     uint8  // kind of the open item
	openIdx  int    // its output_index
	itemID   []byte // its id
	text     []byte // escaped content of the open text/refusal part or summary
	sig      []byte // encrypted_content of the open reasoning item; sealed when set
	partKind uint8  // open message part: partNone, partText, partRefusal
	partIdx  int    // its content_index
	nParts   int
	parts    []byte // closed parts of the open message, comma separated

	calls    []chatCall
	openCall int // index in calls of the open function_call item, -1 if none
	tmp      []byte

	walker chatchunk.Walker
	ck     chatchunk.Chunk
	noWalk bool // tests: read every chunk the generic way
}

type chatCall struct {
	index int64  // chat tool_calls[].index
	id    []byte // escaped content of the call id
	name  []byte // escaped content of the function name
	args  []byte // decoded arguments
	state uint8
}

const (
	kindNone uint8 = iota
	kindMessage
	kindReasoning
	kindCall
)

const (
	partNone uint8 = iota
	partText
	partRefusal
)

const (
	callPending uint8 = iota
	callOpen
	callClosed
)

const (
	finishNone uint8 = iota
	finishStop
	finishLength
	finishToolCalls
	finishContentFilter
)

var c2rPool sync.Pool

// NewChatToResponsesStream returns a pooled *ChatToResponses as a
// transcode.Stream. Call Reset before use and ReleaseStream after.
func NewChatToResponsesStream() transcode.Stream {
	if v := c2rPool.Get(); v != nil {
		return v.(*ChatToResponses)
	}
	s := &ChatToResponses{}
	s.Reset(nil)
	return s
}

// Interface guards.
var (
	_ transcode.Stream = (*ChatToResponses)(nil)
	_ transcode.Stream = (*ResponsesToChat)(nil)
)

// ReleaseStream resets s and returns it to its pool; s must not be used
// afterwards. Streams not made by this package are ignored.
func ReleaseStream(s transcode.Stream) {
	switch x := s.(type) {
	case *ChatToResponses:
		x.Reset(nil)
		x.output, x.text, x.parts, x.tmp, x.echo = trimBuf(x.output), trimBuf(x.text), trimBuf(x.parts), trimBuf(x.tmp), trimBuf(x.echo)
		for i := range x.calls {
			x.calls[i].args = trimBuf(x.calls[i].args)
		}
		c2rPool.Put(x)
	case *ResponsesToChat:
		x.Reset(nil)
		x.tmp = trimBuf(x.tmp)
		r2cPool.Put(x)
	}
}

// Reset implements transcode.Stream. model is the caller-facing alias,
// plain or as a JSON string literal; empty keeps the upstream's model. The
// echoed request settings return to their defaults: call SetRequest after
// Reset.
func (s *ChatToResponses) Reset(model []byte) {
	s.model = s.model[:0]
	if len(model) > 0 {
		s.model = appendModel(s.model, model)
	}
	s.base = s.base[:0]
	s.r = respObj{}
	s.echo = appendEcho(s.echo[:0], nil)
	s.seq = 0
	s.header, s.content, s.done, s.sawDone = false, false, false, false
	s.finish = finishNone
	s.usage, s.haveUsage = transcode.Usage{}, false
	s.nItems, s.nClosed = 0, 0
	s.output = s.output[:0]
	s.open, s.openIdx = kindNone, 0
	s.itemID, s.text, s.parts, s.sig = s.itemID[:0], s.text[:0], s.parts[:0], s.sig[:0]
	s.partKind, s.partIdx, s.nParts = partNone, 0, 0
	s.calls = s.calls[:0]
	s.openCall = -1
}

// SetRequest records the caller's Responses request body, whose settings
// (instructions, tools, tool_choice, temperature, top_p, text, reasoning,
// metadata, ...) every response object in the stream echoes. The body is
// not retained. Call it after Reset, before the first Event.
func (s *ChatToResponses) SetRequest(req []byte) {
	s.echo = appendEcho(s.echo[:0], req)
}

// Started implements transcode.Stream: true once an output item was opened
// or the finish reason arrived.
func (s *ChatToResponses) Started() bool { return s.content }

// Usage implements transcode.Stream.
func (s *ChatToResponses) Usage() (transcode.Usage, bool) { return s.usage, s.haveUsage }

// Terminated reports whether the upstream's `data: [DONE]` arrived. An
// upstream that ended without it was cut off; the edge decides between End
// and Fail.
func (s *ChatToResponses) Terminated() bool { return s.sawDone }

var chunkKeys = []string{"choices", "usage", "error", "id", "created", "model"}
var choiceKeys = []string{"delta", "finish_reason", "index"}
var deltaKeys = []string{"content", "refusal", "reasoning_content", "reasoning", "tool_calls", "thinking_blocks"}

// Event implements transcode.Stream for one chat chunk (name is ignored).
func (s *ChatToResponses) Event(dst, name, data []byte) ([]byte, error) {
	if s.done {
		return dst, nil
	}
	if sse.IsDone(data) {
		s.sawDone = true
		return s.finishStream(dst), nil
	}
	ck := &s.ck
	if s.noWalk || !s.walker.Walk(data, ck, acceptChoice) {
		if err := s.readGeneric(data); err != nil {
			return dst, fieldErr(ErrInvalid, "", "an upstream chat chunk is not a JSON object")
		}
	}
	return s.Feed(dst, ck)
}

// Feed handles one chat chunk already read into ck (chatchunk.Sink): what
// Event does after reading the chunk, and the entry of a source converter
// that fills ck itself instead of writing chat JSON (see chatchunk.Sink).
func (s *ChatToResponses) Feed(dst []byte, ck *chatchunk.Chunk) ([]byte, error) {
	if s.done {
		return dst, nil
	}
	if ck.Done {
		s.sawDone = true
		return s.finishStream(dst), nil
	}
	if rawjson.KindOf(ck.Error) == rawjson.Object {
		return s.upstreamError(dst, ck.Error), ErrUpstreamFailed
	}
	if rawjson.KindOf(ck.Usage) == rawjson.Object {
		if u, ok := parseUsage(ck.Usage, true); ok {
			s.usage, s.haveUsage = u, true
		}
	} else if ck.HasCounted {
		s.usage, s.haveUsage = ck.Counted, true
	}
	if !s.header {
		if len(s.base) == 0 && nonEmptyStr(ck.ID) {
			s.base = appendIDBase(s.base, ck.ID)
		}
		if !ck.Choice && !s.haveUsage {
			return dst, nil // Azure's prompt-filter chunk and the like
		}
		if len(s.model) == 0 && isStr(ck.Model) {
			s.model = append(s.model, ck.Model...)
		}
		s.r.created = createdOrNow(ck.Created)
		dst = s.start(dst)
	}
	if !ck.Choice {
		return dst, nil
	}

	if ck.DeltaObject {
		reasoning := ck.ReasoningContent
		if !nonEmptyStr(reasoning) {
			reasoning = ck.Reasoning
		}
		if nonEmptyStr(reasoning) {
			dst = s.reasoningDelta(dst, reasoning)
		}
		if rawjson.KindOf(ck.ThinkingBlocks) == rawjson.Array {
			_ = rawjson.ForEachElem(ck.ThinkingBlocks, func(_ int, b []byte, _ rawjson.Kind) bool {
				dst = s.thinkingBlock(dst, b)
				return true
			})
		}
		if nonEmptyStr(ck.Content) {
			dst = s.textDelta(dst, ck.Content, partText)
		}
		if nonEmptyStr(ck.Refusal) {
			dst = s.textDelta(dst, ck.Refusal, partRefusal)
		}
		if ck.HasCall {
			c := &ck.Call
			dst = s.toolCall(dst, c.Index, c.ID, c.Name, c.Arguments)
		} else if rawjson.KindOf(ck.ToolCalls) == rawjson.Array {
			_ = rawjson.ForEachElem(ck.ToolCalls, func(_ int, tc []byte, kind rawjson.Kind) bool {
				if kind == rawjson.Object {
					dst = s.toolDelta(dst, tc)
				}
				return true
			})
		}
	}
	if f := ck.Finish; nonEmptyStr(f) {
		switch {
		case rawjson.StringEquals(f, "length"):
			s.finish = finishLength
		case rawjson.StringEquals(f, "content_filter"):
			s.finish = finishContentFilter
		case rawjson.StringEquals(f, "tool_calls"), rawjson.StringEquals(f, "function_call"):
			s.finish = finishToolCalls
		default:
			s.finish = finishStop
		}
		s.content = true
		dst = s.closeAll(dst)
	}
	return dst, nil
}

// acceptChoice: the choice to follow has index 0 or none.
func acceptChoice(index []byte) bool {
	return index == nil || (len(index) == 1 && index[0] == '0')
}

// readGeneric reads a chunk level by level into s.ck (ScanTop on the top,
// each choice and the accepted choice's delta): the reference the walk must
// agree with, and the reading of shapes the walk rejects.
func (s *ChatToResponses) readGeneric(data []byte) error {
	var v [6][]byte // choices, usage, error, id, created, model
	keys := chunkKeys
	if s.header {
		keys = chunkKeys[:3] // Fast path - id, created and model are known
	}
	if err := rawjson.ScanTop(data, keys, v[:]); err != nil {
		return err
	}
	ck := &s.ck
	*ck = chatchunk.Chunk{Usage: v[1], Error: v[2], ID: v[3], Created: v[4], Model: v[5]}
	var c [3][]byte // delta, finish_reason, index
	if rawjson.KindOf(v[0]) == rawjson.Array {
		ck.Choices = true
		_ = rawjson.ForEachElem(v[0], func(_ int, ch []byte, kind rawjson.Kind) bool {
			if kind != rawjson.Object || rawjson.ScanTop(ch, choiceKeys, c[:]) != nil {
				return true
			}
			ck.Choice = acceptChoice(c[2])
			return !ck.Choice
		})
	}
	if ck.Choice {
		ck.Index, ck.Finish = c[2], c[1]
		if rawjson.KindOf(c[0]) == rawjson.Object {
			var d [6][]byte
			_ = rawjson.ScanTop(c[0], deltaKeys, d[:])
			ck.DeltaObject = true
			ck.Content, ck.Refusal, ck.ReasoningContent, ck.Reasoning, ck.ToolCalls, ck.ThinkingBlocks = d[0], d[1], d[2], d[3], d[4], d[5]
		}
	}
	return nil
}

// End implements transcode.Stream: it closes what is open and writes
// response.completed (or response.incomplete) unless a terminal event was
// written already.
func (s *ChatToResponses) End(dst []byte) []byte {
	return s.finishStream(dst)
}

// Fail implements transcode.Stream: it closes the open item (status
// incomplete), drops calls still waiting, and writes response.failed with
// error {code: ResponsesErrorCode(code), message}. Nothing is written after
// a terminal event.
func (s *ChatToResponses) Fail(dst []byte, code, message string) []byte {
	if s.done {
		return dst
	}
	s.tmp = rawjson.AppendQuote(s.tmp[:0], message)
	return s.failWith(dst, ResponsesErrorCode(code), s.tmp)
}

// upstreamError ends the stream for a chat error object.
func (s *ChatToResponses) upstreamError(dst, errObj []byte) []byte {
	code := ResponsesErrorCode(ErrorCode(0, errObj))
	msg, _, _ := rawjson.Get(errObj, "message")
	if !isStr(msg) {
		msg = strUpstreamFailed
	}
	return s.failWith(dst, code, msg)
}

var strUpstreamFailed = []byte(`"the upstream failed"`)

func (s *ChatToResponses) failWith(dst []byte, code string, msgLit []byte) []byte {
	if !s.header {
		dst = s.start(dst)
	}
	dst = s.closeOpen(dst, "incomplete")
	dst = s.ev(dst, evFailed)
	dst = append(dst, `,"response":`...)
	dst = s.r.open(dst, "failed", s.model)
	dst = append(dst, s.output...)
	dst = s.r.close(dst, code, msgLit, "", s.usagePtr())
	dst = append(dst, s.echo...)
	s.done = true
	return append(dst, "}}\n\n"...)
}

func (s *ChatToResponses) usagePtr() *transcode.Usage {
	if s.haveUsage {
		return &s.usage
	}
	return nil
}

// finishStream closes everything and writes the terminal event.
func (s *ChatToResponses) finishStream(dst []byte) []byte {
	if s.done {
		return dst
	}
	if !s.header {
		dst = s.start(dst)
	}
	dst = s.closeAll(dst)
	status, typ, incomplete := "completed", evCompleted, ""
	switch s.finish {
	case finishLength:
		status, typ, incomplete = "incomplete", evIncomplete, "max_output_tokens"
	case finishContentFilter:
		status, typ, incomplete = "incomplete", evIncomplete, "content_filter"
	}
	dst = s.ev(dst, typ)
	dst = append(dst, `,"response":`...)
	dst = s.r.open(dst, status, s.model)
	dst = append(dst, s.output...)
	dst = s.r.close(dst, "", nil, incomplete, s.usagePtr())
	dst = append(dst, s.echo...)
	s.done = true
	return append(dst, "}}\n\n"...)
}

// start writes response.created and response.in_progress.
func (s *ChatToResponses) start(dst []byte) []byte {
	if len(s.base) == 0 {
		s.base = appendIDBase(s.base, nil)
	}
	if s.r.created == 0 {
		s.r.created = createdOrNow(nil)
	}
	s.r.base = s.base
	s.createdBuf = strconv.AppendInt(s.createdBuf[:0], s.r.created, 10)
	s.r.createdLit = s.createdBuf
	s.header = true
	for _, typ := range [2]string{evCreated, evInProgress} {
		dst = s.ev(dst, typ)
		dst = append(dst, `,"response":`...)
		dst = s.r.open(dst, "in_progress", s.model)
		dst = s.r.close(dst, "", nil, "", nil)
		dst = append(dst, s.echo...)
		dst = append(dst, "}}\n\n"...)
	}
	return dst
}

// Event names.
const (
	evCreated         = "response.created"
	evInProgress      = "response.in_progress"
	evCompleted       = "response.completed"
	evIncomplete      = "response.incomplete"
	evFailed          = "response.failed"
	evItemAdded       = "response.output_item.added"
	evItemDone        = "response.output_item.done"
	evPartAdded       = "response.content_part.added"
	evPartDone        = "response.content_part.done"
	evTextDelta       = "response.output_text.delta"
	evTextDone        = "response.output_text.done"
	evRefusalDelta    = "response.refusal.delta"
	evRefusalDone     = "response.refusal.done"
	evArgsDelta       = "response.function_call_arguments.delta"
	evArgsDone        = "response.function_call_arguments.done"
	evSummaryAdded    = "response.reasoning_summary_part.added"
	evSummaryDone     = "response.reasoning_summary_part.done"
	evSummaryDelta    = "response.reasoning_summary_text.delta"
	evSummaryTextDone = "response.reasoning_summary_text.done"
)

// ev opens an event: `event: typ\ndata: {"type":"typ","sequence_number":N`.
// The caller appends the other members and "}\n\n".
func (s *ChatToResponses) ev(dst []byte, typ string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	dst = rawjson.AppendInt(dst, s.seq)
	s.seq++
	return dst
}

// itemEv opens an event about the open item: ev plus item_id and output_index.
func (s *ChatToResponses) itemEv(dst []byte, typ string) []byte {
	dst = s.ev(dst, typ)
	dst = append(dst, `,"item_id":"`...)
	dst = append(dst, s.itemID...)
	dst = append(dst, `","output_index":`...)
	return rawjson.AppendInt(dst, int64(s.openIdx))
}

// partEv opens an event about the open message part.
func (s *ChatToResponses) partEv(dst []byte, typ string) []byte {
	dst = s.itemEv(dst, typ)
	dst = append(dst, `,"content_index":`...)
	return rawjson.AppendInt(dst, int64(s.partIdx))
}

// openItem starts output item kind: it assigns the output_index and id and
// writes response.output_item.added up to the item's first members.
func (s *ChatToResponses) openItem(dst []byte, kind uint8, prefix string) []byte {
	s.open, s.openIdx = kind, s.nItems
	s.nItems++
	s.content = true
	s.itemID = append(s.itemID[:0], prefix...)
	s.itemID = append(s.itemID, s.base...)
	s.itemID = append(s.itemID, '_')
	s.itemID = rawjson.AppendInt(s.itemID, int64(s.openIdx))
	dst = s.ev(dst, evItemAdded)
	dst = append(dst, `,"output_index":`...)
	dst = rawjson.AppendInt(dst, int64(s.openIdx))
	dst = append(dst, `,"item":{"id":"`...)
	return append(dst, s.itemID...)
}

// beginOutput appends the separator before a new closed item and returns
// where it starts.
func (s *ChatToResponses) beginOutput() int {
	if s.nClosed > 0 {
		s.output = append(s.output, ',')
	}
	s.nClosed++
	return len(s.output)
}

// itemDone writes response.output_item.done for the item JSON output[start:].
func (s *ChatToResponses) itemDone(dst []byte, start int) []byte {
	dst = s.ev(dst, evItemDone)
	dst = append(dst, `,"output_index":`...)
	dst = rawjson.AppendInt(dst, int64(s.openIdx))
	dst = append(dst, `,"item":`...)
	dst = append(dst, s.output[start:]...)
	s.open = kindNone
	return append(dst, "}\n\n"...)
}

// Text and refusal.

func (s *ChatToResponses) textDelta(dst, lit []byte, kind uint8) []byte {
	if s.open != kindMessage {
		dst = s.closeAll(dst)
		dst = s.openItem(dst, kindMessage, "msg_")
		dst = append(dst, `","type":"message","status":"in_progress","role":"assistant","content":[]}}`+"\n\n"...)
		s.parts = s.parts[:0]
		s.partKind, s.nParts = partNone, 0
	}
	if s.partKind != kind {
		dst = s.closePart(dst)
		s.partKind, s.partIdx = kind, s.nParts
		s.nParts++
		s.text = s.text[:0]
		dst = s.partEv(dst, evPartAdded)
		if kind == partText {
			dst = append(dst, `,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}}`+"\n\n"...)
		} else {
			dst = append(dst, `,"part":{"type":"refusal","refusal":""}}`+"\n\n"...)
		}
	}
	s.text = append(s.text, strBody(lit)...)
	if kind == partText {
		dst = s.partEv(dst, evTextDelta)
		dst = append(dst, `,"delta":`...)
		dst = append(dst, lit...)
		return append(dst, `,"logprobs":[]}`+"\n\n"...)
	}
	dst = s.partEv(dst, evRefusalDelta)
	dst = append(dst, `,"delta":`...)
	dst = append(dst, lit...)
	return append(dst, "}\n\n"...)
}

// closePart writes the .done events of the open message part and appends
// the part to parts.
func (s *ChatToResponses) closePart(dst []byte) []byte {
	if s.partKind == partNone {
		return dst
	}
	if s.nParts > 1 {
		s.parts = append(s.parts, ',')
	}
	start := len(s.parts)
	if s.partKind == partText {
		dst = s.partEv(dst, evTextDone)
		dst = append(dst, `,"text":"`...)
		dst = append(dst, s.text...)
		dst = append(dst, `","logprobs":[]}`+"\n\n"...)
		s.parts = append(s.parts, `{"type":"output_text","text":"`...)
		s.parts = append(s.parts, s.text...)
		s.parts = append(s.parts, `","annotations":[],"logprobs":[]}`...)
	} else {
		dst = s.partEv(dst, evRefusalDone)
		dst = append(dst, `,"refusal":"`...)
		dst = append(dst, s.text...)
		dst = append(dst, "\"}\n\n"...)
		s.parts = append(s.parts, `{"type":"refusal","refusal":"`...)
		s.parts = append(s.parts, s.text...)
		s.parts = append(s.parts, `"}`...)
	}
	dst = s.partEv(dst, evPartDone)
	dst = append(dst, `,"part":`...)
	dst = append(dst, s.parts[start:]...)
	s.partKind = partNone
	return append(dst, "}\n\n"...)
}

// Reasoning.

func (s *ChatToResponses) reasoningDelta(dst, lit []byte) []byte {
	if s.open != kindReasoning || len(s.sig) > 0 {
		dst = s.openReasoning(dst)
	}
	s.text = append(s.text, strBody(lit)...)
	dst = s.itemEv(dst, evSummaryDelta)
	dst = append(dst, `,"summary_index":0,"delta":`...)
	dst = append(dst, lit...)
	return append(dst, "}\n\n"...)
}

// openReasoning closes what is open and opens a reasoning item with an
// empty summary part.
func (s *ChatToResponses) openReasoning(dst []byte) []byte {
	dst = s.closeAll(dst)
	dst = s.openItem(dst, kindReasoning, "rs_")
	dst = append(dst, `","type":"reasoning","summary":[]}}`+"\n\n"...)
	s.text, s.sig = s.text[:0], s.sig[:0]
	dst = s.itemEv(dst, evSummaryAdded)
	return append(dst, `,"summary_index":0,"part":{"type":"summary_text","text":""}}`+"\n\n"...)
}

// thinkingBlock seals the open reasoning item with the signature of a
// thinking_blocks element (opening an item when none is open or the open
// one is sealed), or gives a redacted_thinking block an item of its own.
func (s *ChatToResponses) thinkingBlock(dst, b []byte) []byte {
	_, prefix, enc, ok := thinkingBlock(b)
	if !ok {
		return dst
	}
	if s.open != kindReasoning || len(s.sig) > 0 || prefix == RedactedPrefix {
		dst = s.openReasoning(dst)
	}
	s.sig = append(append(s.sig[:0], prefix...), enc...)
	return dst
}

// Tool calls.

var toolCallKeys = []string{"index", "id", "function"}

func (s *ChatToResponses) toolDelta(dst, tc []byte) []byte {
	var t [3][]byte // index, id, function
	_ = rawjson.ScanTop(tc, toolCallKeys, t[:])
	var f [2][]byte // name, arguments
	if rawjson.KindOf(t[2]) == rawjson.Object {
		_ = rawjson.ScanTop(t[2], nameArgsKeys, f[:])
	}
	return s.toolCall(dst, t[0], t[1], f[0], f[1])
}

// toolCall handles one tool call from its raw index, id, function name and
// arguments (each nil when absent).
func (s *ChatToResponses) toolCall(dst, index, id, fname, args []byte) []byte {
	if !nonEmptyStr(id) {
		id = nil
	}
	if !nonEmptyStr(fname) {
		fname = nil
	}
	idx, ok := rawjson.ParseInt(index)
	if !ok {
		// No index (some compatible backends): a new id starts a new call,
		// anything else continues the latest one.
		idx = 0
		if n := len(s.calls); n > 0 {
			last := &s.calls[n-1]
			idx = last.index
			if id != nil && string(strBody(id)) != string(last.id) {
				idx = s.calls[n-1].index + 1
			}
		}
	}
	ci := s.findCall(idx)
	if ci < 0 {
		if s.openCall < 0 {
			dst = s.closeAll(dst) // a message or reasoning item ends here
		}
		ci = s.newCall(idx)
		c := &s.calls[ci]
		if id != nil {
			c.id = append(c.id, strBody(id)...)
		}
		if fname != nil {
			c.name = append(c.name, strBody(fname)...)
		}
		if s.openCall < 0 {
			dst = s.openCallItem(dst, ci)
		}
	} else if c := &s.calls[ci]; c.state == callPending {
		if len(c.id) == 0 && id != nil {
			c.id = append(c.id, strBody(id)...)
		}
		if fname != nil {
			c.name = append(c.name, strBody(fname)...) // names split across fragments
		}
	}
	if !nonEmptyStr(args) {
		return dst
	}
	c := &s.calls[ci]
	switch c.state {
	case callOpen:
		c.args, _ = rawjson.AppendUnquote(c.args, args)
		dst = s.itemEv(dst, evArgsDelta)
		dst = append(dst, `,"delta":`...)
		dst = append(dst, args...)
		return append(dst, "}\n\n"...)
	case callPending:
		c.args, _ = rawjson.AppendUnquote(c.args, args)
		if s.openCall < 0 || rawjson.Valid(s.calls[s.openCall].args) {
			dst = s.closeOpen(dst, "completed")
			dst = s.openCallItem(dst, ci)
		}
	}
	return dst // callClosed: its arguments were complete JSON already
}

func (s *ChatToResponses) findCall(idx int64) int {
	for i := range s.calls {
		if s.calls[i].index == idx {
			return i
		}
	}
	return -1
}

// newCall appends a call record, reusing a released record's buffers.
func (s *ChatToResponses) newCall(idx int64) int {
	n := len(s.calls)
	if n < cap(s.calls) {
		s.calls = s.calls[:n+1]
	} else {
		s.calls = append(s.calls, chatCall{})
	}
	c := &s.calls[n]
	c.index, c.state = idx, callPending
	c.id, c.name, c.args = c.id[:0], c.name[:0], c.args[:0]
	return n
}

// openCallItem opens the function_call item for calls[ci] and streams the
// arguments it buffered while waiting.
func (s *ChatToResponses) openCallItem(dst []byte, ci int) []byte {
	c := &s.calls[ci]
	c.state = callOpen
	s.openCall = ci
	dst = s.openItem(dst, kindCall, "fc_")
	if len(c.id) == 0 {
		c.id = append(c.id, "call_"...)
		c.id = append(c.id, s.itemID[len("fc_"):]...)
	}
	dst = append(dst, `","type":"function_call","status":"in_progress","arguments":"","call_id":"`...)
	dst = append(dst, c.id...)
	dst = append(dst, `","name":"`...)
	dst = append(dst, c.name...)
	dst = append(dst, "\"}}\n\n"...)
	if len(c.args) > 0 {
		dst = s.itemEv(dst, evArgsDelta)
		dst = append(dst, `,"delta":`...)
		dst = rawjson.AppendQuoteBytes(dst, c.args)
		dst = append(dst, "}\n\n"...)
	}
	return dst
}

// closeOpen closes the open item, if any, with status (for a message).
func (s *ChatToResponses) closeOpen(dst []byte, status string) []byte {
	switch s.open {
	case kindMessage:
		dst = s.closePart(dst)
		start := s.beginOutput()
		s.output = append(s.output, `{"id":"`...)
		s.output = append(s.output, s.itemID...)
		s.output = append(s.output, `","type":"message","status":"`...)
		s.output = append(s.output, status...)
		s.output = append(s.output, `","role":"assistant","content":[`...)
		s.output = append(s.output, s.parts...)
		s.output = append(s.output, "]}"...)
		dst = s.itemDone(dst, start)
	case kindReasoning:
		dst = s.itemEv(dst, evSummaryTextDone)
		dst = append(dst, `,"summary_index":0,"text":"`...)
		dst = append(dst, s.text...)
		dst = append(dst, "\"}\n\n"...)
		dst = s.itemEv(dst, evSummaryDone)
		dst = append(dst, `,"summary_index":0,"part":{"type":"summary_text","text":"`...)
		dst = append(dst, s.text...)
		dst = append(dst, "\"}}\n\n"...)
		start := s.beginOutput()
		s.output = append(s.output, `{"id":"`...)
		s.output = append(s.output, s.itemID...)
		s.output = append(s.output, `","type":"reasoning","summary":[{"type":"summary_text","text":"`...)
		s.output = append(s.output, s.text...)
		s.output = append(s.output, `"}]`...)
		if len(s.sig) > 0 {
			s.output = append(s.output, `,"encrypted_content":"`...)
			s.output = append(s.output, s.sig...)
			s.output = append(s.output, '"')
			s.sig = s.sig[:0]
		}
		s.output = append(s.output, '}')
		dst = s.itemDone(dst, start)
	case kindCall:
		c := &s.calls[s.openCall]
		c.state = callClosed
		s.openCall = -1
		if len(c.args) == 0 {
			c.args = append(c.args, "{}"...)
			dst = s.itemEv(dst, evArgsDelta)
			dst = append(dst, `,"delta":"{}"}`+"\n\n"...)
		}
		// Quote the arguments once, straight into the output arena.
		start := s.beginOutput()
		s.output = append(s.output, `{"id":"`...)
		s.output = append(s.output, s.itemID...)
		s.output = append(s.output, `","type":"function_call","status":"`...)
		s.output = append(s.output, status...)
		s.output = append(s.output, `","arguments":`...)
		argStart := len(s.output)
		s.output = rawjson.AppendQuoteBytes(s.output, c.args)
		argEnd := len(s.output)
		s.output = append(s.output, `,"call_id":"`...)
		s.output = append(s.output, c.id...)
		s.output = append(s.output, `","name":"`...)
		s.output = append(s.output, c.name...)
		s.output = append(s.output, `"}`...)
		dst = s.itemEv(dst, evArgsDone)
		dst = append(dst, `,"name":"`...)
		dst = append(dst, c.name...)
		dst = append(dst, `","arguments":`...)
		dst = append(dst, s.output[argStart:argEnd]...)
		dst = append(dst, "}\n\n"...)
		dst = s.itemDone(dst, start)
	}
	return dst
}

// closeAll closes the open item and flushes the calls still waiting, in
// order. The message status is incomplete when the finish reason cut it.
func (s *ChatToResponses) closeAll(dst []byte) []byte {
	status := "completed"
	if s.finish == finishLength || s.finish == finishContentFilter {
		status = "incomplete"
	}
	dst = s.closeOpen(dst, status)
	for i := range s.calls {
		if s.calls[i].state == callPending {
			dst = s.openCallItem(dst, i)
			dst = s.closeOpen(dst, status)
		}
	}
	return dst
}
