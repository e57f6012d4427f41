package guard

import (
	"context"
	"strconv"

	"gw/admin/resources"
	"gw/sse/rawjson"
)

// Channel kinds of a chat stream: each is released through its own window.
const (
	chanContent uint8 = iota
	chanReasoning
	chanRefusal
	chanTool
)

type channel struct {
	choice int
	kind   uint8
	tool   int    // tool call index (chanTool)
	field  string // the delta member the upstream used (reasoning_content or reasoning)
	w      Window
}

// StreamPolicy is the output chain's streaming policy, merged over its
// stages: the smallest window, the largest overlap, buffer_full if any
// stage asks for it, the smallest max_buffer_bytes, and fail-open on a
// buffer overflow only when every stage says on_buffer_exceeded: fail_open.
type StreamPolicy struct {
	Size, Overlap int
	Full          bool
	MaxBytes      int64
	RawCap        int64
	FailOpen      bool
	first         *Stage // records blocked_buffer_exceeded
}

// Policy computes the streaming policy of an output chain.
func Policy(stages []*Stage) StreamPolicy {
	p := StreamPolicy{FailOpen: true}
	for i, st := range stages {
		if i == 0 {
			p.first = st
		}
		g := st.G
		size, overlap := int64(DefaultWindowSize), int64(DefaultWindowOverlap)
		if b, ok := st.Checker.(Buffered); ok && b.BuffersFull() {
			p.Full = true // kind semantic: always the whole answer
		}
		if sc := g.Stream; sc != nil {
			if sc.Mode == resources.StreamModeBufferFull {
				p.Full = true
			}
			if sc.WindowSize > 0 {
				size, overlap = sc.WindowSize, sc.WindowOverlapSize
			}
		}
		if p.Size == 0 || int(size) < p.Size {
			p.Size = int(size)
		}
		if int(overlap) > p.Overlap {
			p.Overlap = int(overlap)
		}
		maxb, open := resources.DefaultGuardrailMaxBufferBytes, false
		if b := g.Buffer; b != nil {
			maxb, open = b.MaxBytes, b.OnExceeded == resources.OnBufferExceededFailOpen
		}
		if p.MaxBytes == 0 || maxb < p.MaxBytes {
			p.MaxBytes = maxb
		}
		if !open {
			p.FailOpen = false
			if p.first == nil || !p.first.monitor {
				p.first = st
			}
		}
	}
	if p.Size < 16 {
		p.Size = 16
	}
	if p.Overlap > p.Size/2 {
		p.Overlap = p.Size / 2
	}
	b := resources.BufferControls{MaxBytes: p.MaxBytes}
	p.RawCap = b.RawCap()
	return p
}

// ChatStream is the output policy of a chat-completions stream (the pivot
// every converted stream passes through): every text, reasoning and
// tool-argument delta is held in its channel's window until judged, and
// released in chunks gw writes itself; chunks carrying anything else (the
// role, a tool call's id and name, finish_reason, usage) pass in order,
// after the text before them has been judged and released. Not safe for
// concurrent use; pooled by the caller.
type ChatStream struct {
	ctx    context.Context
	e      *Exec
	model  string
	stages []*Stage
	pol    StreamPolicy
	chans  []channel
	cur    *channel // the channel being judged (JudgeWindow)
	off    bool     // bypassed after a buffer overflow (fail_open): chunks pass as they are
	raw    int64    // raw bytes absorbed since text was last released

	// The template of gw's text chunks: the upstream's own id, created and model.
	id, created, mdl []byte

	q     []byte // released chunk payloads, back to back
	qEnd  []int  // end offset of each in q
	qPos  int    // next chunk to hand out
	rel   []byte // released text of one push
	tmp   []byte
	strip []byte
	spans [][2]int
	texts []pending
}

// pending is one text of the chunk being read.
type pending struct {
	choice, tool int
	kind         uint8
	field        string
	val          []byte // the raw string literal
}

// Reset prepares s for a stream judged by stages (the merged output chain)
// with e's outcome.
func (s *ChatStream) Reset(ctx context.Context, e *Exec, model string, stages []*Stage) {
	s.ctx, s.e, s.model, s.stages = ctx, e, model, stages
	s.pol = Policy(stages)
	for i := range s.chans {
		s.chans[i].w.Reset()
	}
	s.chans, s.cur, s.off, s.raw = s.chans[:0], nil, false, 0
	s.id, s.created, s.mdl = s.id[:0], s.created[:0], s.mdl[:0]
	s.q, s.qEnd, s.qPos = s.q[:0], s.qEnd[:0], 0
}

// Next returns the next released chunk payload, or false.
func (s *ChatStream) Next() ([]byte, bool) {
	if s.qPos >= len(s.qEnd) {
		s.q, s.qEnd, s.qPos = s.q[:0], s.qEnd[:0], 0
		return nil, false
	}
	start := 0
	if s.qPos > 0 {
		start = s.qEnd[s.qPos-1]
	}
	end := s.qEnd[s.qPos]
	s.qPos++
	return s.q[start:end:end], true
}

// Pending reports whether a released chunk is waiting.
func (s *ChatStream) Pending() bool { return s.qPos < len(s.qEnd) }

func (s *ChatStream) emit(chunk []byte) {
	s.q = append(s.q, chunk...)
	s.qEnd = append(s.qEnd, len(s.q))
}

// JudgeWindow implements WindowJudge for the channel being pushed.
func (s *ChatStream) JudgeWindow(text []byte) ([]byte, Decision) {
	e := s.e
	e.clearTexts()
	part := PartContent
	switch s.cur.kind {
	case chanReasoning:
		part = PartReasoning
	case chanTool:
		part = PartToolArguments
	}
	e.AddText(Text{Role: RoleAssistant, Part: part, Data: text}, false, true)
	d := e.Judge(s.ctx, Output, s.model, s.stages)
	if d == Masked {
		return e.req.Texts[0].Data, d
	}
	return text, d
}

// Push reads one upstream chunk payload (not [DONE]). A decision other than
// Pass or Masked ends the stream: Blocked (content_filter) or Unavailable.
func (s *ChatStream) Push(data []byte) Decision {
	if s.off {
		s.emit(data)
		return Pass
	}
	if unreadable(data) {
		// A chunk the filter cannot read cannot be judged: the chain's
		// fail-open rules decide, and what is held before it goes first.
		if d := s.e.Unreadable(Output, s.stages); d >= Blocked {
			return d
		}
		if d := s.flushAll(); d >= Blocked {
			return d
		}
		s.emit(data)
		return Pass
	}
	s.texts, s.spans = s.texts[:0], s.spans[:0]
	lead, rest := s.scan(data)
	if len(s.texts) == 0 && !rest {
		// Carries nothing (an empty content delta): it passes without
		// forcing what is held to be judged early.
		s.emit(data)
		return Pass
	}
	if len(s.texts) == 0 {
		if d := s.flushAll(); d >= Blocked {
			return d
		}
		s.emit(data)
		return Pass
	}
	stripped := data
	if rest {
		s.strip = s.strip[:0]
		pos := 0
		for _, sp := range s.spans {
			s.strip = append(append(s.strip, data[pos:sp[0]]...), `""`...)
			pos = sp[1]
		}
		s.strip = append(s.strip, data[pos:]...)
		stripped = s.strip
	}
	if rest && lead {
		if d := s.flushAll(); d >= Blocked {
			return d
		}
		s.emit(stripped)
	}
	s.raw += int64(len(data))
	for i := range s.texts {
		if d := s.pushText(&s.texts[i]); d >= Blocked {
			return d
		}
	}
	if rest && !lead {
		if d := s.flushAll(); d >= Blocked {
			return d
		}
		s.emit(stripped)
	}
	return s.checkBuffer()
}

// End judges everything held (the upstream stream ended).
func (s *ChatStream) End() Decision {
	if s.off {
		return Pass
	}
	return s.flushAll()
}

// scan collects the chunk's texts and tells whether it carries anything
// else (rest) and whether that comes before its text (lead: the role, a
// tool call's id or name).
func (s *ChatStream) scan(data []byte) (lead, rest bool) {
	var choices []byte
	_ = rawjson.ForEachKey(data, func(key, val []byte, k rawjson.Kind) bool {
		switch {
		case rawjson.NameIs(key, "choices"):
			if k == rawjson.Array {
				choices = val
			}
		case rawjson.NameIs(key, "id"):
			s.id = append(s.id[:0], val...)
		case rawjson.NameIs(key, "created"):
			s.created = append(s.created[:0], val...)
		case rawjson.NameIs(key, "model"):
			s.mdl = append(s.mdl[:0], val...)
		case rawjson.NameIs(key, "object"), rawjson.NameIs(key, "system_fingerprint"),
			rawjson.NameIs(key, "service_tier"), rawjson.NameIs(key, "obfuscation"):
			// Carried by every chunk: not a boundary (obfuscation is padding).
		default:
			if k != rawjson.Null {
				rest = true // usage and anything unknown
			}
		}
		return true
	})
	if choices == nil {
		return false, true
	}
	nChoices := 0
	_ = rawjson.ForEachElem(choices, func(_ int, ch []byte, k rawjson.Kind) bool {
		nChoices++
		if k != rawjson.Object {
			rest = true
			return true
		}
		idx := 0
		if v, vk, ok := rawjson.Get(ch, "index"); ok && vk == rawjson.Number {
			n, _ := rawjson.ParseInt(v)
			idx = int(n)
		}
		_ = rawjson.ForEachKey(ch, func(key, val []byte, vk rawjson.Kind) bool {
			switch {
			case rawjson.NameIs(key, "index"):
			case rawjson.NameIs(key, "logprobs"):
				// Log probabilities repeat the text token by token: they
				// are dropped with the chunk (gw's own text chunks carry
				// none), never released ahead of the judged text.
			case rawjson.NameIs(key, "delta"):
				if vk == rawjson.Object {
					l, r := s.scanDelta(data, idx, val)
					lead, rest = lead || l, rest || r
				}
			default:
				if vk != rawjson.Null {
					rest = true // finish_reason, logprobs
				}
			}
			return true
		})
		return true
	})
	if nChoices == 0 {
		rest = true
	}
	return lead, rest
}

func (s *ChatStream) scanDelta(data []byte, choice int, delta []byte) (lead, rest bool) {
	_ = rawjson.ForEachKey(delta, func(key, val []byte, k rawjson.Kind) bool {
		switch {
		case k == rawjson.Null:
		case rawjson.NameIs(key, "content") && k == rawjson.String:
			s.text(data, choice, chanContent, 0, "", val)
		case rawjson.NameIs(key, "refusal") && k == rawjson.String:
			s.text(data, choice, chanRefusal, 0, "", val)
		case rawjson.NameIs(key, "reasoning_content") && k == rawjson.String:
			s.text(data, choice, chanReasoning, 0, "reasoning_content", val)
		case rawjson.NameIs(key, "reasoning") && k == rawjson.String:
			s.text(data, choice, chanReasoning, 0, "reasoning", val)
		case rawjson.NameIs(key, "tool_calls") && k == rawjson.Array:
			_ = rawjson.ForEachElem(val, func(i int, tc []byte, tk rawjson.Kind) bool {
				if tk != rawjson.Object {
					rest = true
					return true
				}
				ti := i
				_ = rawjson.ForEachKey(tc, func(tkey, tval []byte, vk rawjson.Kind) bool {
					switch {
					case rawjson.NameIs(tkey, "index"):
						if n, ok := rawjson.ParseInt(tval); ok {
							ti = int(n)
						}
					case rawjson.NameIs(tkey, "function") && vk == rawjson.Object:
						_ = rawjson.ForEachKey(tval, func(fk, fv []byte, fvk rawjson.Kind) bool {
							if rawjson.NameIs(fk, "arguments") && fvk == rawjson.String {
								s.text(data, choice, chanTool, ti, "", fv)
							} else if fvk != rawjson.Null {
								lead, rest = true, true // the function's name
							}
							return true
						})
					case vk != rawjson.Null:
						lead, rest = true, true // id, type
					}
					return true
				})
				return true
			})
		case rawjson.NameIs(key, "role"):
			lead, rest = true, true
		default:
			rest = true
		}
		return true
	})
	return lead, rest
}

// text records one text of the chunk; the empty string carries nothing.
func (s *ChatStream) text(data []byte, choice int, kind uint8, tool int, field string, val []byte) {
	if len(val) <= 2 {
		return
	}
	start := offsetIn(data, val)
	s.spans = append(s.spans, [2]int{start, start + len(val)})
	s.texts = append(s.texts, pending{choice: choice, tool: tool, kind: kind, field: field, val: val})
}

func (s *ChatStream) channel(t *pending) *channel {
	for i := range s.chans {
		c := &s.chans[i]
		if c.choice == t.choice && c.kind == t.kind && c.tool == t.tool {
			return c
		}
	}
	if len(s.chans) < cap(s.chans) {
		s.chans = s.chans[:len(s.chans)+1]
	} else {
		s.chans = append(s.chans, channel{})
	}
	c := &s.chans[len(s.chans)-1]
	c.choice, c.kind, c.tool, c.field = t.choice, t.kind, t.tool, t.field
	c.w.Reset()
	c.w.Size, c.w.Overlap, c.w.Full = s.pol.Size, s.pol.Overlap, s.pol.Full
	return c
}

func (s *ChatStream) pushText(t *pending) Decision {
	c := s.channel(t)
	// Text on a new channel: what other channels hold came first.
	for i := range s.chans {
		o := &s.chans[i]
		if o != c && o.w.Held() > 0 && !s.pol.Full {
			if d := s.flush(o); d >= Blocked {
				return d
			}
		}
	}
	s.tmp = s.tmp[:0]
	v, err := rawjson.AppendUnquote(s.tmp, t.val)
	if err != nil {
		return Pass
	}
	s.tmp = v
	s.cur = c
	var d Decision
	s.rel, d = c.w.Push(s.rel[:0], v, s)
	if len(s.rel) > 0 {
		s.emitText(c, s.rel)
	}
	return d
}

// flush judges what c holds and releases it.
func (s *ChatStream) flush(c *channel) Decision {
	s.cur = c
	var d Decision
	s.rel, d = c.w.End(s.rel[:0], s)
	if len(s.rel) > 0 {
		s.emitText(c, s.rel)
	}
	return d
}

func (s *ChatStream) flushAll() Decision {
	for i := range s.chans {
		if d := s.flush(&s.chans[i]); d >= Blocked {
			return d
		}
	}
	return Pass
}

// checkBuffer applies max_buffer_bytes and the raw-byte cap to what is held.
func (s *ChatStream) checkBuffer() Decision {
	var held int64
	for i := range s.chans {
		held += int64(s.chans[i].w.Held())
	}
	if held == 0 {
		s.raw = 0
	}
	if held <= s.pol.MaxBytes && s.raw <= s.pol.RawCap {
		return Pass
	}
	if s.pol.FailOpen {
		s.e.Outcome.Bypass(BypassBufferExceeded)
		for i := range s.chans {
			c := &s.chans[i]
			if s.rel = c.w.Drain(s.rel[:0]); len(s.rel) > 0 {
				s.emitText(c, s.rel)
			}
		}
		s.off = true
		return Pass
	}
	if s.pol.first != nil {
		s.e.Outcome.hit(s.pol.first, HitBlockedBufferExceeded)
	}
	return Blocked
}

// emitText queues a chunk of gw's own carrying released text of c, in the
// upstream's id, created and model.
func (s *ChatStream) emitText(c *channel, text []byte) {
	s.raw = 0
	q := append(s.q, `{"id":`...)
	q = appendOr(q, s.id, `""`)
	q = append(q, `,"object":"chat.completion.chunk","created":`...)
	q = appendOr(q, s.created, `0`)
	q = append(q, `,"model":`...)
	q = appendOr(q, s.mdl, `""`)
	q = append(q, `,"choices":[{"index":`...)
	q = strconv.AppendInt(q, int64(c.choice), 10)
	q = append(q, `,"delta":{`...)
	switch c.kind {
	case chanContent:
		q = append(q, `"content":`...)
	case chanRefusal:
		q = append(q, `"refusal":`...)
	case chanReasoning:
		q = append(append(append(q, '"'), c.field...), `":`...)
	case chanTool:
		q = append(q, `"tool_calls":[{"index":`...)
		q = strconv.AppendInt(q, int64(c.tool), 10)
		q = append(q, `,"function":{"arguments":`...)
	}
	q = rawjson.AppendQuoteBytes(q, text)
	if c.kind == chanTool {
		q = append(q, "}}]"...)
	}
	q = append(q, `},"finish_reason":null}]}`...)
	s.q = q
	s.qEnd = append(s.qEnd, len(s.q))
}

func appendOr(dst, v []byte, def string) []byte {
	if len(v) == 0 {
		return append(dst, def...)
	}
	return append(dst, v...)
}
