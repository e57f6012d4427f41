package gemini

import (
	"strconv"

	"gw/sse/chatchunk"
	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// A second stage fed directly (SetSink): a Messages or Responses caller in
// front of a Gemini upstream is served by ToChatStream and the second stage
// (sse/msgconv, sse/respconv) without chat JSON between them. For each chat
// chunk ToChatStream would write, it fills a chatchunk.Chunk with what the
// second stage would have read from that chunk and hands it to the sink's
// Feed: the same members (texts as the same normalised string literals,
// the same tool-call id, name and quoted arguments, the same finish
// reason), the tool call split into its members and the usage already
// counted. The caller's events are byte for byte those of the two stages
// chained (TestSinkMatchesChained, FuzzGeminiSink); what is saved is
// writing every chunk as JSON and walking it again, about half of a Gemini
// event's cost for these callers (docs/PERFORMANCE.md "Gemini direct to
// Messages/Responses (gemconv)").

// sinkState is ToChatStream's state for a sink.
type sinkState struct {
	sink    chatchunk.Sink
	sinkErr error // the sink's first error during the current call
	ck      chatchunk.Chunk

	// Where the chat id, created and model literals are in prefix.
	idSpan, createdSpan, modelSpan span

	lit, idLit, args, index, errBody []byte // scratch literals handed to the sink
}

// span is a value's place in prefix.
type span struct{ from, to int }

// SetSink makes the stream hand its chunks to sink instead of writing them:
// Event and End then append what sink.Feed appends (the caller's events),
// and Event returns the sink's error. Call it after Reset, before the first
// event; nil restores chat output. ReleaseToChatStream clears it.
func (s *ToChatStream) SetSink(sink chatchunk.Sink) { s.sink = sink }

// Content reports whether the chunks so far include one a chat caller would
// see content in (text, reasoning, a tool call or a finish reason): the
// commit point of a relay that reads the chunks themselves (edge/stream.go
// hasContent), for a relay that feeds a sink.
func (s *ToChatStream) Content() bool { return s.started || s.finishSent }

// ErrorBody returns the chat error body ({"error":{...}}) of the in-band
// error that ended a stream with a sink (nil when none): what a relay of the
// chat chunks would have answered with before its commit point. Valid until
// the next Reset.
func (s *ToChatStream) ErrorBody() []byte {
	if s.sink == nil || s.err == nil {
		return nil
	}
	return s.errBody
}

func (s *ToChatStream) releaseSink() {
	s.sink, s.sinkErr, s.ck = nil, nil, chatchunk.Chunk{}
	s.lit, s.idLit, s.args, s.index, s.errBody = keep(s.lit), keep(s.idLit), keep(s.args), keep(s.index), keep(s.errBody)
}

var (
	litZero     = []byte("0")
	litNull     = []byte("null")
	litEmpty    = []byte(`""`)
	litEmptyObj = []byte(`"{}"`)

	litStop          = []byte(`"stop"`)
	litLength        = []byte(`"length"`)
	litToolCalls     = []byte(`"tool_calls"`)
	litContentFilter = []byte(`"content_filter"`)
)

// emit hands s.ck to the sink.
func (s *ToChatStream) emit(dst []byte) []byte {
	dst, err := s.sink.Feed(dst, &s.ck)
	if err != nil && s.sinkErr == nil {
		s.sinkErr = err
	}
	return dst
}

// top fills what every chunk of the stream carries before choices (the
// same id, created and model in every chunk: set once, while ck.ID is nil).
func (s *ToChatStream) top() *chatchunk.Chunk {
	ck := s.clean()
	if ck.ID == nil {
		p := s.prefix
		ck.ID = p[s.idSpan.from:s.idSpan.to:s.idSpan.to]
		ck.Created = p[s.createdSpan.from:s.createdSpan.to:s.createdSpan.to]
		ck.Model = p[s.modelSpan.from:s.modelSpan.to:s.modelSpan.to]
	}
	ck.Choices = true
	return ck
}

// clean returns s.ck without the members the last chunk set but the
// stream's id, created and model (top's). Clearing only those, instead of
// the whole Chunk, is a tenth of a Gemini event's cost.
func (s *ToChatStream) clean() *chatchunk.Chunk {
	ck := &s.ck
	ck.Error = nil
	ck.Choices, ck.Choice, ck.DeltaObject, ck.Index, ck.Finish = false, false, false, nil, nil
	ck.Content, ck.ReasoningContent = nil, nil
	if ck.HasCall {
		ck.HasCall, ck.Call = false, chatchunk.ToolCall{}
	}
	if ck.HasCounted {
		ck.HasCounted, ck.Counted = false, transcode.Usage{}
	}
	ck.Done = false
	return ck
}

// untop is clean for a chunk without the stream's members (the error
// frame, [DONE]).
func (s *ToChatStream) untop() *chatchunk.Chunk {
	ck := s.clean()
	ck.ID, ck.Created, ck.Model = nil, nil, nil
	return ck
}

// choice fills top and a choice 0 with a delta object and no finish reason
// ({"index":0,"delta":{...},"finish_reason":null}).
func (s *ToChatStream) choice() *chatchunk.Chunk {
	ck := s.top()
	ck.Choice, ck.Index, ck.DeltaObject, ck.Finish = true, litZero, true, litNull
	return ck
}

// feedRole: the first chunk, delta {role: assistant, content: ""}.
func (s *ToChatStream) feedRole(dst []byte) []byte {
	s.choice().Content = litEmpty
	return s.emit(dst)
}

// feedText: a content or reasoning_content delta (nothing when val is not a
// valid string literal, as appendDelta).
func (s *ToChatStream) feedText(dst []byte, reasoning bool, val []byte) []byte {
	lit, ok := s.literal(&s.lit, val)
	if !ok {
		return dst
	}
	s.started = true
	ck := s.choice()
	if reasoning {
		ck.ReasoningContent = lit
	} else {
		ck.Content = lit
	}
	return s.emit(dst)
}

// literal returns the string literal raw as a chat chunk carries it: raw
// itself when it has no escapes or control bytes, else re-quoted into *buf.
func (s *ToChatStream) literal(buf *[]byte, raw []byte) ([]byte, bool) {
	if plainLiteral(raw) {
		// Fast path - as appendStr, the literal is copied as it is.
		return raw, true
	}
	b, ok := appendStr((*buf)[:0], raw, &s.tmp)
	*buf = b
	return b, ok
}

// feedCall: one whole function call, as appendCall writes it.
func (s *ToChatStream) feedCall(dst, name, args, id, sig []byte) []byte {
	idLit := id
	if !nonEmptyStr(id) {
		s.tmp = appendCallID(s.tmp[:0], sig)
		s.idLit = rawjson.AppendQuoteBytes(s.idLit[:0], s.tmp)
		idLit = s.idLit
	}
	nameLit, ok := s.literal(&s.lit, name)
	if !ok {
		return dst
	}
	argsLit := litEmptyObj
	if rawjson.KindOf(args) == rawjson.Object {
		s.args = rawjson.AppendQuoteBytes(s.args[:0], args)
		argsLit = s.args
	}
	s.index = strconv.AppendInt(s.index[:0], int64(s.nextTool), 10)
	s.nextTool++
	s.started = true
	ck := s.choice()
	ck.HasCall = true
	ck.Call = chatchunk.ToolCall{Index: s.index, ID: idLit, Function: true, Name: nameLit, Arguments: argsLit}
	return s.emit(dst)
}

// feedFinish: delta {} and finish_reason s.finish.
func (s *ToChatStream) feedFinish(dst []byte) []byte {
	ck := s.choice()
	switch s.finish {
	case "length":
		ck.Finish = litLength
	case "tool_calls":
		ck.Finish = litToolCalls
	case "content_filter":
		ck.Finish = litContentFilter
	default:
		ck.Finish = litStop
	}
	return s.emit(dst)
}

// feedUsage: the usage chunk (choices [], the usage counted).
func (s *ToChatStream) feedUsage(dst []byte) []byte {
	ck := s.top()
	ck.HasCounted, ck.Counted = true, s.usage
	return s.emit(dst)
}

// feedError: the error chunk; its body is kept for ErrorBody.
func (s *ToChatStream) feedError(dst []byte, typ, code string, msg []byte) []byte {
	s.errBody = appendErrorBody(s.errBody[:0], typ, code, msg)
	n := len(`{"error":`)
	ck := s.untop()
	ck.Error = s.errBody[n : len(s.errBody)-1 : len(s.errBody)-1]
	return s.emit(dst)
}

// feedDone: data: [DONE].
func (s *ToChatStream) feedDone(dst []byte) []byte {
	s.untop().Done = true
	return s.emit(dst)
}
