package gemini

import (
	"strconv"
	"sync"
	"time"

	"gw/sse/chatchunk"
	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// ToChatStream turns a Gemini streamGenerateContent?alt=sse stream into
// chat completion chunks: a chat caller (and, through the edge's
// transcoders, a Messages or Responses caller) in front of a Gemini
// upstream.
//
// Output, as `data: {...}` frames that all carry the same id
// (chatcmpl-<responseId>), created and model (the alias given to Reset):
//
//   - the first event → a chunk with delta {role: assistant, content: ""};
//   - each text part → delta.content; a part with thought: true →
//     delta.reasoning_content; empty texts produce nothing;
//   - each functionCall part (Gemini sends them whole) → one chunk with
//     tool_calls [{index, id, type: function, function: {name, arguments:
//     the args object as a string}}], index counting calls from 0, id
//     synthesised unless the upstream sent one (see the package comment);
//   - finishReason → the finish chunk (delta {}, finish_reason); a blocked
//     prompt (promptFeedback.blockReason) → finish_reason content_filter;
//   - End → the finish chunk if none came, the usage chunk (the last
//     usageMetadata seen; choices []), then `data: [DONE]`.
//
// An event carrying {"error": {...}} produces the chat error frame and ends
// the stream: no [DONE] follows and Err reports it.
//
// The zero value is ready after Reset; a ToChatStream must not be used from
// several goroutines at once. After warm-up, events do not allocate.
type ToChatStream struct {
	noCopy noCopy //nolint:unused

	model  []byte // quoted alias
	prefix []byte // `data: {"id":…,"model":…,"choices":[`
	tmp    []byte
	tmp2   []byte

	cur    rawjson.Cursor
	ev     walked // what walk found in the current event
	walked []walkedPart
	keyBuf []byte

	nextTool int
	finish   string

	usage     transcode.Usage
	usageSeen bool
	usageRaw  []byte // the last usageMetadata, read when needed (it repeats on every event)

	begun, started, finishSent, usageSent, ended bool
	err                                          *UpstreamError

	sinkState // SetSink: chunks handed to a second stage instead of written
}

var _ transcode.Stream = (*ToChatStream)(nil)

var streamPool sync.Pool

// AcquireToChatStream returns a pooled stream reset for model (the alias);
// give it back with ReleaseToChatStream.
func AcquireToChatStream(model []byte) *ToChatStream {
	s, _ := streamPool.Get().(*ToChatStream)
	if s == nil {
		s = new(ToChatStream)
	}
	s.Reset(model)
	return s
}

// ReleaseToChatStream returns s to the pool; s must not be used after.
func ReleaseToChatStream(s *ToChatStream) {
	s.Reset(nil)
	s.model, s.prefix, s.tmp, s.tmp2, s.usageRaw = keep(s.model), keep(s.prefix), keep(s.tmp), keep(s.tmp2), keep(s.usageRaw)
	s.keyBuf = keep(s.keyBuf)
	s.releaseSink()
	if cap(s.walked) > maxKeepParts {
		s.walked = nil
	}
	streamPool.Put(s)
}

// Reset starts a new stream whose chunks carry model.
func (s *ToChatStream) Reset(model []byte) {
	s.model = rawjson.AppendQuoteBytes(s.model[:0], model)
	s.prefix = s.prefix[:0]
	s.cur = rawjson.Cursor{}
	s.ev = walked{}
	clear(s.walked)
	s.walked = s.walked[:0]
	s.nextTool = 0
	s.finish = ""
	s.usage, s.usageSeen, s.usageRaw = transcode.Usage{}, false, s.usageRaw[:0]
	s.begun, s.started, s.finishSent, s.usageSent, s.ended = false, false, false, false, false
	s.err = nil
	s.sinkErr, s.ck = nil, chatchunk.Chunk{}
}

// Started reports whether content, reasoning, a tool call or a
// content_filter finish has been produced (the edge's commit point).
func (s *ToChatStream) Started() bool { return s.started }

// Usage returns the usage seen so far in chat terms.
func (s *ToChatStream) Usage() (transcode.Usage, bool) {
	s.readUsage()
	return s.usage, s.usageSeen
}

// readUsage converts the last usageMetadata kept.
func (s *ToChatStream) readUsage() {
	if len(s.usageRaw) > 0 && readUsage(s.usageRaw, &s.usage) {
		s.usageSeen = true
	}
	s.usageRaw = s.usageRaw[:0]
}

// Err returns the error the upstream reported in-band, or nil.
func (s *ToChatStream) Err() error {
	if s.err == nil {
		return nil
	}
	return s.err
}

// maxKeepParts bounds the parts a pooled stream keeps room for.
const maxKeepParts = 256

const (
	evCandidates = iota
	evUsage
	evFeedback
	evResponseID
	evError
)

var (
	eventKeys     = []string{"candidates", "usageMetadata", "promptFeedback", "responseId", "error"}
	candidateKeys = []string{"content", "finishReason"}
	partKeys      = []string{"text", "thought", "functionCall", "thoughtSignature"}
	callKeys      = []string{"name", "args", "id"}
)

// Event handles one GenerateContentResponse event (name is ignored: Gemini
// events are data-only). With a sink (SetSink) it appends what the sink
// made of the chunks and returns the sink's error, if any.
func (s *ToChatStream) Event(dst, _, data []byte) ([]byte, error) {
	dst, err := s.event(dst, data)
	if s.sinkErr != nil {
		err, s.sinkErr = s.sinkErr, nil
	}
	return dst, err
}

func (s *ToChatStream) event(dst, data []byte) ([]byte, error) {
	if s.ended {
		return dst, nil
	}
	data = trimWS(data)
	if len(data) == 0 {
		return dst, nil
	}
	if !s.walk(data) {
		// Slow path - nested JSON the single-pass walk rejects gets the
		// lenient generic reading (its answer for valid JSON is the same).
		return s.eventGeneric(dst, data)
	}
	ev := &s.ev
	if rawjson.KindOf(ev.errVal) == rawjson.Object {
		return s.errorEvent(dst, ev.errVal), nil
	}
	if !s.begun {
		s.buildPrefix(ev.responseID)
		dst = s.appendRoleChunk(dst)
	}
	if len(ev.usage) > 0 {
		s.usageRaw = append(s.usageRaw[:0], ev.usage...)
	}
	if ev.cand {
		for i := range s.walked {
			p := &s.walked[i]
			dst = s.part1(dst, p.text, p.thought, p.call, p.sig)
		}
		dst = s.finishReason(dst, ev.finish)
	}
	return s.feedback(dst, ev.feedback), nil
}

// errorEvent converts an in-band {"error": {...}} and ends the stream.
func (s *ToChatStream) errorEvent(dst, e []byte) []byte {
	s.err = upstreamError(e, &s.tmp2)
	msg := s.tmp2
	if len(msg) == 0 {
		msg = append(msg, "upstream stream failed"...)
		s.tmp2 = msg
	}
	return s.appendError(dst, transcode.ChatErrorType(s.err.Code), s.err.Code, msg)
}

// feedback converts promptFeedback: a blocked prompt ends the answer with
// content_filter.
func (s *ToChatStream) feedback(dst, fb []byte) []byte {
	if rawjson.KindOf(fb) == rawjson.Object && !s.finishSent {
		if r, _, ok := rawjson.Get(fb, "blockReason"); ok && rawjson.KindOf(r) == rawjson.String {
			s.finish = "content_filter"
			s.started = true // the caller gets the refusal, not a 502
			dst = s.appendFinishChunk(dst)
		}
	}
	return dst
}

// finishReason converts candidate 0's finishReason (a raw value or nil).
func (s *ToChatStream) finishReason(dst, raw []byte) []byte {
	if r := word(raw, &s.tmp); r != nil && !s.finishSent && string(r) != "FINISH_REASON_UNSPECIFIED" {
		s.finish = FinishReason(r, s.nextTool > 0)
		if s.finish == "content_filter" {
			s.started = true
		}
		dst = s.appendFinishChunk(dst)
	}
	return dst
}

// eventGeneric is Event by generic lookups (ScanTop per level, lenient
// about nested values); Event uses it for what walk rejects.
func (s *ToChatStream) eventGeneric(dst, data []byte) ([]byte, error) {
	var vals [5][]byte
	if rawjson.ScanTop(data, eventKeys, vals[:]) != nil {
		return dst, ErrMalformedEvent
	}
	if e := vals[evError]; rawjson.KindOf(e) == rawjson.Object {
		return s.errorEvent(dst, e), nil
	}
	if !s.begun {
		s.buildPrefix(vals[evResponseID])
		dst = s.appendRoleChunk(dst)
	}
	if u := vals[evUsage]; len(u) > 0 {
		s.usageRaw = append(s.usageRaw[:0], u...)
	}
	if c := vals[evCandidates]; rawjson.KindOf(c) == rawjson.Array {
		dst = s.candidates(dst, c)
	}
	return s.feedback(dst, vals[evFeedback]), nil
}

// candidates reads the first candidate of an event (eventGeneric).
func (s *ToChatStream) candidates(dst, arr []byte) []byte {
	var c rawjson.Cursor
	c.Reset(arr)
	if !c.Begin() || !c.More() {
		return dst
	}
	cand, _, _ := c.Value()
	var cv [2][]byte
	if rawjson.ScanTop(cand, candidateKeys, cv[:]) != nil {
		return dst
	}
	if parts, _, ok := rawjson.Get(cv[0], "parts"); ok && rawjson.KindOf(parts) == rawjson.Array {
		c.Reset(parts)
		if c.Begin() {
			for c.More() {
				p, _, _ := c.Value()
				var pv [4][]byte
				if rawjson.ScanTop(p, partKeys, pv[:]) == nil {
					dst = s.part1(dst, pv[0], pv[1], pv[2], pv[3])
				}
			}
		}
	}
	return s.finishReason(dst, cv[1])
}

// part1 converts one part from its text, thought, functionCall and
// thoughtSignature values (each raw, or nil when absent).
func (s *ToChatStream) part1(dst, text, thought, fc, sig []byte) []byte {
	if nonEmptyStr(text) {
		if isTrue(thought) {
			return s.appendDelta(dst, true, text)
		}
		return s.appendDelta(dst, false, text)
	}
	if rawjson.KindOf(fc) == rawjson.Object {
		var call [3][]byte
		if rawjson.ScanTop(fc, callKeys, call[:]) != nil || rawjson.KindOf(call[0]) != rawjson.String {
			return dst
		}
		return s.appendCall(dst, call[0], call[1], call[2], sig)
	}
	return dst
}

// buildPrefix builds everything a chunk carries before its choices.
func (s *ToChatStream) buildPrefix(id []byte) {
	p := append(s.prefix[:0], `{"id":`...)
	t := append(s.tmp2[:0], "chatcmpl-"...)
	n := len(t)
	if rawjson.KindOf(id) == rawjson.String {
		if u, err := rawjson.AppendUnquote(t, id); err == nil {
			t = u
		}
	}
	if len(t) == n {
		t = appendFallbackID(t)
	}
	s.tmp2 = t
	at := len(p)
	p = rawjson.AppendQuoteBytes(p, t)
	s.idSpan = span{at, len(p)}
	p = append(p, `,"object":"chat.completion.chunk","created":`...)
	at = len(p)
	p = strconv.AppendInt(p, time.Now().Unix(), 10)
	s.createdSpan = span{at, len(p)}
	p = append(p, `,"model":`...)
	at = len(p)
	p = append(p, s.model...)
	s.modelSpan = span{at, len(p)}
	p = append(p, `,"choices":[`...)
	s.prefix = p
	s.begun = true
}

func (s *ToChatStream) chunk(dst []byte) []byte {
	dst = append(dst, "data: "...)
	return append(dst, s.prefix...)
}

func (s *ToChatStream) begin(dst []byte) []byte {
	if s.begun {
		return dst
	}
	s.buildPrefix(nil)
	return s.appendRoleChunk(dst)
}

func (s *ToChatStream) appendRoleChunk(dst []byte) []byte {
	if s.sink != nil {
		return s.feedRole(dst)
	}
	dst = s.chunk(dst)
	return append(dst, `{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n"...)
}

// appendDelta appends a chunk whose delta has one member, content or (for
// reasoning) reasoning_content, set to the string literal val (normalised
// when it holds escapes).
func (s *ToChatStream) appendDelta(dst []byte, reasoning bool, val []byte) []byte {
	if s.sink != nil {
		return s.feedText(dst, reasoning, val)
	}
	n := len(dst)
	dst = s.chunk(dst)
	dst = append(dst, `{"index":0,"delta":{`...)
	if reasoning {
		dst = append(dst, `"reasoning_content":`...)
	} else {
		dst = append(dst, `"content":`...)
	}
	var ok bool
	if dst, ok = appendStr(dst, val, &s.tmp); !ok {
		return dst[:n]
	}
	s.started = true
	return append(dst, `},"finish_reason":null}]}`+"\n\n"...)
}

// appendCall appends the chunk of one whole function call: its name, args
// and id values and the part's thoughtSignature (raw, nil when absent).
func (s *ToChatStream) appendCall(dst, name, args, id, sig []byte) []byte {
	if s.sink != nil {
		return s.feedCall(dst, name, args, id, sig)
	}
	n := len(dst)
	dst = s.chunk(dst)
	dst = append(dst, `{"index":0,"delta":{"tool_calls":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(s.nextTool), 10)
	dst = append(dst, `,"id":`...)
	if nonEmptyStr(id) {
		dst = append(dst, id...)
	} else {
		s.tmp = appendCallID(s.tmp[:0], sig)
		dst = rawjson.AppendQuoteBytes(dst, s.tmp)
	}
	dst = append(dst, `,"type":"function","function":{"name":`...)
	var ok bool
	if dst, ok = appendStr(dst, name, &s.tmp); !ok {
		return dst[:n]
	}
	dst = append(dst, `,"arguments":`...)
	if rawjson.KindOf(args) == rawjson.Object {
		dst = rawjson.AppendQuoteBytes(dst, args)
	} else {
		dst = append(dst, `"{}"`...)
	}
	s.nextTool++
	s.started = true
	return append(dst, `}}]},"finish_reason":null}]}`+"\n\n"...)
}

func (s *ToChatStream) appendFinishChunk(dst []byte) []byte {
	s.finishSent = true
	if s.sink != nil {
		return s.feedFinish(dst)
	}
	dst = s.chunk(dst)
	dst = append(dst, `{"index":0,"delta":{},"finish_reason":"`...)
	dst = append(dst, s.finish...)
	return append(dst, `"}]}`+"\n\n"...)
}

func (s *ToChatStream) appendUsageChunk(dst []byte) []byte {
	if s.usageSent {
		return dst
	}
	s.usageSent = true
	s.readUsage()
	if s.sink != nil {
		return s.feedUsage(dst)
	}
	dst = s.chunk(dst)
	dst = append(dst, `],"usage":`...)
	dst = appendChatUsage(dst, &s.usage)
	return append(dst, "}\n\n"...)
}

// appendError appends the chat error frame and ends the stream.
func (s *ToChatStream) appendError(dst []byte, typ, code string, msg []byte) []byte {
	s.ended = true
	if typ == "" {
		typ = "server_error"
	}
	if s.sink != nil {
		return s.feedError(dst, typ, code, msg)
	}
	dst = append(dst, "data: "...)
	return append(appendErrorBody(dst, typ, code, msg), "\n\n"...)
}

// appendErrorBody appends the chat error body {"error":{...}}.
func appendErrorBody(dst []byte, typ, code string, msg []byte) []byte {
	dst = append(dst, `{"error":{"message":`...)
	dst = rawjson.AppendQuoteBytes(dst, msg)
	dst = append(dst, `,"type":`...)
	dst = rawjson.AppendQuote(dst, typ)
	dst = append(dst, `,"param":null,"code":`...)
	dst = rawjson.AppendQuote(dst, code)
	return append(dst, "}}"...)
}

// End appends the finish chunk if none came, the usage chunk and
// `data: [DONE]`. After an error frame it appends nothing.
func (s *ToChatStream) End(dst []byte) []byte {
	if s.ended {
		return dst
	}
	dst = s.begin(dst)
	if !s.finishSent {
		s.finish = FinishReason(nil, s.nextTool > 0)
		dst = s.appendFinishChunk(dst)
	}
	dst = s.appendUsageChunk(dst)
	s.ended = true
	if s.sink != nil {
		return s.feedDone(dst)
	}
	return append(dst, "data: [DONE]\n\n"...)
}

// Fail appends the chat error frame (no [DONE]); see transcode.Stream.
func (s *ToChatStream) Fail(dst []byte, code, message string) []byte {
	if s.ended {
		return dst
	}
	typ := transcode.ChatErrorType(code)
	if typ == "" {
		typ = "invalid_request_error"
	}
	s.tmp2 = append(s.tmp2[:0], message...)
	return s.appendError(dst, typ, code, s.tmp2)
}

// appendStr appends the string literal raw, re-quoted when it holds escapes
// so the output is canonical; false when raw is not a valid string.
func appendStr(dst, raw []byte, tmp *[]byte) ([]byte, bool) {
	if plainLiteral(raw) {
		// Fast path - no escapes or control bytes; Gemini sends UTF-8 as is.
		return append(dst, raw...), true
	}
	if rawjson.KindOf(raw) != rawjson.String {
		return dst, false
	}
	t, err := rawjson.AppendUnquote((*tmp)[:0], raw)
	if err != nil {
		return dst, false
	}
	*tmp = t
	return rawjson.AppendQuoteBytes(dst, t), true
}

// plainLiteral reports a string literal without escapes or control bytes.
func plainLiteral(raw []byte) bool {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return false
	}
	for _, c := range raw[1 : n-1] {
		if c == '\\' || c < 0x20 {
			return false
		}
	}
	return true
}
