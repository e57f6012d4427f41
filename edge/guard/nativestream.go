package guard

import (
	"bytes"
	"context"

	"gw/sse/rawjson"
)

// NativeFormat is the wire format of a native stream.
type NativeFormat uint8

const (
	NativeMessages  NativeFormat = iota // Anthropic Messages events
	NativeResponses                     // OpenAI Responses events
)

// NativeStream is the output policy of a native stream (the caller's own
// format relayed as the upstream wrote it: thinking signatures, encrypted
// reasoning and sequence numbers intact). Text, thinking and tool-input
// deltas are held in their block's window and each event is released,
// unchanged, once all the text it carries has been judged; any other event
// first has everything before it judged. A block ends the stream.
//
// A mask rewrites the events of the channel it hit from then on: each
// held event of that channel is released, once a later event of the
// channel is held (or the channel's text is all released), carrying the
// masked text released so far (possibly empty), so the concatenated
// deltas are the masked text and no event is ever released ahead of its
// judgment. On Responses streams the .done events, content_part.done,
// output_item.done and the final response object repeat the masked text.
// Reasoning (Messages thinking, signed; Responses reasoning and summary
// text, which the final reasoning item repeats next to its encrypted
// content) is never rewritten: a mask there records mask_unsupported
// (would_mask_unsupported in monitor mode) and the text passes. Not safe
// for concurrent use; pooled by the caller.
type NativeStream struct {
	ctx    context.Context
	e      *Exec
	model  string
	stages []*Stage
	pol    StreamPolicy
	format NativeFormat
	chans  []nchannel
	cur    *nchannel
	off    bool
	raw    int64
	text   bool // an event carrying text was released
	masked bool // some channel has been masked (its events are rewritten)

	held  []heldEvent // events not yet released, in order
	arena []byte      // their names and data
	q     []heldEvent // released events (spans of arena)
	qPos  int
	rel   []byte
	tmp   []byte
	vt    []byte // scratch: a repeated text, unquoted
	obuf  []byte // rewritten released events' data
	qt    []byte // scratch: a quoted text
	dt    []byte // scratch: a rewritten inner object
	it    []byte // scratch: a rewritten item
	ar    []byte // scratch: a rewritten array
}

type nchannel struct {
	key      int64 // block index (Messages) or output_index<<20 | content_index (Responses)
	part     Part
	w        Window
	pushed   int64  // text bytes pushed
	released int64  // text bytes released
	fixed    bool   // signed or repeated beside encrypted content: never rewritten
	masked   bool   // a window of this channel was masked: its events are rewritten
	out      []byte // released text not yet carried by a released event
	full     []byte // all released text (Responses: the .done events repeat it)
}

// maxPooledFull bounds the capacity of a channel's copy of its released
// text kept across pooled streams.
const maxPooledFull = 256 << 10

type heldEvent struct {
	name, data [2]int // spans of arena
	ch         int    // channel index, -1 for an event without text
	end        int64  // the channel's text position at the end of this event's text
	n          int64  // text bytes this event carries
	own        bool   // data is a span of obuf (rewritten), not of arena
	final      bool   // already reduced to what may pass: never rewritten
}

// Reset prepares s for a native stream of format f.
func (s *NativeStream) Reset(ctx context.Context, e *Exec, model string, stages []*Stage, f NativeFormat) {
	s.ctx, s.e, s.model, s.stages, s.format = ctx, e, model, stages, f
	s.pol = Policy(stages)
	for i := range s.chans {
		s.chans[i].w.Reset()
	}
	s.chans, s.cur, s.off, s.raw, s.text, s.masked = s.chans[:0], nil, false, 0, false, false
	s.held, s.arena, s.q, s.qPos, s.obuf = s.held[:0], s.arena[:0], s.q[:0], 0, s.obuf[:0]
}

// Next returns the next released event (name, data), valid until the next
// Push, or false.
func (s *NativeStream) Next() (name, data []byte, ok bool) {
	if s.qPos >= len(s.q) {
		s.q, s.qPos, s.obuf = s.q[:0], 0, s.obuf[:0]
		s.compact()
		return nil, nil, false
	}
	h := s.q[s.qPos]
	s.qPos++
	if h.own {
		return s.arena[h.name[0]:h.name[1]], s.obuf[h.data[0]:h.data[1]], true
	}
	return s.arena[h.name[0]:h.name[1]], s.arena[h.data[0]:h.data[1]], true
}

// TextReleased reports whether an event carrying text has been released:
// with an output policy, a native stream commits (200) only then, so a
// block of the first judged text is still answered 422.
func (s *NativeStream) TextReleased() bool { return s.text }

// Pending reports whether a released event is waiting.
func (s *NativeStream) Pending() bool { return s.qPos < len(s.q) }

// JudgeWindow implements WindowJudge for the channel being pushed; a mask
// switches the channel to rewritten events.
func (s *NativeStream) JudgeWindow(text []byte) ([]byte, Decision) {
	e := s.e
	e.clearTexts()
	e.AddText(Text{Role: RoleAssistant, Part: s.cur.part, Data: text}, s.cur.fixed, true)
	d := e.Judge(s.ctx, Output, s.model, s.stages)
	if d == Masked {
		s.cur.masked, s.masked = true, true
		return e.req.Texts[0].Data, d
	}
	return text, d
}

// released records text the window of c released.
func (s *NativeStream) released(c *nchannel) {
	c.released += int64(len(s.rel))
	c.out = append(c.out, s.rel...)
	if s.format == NativeResponses {
		c.full = append(c.full, s.rel...)
	}
}

// Push reads one upstream event. A decision of Blocked or Unavailable ends
// the stream.
func (s *NativeStream) Push(name, data []byte) Decision {
	if s.off {
		s.hold(name, data, -1, 0)
		s.releaseReady()
		return Pass
	}
	key, part, text, ok := s.textOf(name, data)
	if !ok && bytes.Equal(name, evPing) {
		// A keep-alive carries nothing: it waits its turn without forcing
		// what is held to be judged early (a ping between the two halves
		// of a word must not split the window).
		s.hold(name, data, -1, 0)
		s.releaseReady()
		return Pass
	}
	if !ok {
		if d := s.flushAll(); d >= Blocked {
			return d
		}
		if unreadable(data) {
			if s.format == NativeResponses && s.masked && repeatsText(name) {
				// A masked stream's event that repeats the deltas' text,
				// malformed: which block it repeats cannot be read, so
				// only its type passes.
				s.tmp = append(s.tmp[:0], `{"type":`...)
				s.tmp = rawjson.AppendQuoteBytes(s.tmp, name)
				s.tmp = append(s.tmp, '}')
				s.hold(name, s.tmp, -1, 0)
				s.held[len(s.held)-1].final = true
				s.releaseReady()
				return Pass
			}
			// An event the filter cannot read cannot be judged: the chain's
			// fail-open rules decide, as for chat chunks.
			if d := s.e.Unreadable(Output, s.stages); d >= Blocked {
				return d
			}
		}
		if s.format == NativeResponses {
			if typ := respType(name, data); repeatsText(typ) {
				if d := s.checkRepeated(typ, data); d >= Blocked {
					return d
				}
			}
		}
		s.hold(name, data, -1, 0)
		s.releaseReady()
		return Pass
	}
	ci := s.channel(key, part)
	// Text on another block: what other blocks hold came first.
	for i := range s.chans {
		if i != ci && s.chans[i].w.Held() > 0 && !s.pol.Full {
			if d := s.flush(i); d >= Blocked {
				return d
			}
		}
	}
	s.tmp = s.tmp[:0]
	v, err := rawjson.AppendUnquote(s.tmp, text)
	if err != nil {
		v = v[:0]
	}
	s.tmp = v
	c := &s.chans[ci]
	c.pushed += int64(len(v))
	s.hold(name, data, ci, c.pushed)
	s.held[len(s.held)-1].n = int64(len(v))
	s.raw += int64(len(data))
	s.cur = c
	var d Decision
	s.rel, d = c.w.Push(s.rel[:0], v, s)
	s.released(c)
	if d >= Blocked {
		return d
	}
	s.releaseReady()
	return s.checkBuffer()
}

// End judges everything held (the upstream stream ended).
func (s *NativeStream) End() Decision {
	if s.off {
		return Pass
	}
	if d := s.flushAll(); d >= Blocked {
		return d
	}
	return Pass
}

// compact moves the held events to the front of the arena once every
// released event has been handed out, so the arena stays as small as what
// is held.
func (s *NativeStream) compact() {
	if len(s.held) == 0 {
		s.arena = s.arena[:0]
		return
	}
	start := s.held[0].name[0]
	if start == 0 {
		return
	}
	s.arena = s.arena[:copy(s.arena, s.arena[start:])]
	for i := range s.held {
		h := &s.held[i]
		h.name[0] -= start
		h.name[1] -= start
		h.data[0] -= start
		h.data[1] -= start
	}
}

func (s *NativeStream) hold(name, data []byte, ch int, end int64) {
	h := heldEvent{ch: ch, end: end}
	h.name[0] = len(s.arena)
	s.arena = append(s.arena, name...)
	h.name[1] = len(s.arena)
	h.data[0] = len(s.arena)
	s.arena = append(s.arena, data...)
	h.data[1] = len(s.arena)
	s.held = append(s.held, h)
}

// releaseReady moves the held events whose text is all released to the
// output queue, in order.
func (s *NativeStream) releaseReady() {
	n := 0
	for n < len(s.held) {
		h := s.held[n]
		if h.ch < 0 {
			if s.masked && s.format == NativeResponses && !h.final {
				s.rewriteDone(&h)
			}
			s.q = append(s.q, h)
			n++
			continue
		}
		c := &s.chans[h.ch]
		if !c.masked {
			if c.released < h.end {
				break
			}
			// Unchanged: the event carries its own text, the head of out.
			c.out = c.out[:copy(c.out, c.out[min(h.n, int64(len(c.out))):])]
			s.text = true
			s.q = append(s.q, h)
			n++
			continue
		}
		// Rewritten: the text released so far goes into this event; it
		// may go only when a later event of the channel can carry what is
		// still held.
		if c.w.Held() > 0 && !s.heldAfter(n, h.ch) {
			break
		}
		s.rewriteText(&h, c.out)
		if len(c.out) > 0 {
			s.text = true
		}
		c.out = c.out[:0]
		s.q = append(s.q, h)
		n++
	}
	if n > 0 {
		s.raw = 0
		s.held = s.held[:copy(s.held, s.held[n:])]
	}
}

func (s *NativeStream) channel(key int64, part Part) int {
	for i := range s.chans {
		if s.chans[i].key == key {
			return i
		}
	}
	if len(s.chans) < cap(s.chans) {
		s.chans = s.chans[:len(s.chans)+1]
	} else {
		s.chans = append(s.chans, nchannel{})
	}
	c := &s.chans[len(s.chans)-1]
	c.key, c.part, c.pushed, c.released = key, part, 0, 0
	c.fixed, c.masked, c.out, c.full = part == PartReasoning, false, c.out[:0], c.full[:0]
	if cap(c.full) > maxPooledFull {
		c.full = nil // a long answer's copy must not stay in the pool
	}
	c.w.Reset()
	c.w.Size, c.w.Overlap, c.w.Full = s.pol.Size, s.pol.Overlap, s.pol.Full
	return len(s.chans) - 1
}

func (s *NativeStream) flush(i int) Decision {
	c := &s.chans[i]
	s.cur = c
	var d Decision
	s.rel, d = c.w.End(s.rel[:0], s)
	s.released(c)
	return d
}

func (s *NativeStream) flushAll() Decision {
	for i := range s.chans {
		if d := s.flush(i); d >= Blocked {
			return d
		}
	}
	s.releaseReady()
	return Pass
}

func (s *NativeStream) checkBuffer() Decision {
	var held int64
	for i := range s.chans {
		held += int64(s.chans[i].w.Held())
	}
	if held <= s.pol.MaxBytes && s.raw <= s.pol.RawCap {
		return Pass
	}
	if s.pol.FailOpen {
		s.e.Outcome.Bypass(BypassBufferExceeded)
		for i := range s.chans {
			c := &s.chans[i]
			s.rel = c.w.Drain(s.rel[:0])
			s.released(c)
		}
		s.releaseReady()
		s.off = true
		return Pass
	}
	if s.pol.first != nil {
		s.e.Outcome.hit(s.pol.first, HitBlockedBufferExceeded)
	}
	return Blocked
}

var (
	evBlockDelta     = []byte("content_block_delta")
	evPing           = []byte("ping")
	respTextDelta    = []byte("response.output_text.delta")
	respRefusalDelta = []byte("response.refusal.delta")
	respReasonDelta  = []byte("response.reasoning_text.delta")
	respSummaryDelta = []byte("response.reasoning_summary_text.delta")
	respArgsDelta    = []byte("response.function_call_arguments.delta")
)

// textOf returns the text an event carries (a raw JSON string), its
// channel key and part; ok is false for events without text.
func (s *NativeStream) textOf(name, data []byte) (key int64, part Part, text []byte, ok bool) {
	if s.format == NativeMessages {
		if !bytes.Equal(name, evBlockDelta) {
			if len(name) > 0 || !bytes.Contains(data, evBlockDelta) {
				return 0, 0, nil, false
			}
		}
		idx, _, _ := rawjson.Get(data, "index")
		n, _ := rawjson.ParseInt(idx)
		delta, dk, ok := rawjson.Get(data, "delta")
		if !ok || dk != rawjson.Object {
			return 0, 0, nil, false
		}
		t, _, _ := rawjson.Get(delta, "type")
		var field string
		switch {
		case rawjson.StringEquals(t, "text_delta"):
			field, part = "text", PartContent
		case rawjson.StringEquals(t, "thinking_delta"):
			field, part = "thinking", PartReasoning
		case rawjson.StringEquals(t, "input_json_delta"):
			field, part = "partial_json", PartToolArguments
		default:
			return 0, 0, nil, false
		}
		v, vk, ok := rawjson.Get(delta, field)
		if !ok || vk != rawjson.String {
			return 0, 0, nil, false
		}
		return n, part, v, true
	}
	typ := respType(name, data)
	switch {
	case bytes.Equal(typ, respTextDelta), bytes.Equal(typ, respRefusalDelta):
		part = PartContent
	case bytes.Equal(typ, respReasonDelta), bytes.Equal(typ, respSummaryDelta):
		part = PartReasoning
	case bytes.Equal(typ, respArgsDelta):
		part = PartToolArguments
	default:
		return 0, 0, nil, false
	}
	v, vk, ok := rawjson.Get(data, "delta")
	if !ok || vk != rawjson.String {
		return 0, 0, nil, false
	}
	oi, _, _ := rawjson.Get(data, "output_index")
	ci, _, _ := rawjson.Get(data, "content_index")
	if ci == nil {
		ci, _, _ = rawjson.Get(data, "summary_index")
	}
	o, _ := rawjson.ParseInt(oi)
	c, _ := rawjson.ParseInt(ci)
	return o<<20 | c, part, v, true
}
