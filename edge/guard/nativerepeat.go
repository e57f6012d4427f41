package guard

import (
	"bytes"

	"gw/sse/rawjson"
)

// The checking half of the Responses events that repeat text (the .done
// events, content_part.done, output_item.done, the final response): what
// they repeat is compared with what the deltas of its block released, so
// text that no delta carried never passes unjudged.
//
// - A block whose repeated text equals its judged text passes byte for byte
//   (the common case: one comparison per repeated text).
// - A block whose repeated text differs is rewritten to its judged text,
//   as a masked block is: the caller sees the text that was judged.
// - Text of a block no delta carried (an upstream that sends only the
//   final events) is judged here, whole; masked, it is rewritten.

// respType returns the Responses event type: the SSE event name, or the
// data's "type" when the event has no name.
func respType(name, data []byte) []byte {
	if len(name) > 0 {
		return name
	}
	if t, tk, ok := rawjson.Get(data, "type"); ok && tk == rawjson.String {
		return t[1 : len(t)-1]
	}
	return nil
}

// checkRepeated judges the texts a Responses event of type typ repeats.
func (s *NativeStream) checkRepeated(typ, data []byte) Decision {
	d := Pass
	s.eachRepeated(typ, data, func(key int64, part Part, raw []byte) bool {
		d = s.verifyRepeated(key, part, raw)
		return d < Blocked
	})
	return d
}

// verifyRepeated checks one repeated text (raw: a JSON string) of block key.
func (s *NativeStream) verifyRepeated(key int64, part Part, raw []byte) Decision {
	v, err := rawjson.AppendUnquote(s.vt[:0], raw)
	s.vt = v
	ci := s.channel(key, part)
	c := &s.chans[ci]
	if c.pushed == 0 && err == nil && len(v) > 0 {
		// No delta carried this block's text: judged now, whole.
		c.pushed = int64(len(v))
		s.cur = c
		var d Decision
		s.rel, d = c.w.Push(s.rel[:0], v, s)
		s.released(c)
		if d >= Blocked {
			return d
		}
		if d := s.flush(ci); d >= Blocked {
			return d
		}
		c.out = c.out[:0] // no delta event carries it
	}
	if c.fixed || (err == nil && bytes.Equal(c.full, v)) {
		return Pass
	}
	// Differs from what was judged (or cannot be read): rewritten to it.
	c.masked, s.masked = true, true
	return Pass
}

// eachRepeated calls fn with each text a Responses event of type typ
// repeats: its block key (as textOf computes it), part and raw JSON string.
// fn returns false to stop.
func (s *NativeStream) eachRepeated(typ, data []byte, fn func(key int64, part Part, raw []byte) bool) {
	switch {
	case bytes.Equal(typ, respTextDone), bytes.Equal(typ, respRefusalDone), bytes.Equal(typ, respArgsDone):
		field, part := "text", PartContent
		switch {
		case bytes.Equal(typ, respRefusalDone):
			field = "refusal"
		case bytes.Equal(typ, respArgsDone):
			field, part = "arguments", PartToolArguments
		}
		if v, vk, _ := rawjson.Get(data, field); vk == rawjson.String {
			fn(blockKey(data), part, v)
		}
	case bytes.Equal(typ, respPartDone):
		if p, pk, _ := rawjson.Get(data, "part"); pk == rawjson.Object {
			if v, ok := partText(p); ok {
				fn(blockKey(data), PartContent, v)
			}
		}
	case bytes.Equal(typ, respItemDone):
		oi, _, _ := rawjson.Get(data, "output_index")
		o, _ := rawjson.ParseInt(oi)
		if item, ik, _ := rawjson.Get(data, "item"); ik == rawjson.Object {
			eachItemText(item, o, fn)
		}
	case bytes.Equal(typ, respCompleted), bytes.Equal(typ, respIncomplete), bytes.Equal(typ, respFailedEv):
		resp, rk, _ := rawjson.Get(data, "response")
		if rk != rawjson.Object {
			return
		}
		if output, ok, _ := rawjson.Get(resp, "output"); ok == rawjson.Array {
			rawjson.ForEachElem(output, func(i int, v []byte, k rawjson.Kind) bool {
				return k != rawjson.Object || eachItemText(v, int64(i), fn)
			})
		}
	}
}

// eachItemText calls fn with the texts of output item o (a message's
// content parts, a function call's arguments); false when fn stopped.
func eachItemText(item []byte, o int64, fn func(key int64, part Part, raw []byte) bool) bool {
	t, _, _ := rawjson.Get(item, "type")
	switch {
	case rawjson.StringEquals(t, respTypeFuncCall):
		if v, vk, _ := rawjson.Get(item, "arguments"); vk == rawjson.String {
			return fn(o<<20, PartToolArguments, v)
		}
	case rawjson.StringEquals(t, respTypeMessage):
		content, ck, _ := rawjson.Get(item, "content")
		if ck != rawjson.Array {
			return true
		}
		more := true
		rawjson.ForEachElem(content, func(i int, p []byte, k rawjson.Kind) bool {
			if k != rawjson.Object {
				return true
			}
			if v, ok := partText(p); ok {
				more = fn(o<<20|int64(i), PartContent, v)
			}
			return more
		})
		return more
	}
	return true
}

// partText returns the text of a content part (output_text: text,
// refusal: refusal) as a raw JSON string.
func partText(p []byte) ([]byte, bool) {
	t, _, _ := rawjson.Get(p, "type")
	field := "text"
	if rawjson.StringEquals(t, "refusal") {
		field = "refusal"
	}
	v, vk, _ := rawjson.Get(p, field)
	return v, vk == rawjson.String
}

// blockKey is the block key of an event with output_index and
// content_index, as textOf computes it for deltas.
func blockKey(data []byte) int64 {
	oi, _, _ := rawjson.Get(data, "output_index")
	ci, _, _ := rawjson.Get(data, "content_index")
	o, _ := rawjson.ParseInt(oi)
	c, _ := rawjson.ParseInt(ci)
	return o<<20 | c
}
