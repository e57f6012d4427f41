package guard

import (
	"bytes"
	"strconv"

	"gw/sse/rawjson"
)

// The rewriting half of NativeStream: only events of a masked stream come
// here, so a stream without a mask hit never pays for it.

var (
	respTextDone     = []byte("response.output_text.done")
	respRefusalDone  = []byte("response.refusal.done")
	respArgsDone     = []byte("response.function_call_arguments.done")
	respPartDone     = []byte("response.content_part.done")
	respItemDone     = []byte("response.output_item.done")
	respCompleted    = []byte("response.completed")
	respIncomplete   = []byte("response.incomplete")
	respFailedEv     = []byte("response.failed")
	respTypeFuncCall = "function_call"
	respTypeMessage  = "message"
)

// heldAfter reports whether a held event after s.held[n] carries text of
// channel ch.
func (s *NativeStream) heldAfter(n, ch int) bool {
	for _, h := range s.held[n+1:] {
		if h.ch == ch {
			return true
		}
	}
	return false
}

// setOwn makes h's data the bytes of s.obuf from start on.
func (s *NativeStream) setOwn(h *heldEvent, start int) {
	h.own = true
	h.data[0], h.data[1] = start, len(s.obuf)
}

// data returns the data of a held (not yet rewritten) event.
func (s *NativeStream) data(h *heldEvent) []byte { return s.arena[h.data[0]:h.data[1]] }

// rewriteText sets the text of the delta event h to text. An event the
// edit fails on (malformed beyond what was read of it) is replaced by a
// minimal delta of its kind carrying text: its own text must not pass.
func (s *NativeStream) rewriteText(h *heldEvent, text []byte) {
	data := s.data(h)
	s.qt = rawjson.AppendQuoteBytes(s.qt[:0], text)
	start := len(s.obuf)
	var err error
	if s.format == NativeResponses {
		s.obuf, err = rawjson.Set(s.obuf, data, "delta", s.qt)
	} else {
		delta, _, _ := rawjson.Get(data, "delta")
		t, _, _ := rawjson.Get(delta, "type")
		field := "text"
		if rawjson.StringEquals(t, "input_json_delta") {
			field = "partial_json"
		}
		s.dt, err = rawjson.Set(s.dt[:0], delta, field, s.qt)
		if err == nil {
			s.obuf, err = rawjson.Set(s.obuf, data, "delta", s.dt)
		}
	}
	if err != nil {
		s.obuf = s.obuf[:start]
		s.minimalDelta(h, text)
	}
	s.setOwn(h, start)
}

// minimalDelta appends to obuf the smallest valid delta event of h's kind
// carrying text.
func (s *NativeStream) minimalDelta(h *heldEvent, text []byte) {
	data := s.data(h)
	if s.format == NativeMessages {
		idx, _, _ := rawjson.Get(data, "index")
		n, _ := rawjson.ParseInt(idx)
		delta, _, _ := rawjson.Get(data, "delta")
		t, _, _ := rawjson.Get(delta, "type")
		s.obuf = append(s.obuf, `{"type":"content_block_delta","index":`...)
		s.obuf = strconv.AppendInt(s.obuf, int64(n), 10)
		if rawjson.StringEquals(t, "input_json_delta") {
			s.obuf = append(s.obuf, `,"delta":{"type":"input_json_delta","partial_json":`...)
		} else {
			s.obuf = append(s.obuf, `,"delta":{"type":"text_delta","text":`...)
		}
		s.obuf = rawjson.AppendQuoteBytes(s.obuf, text)
		s.obuf = append(s.obuf, "}}"...)
		return
	}
	key := s.chans[h.ch].key
	s.obuf = append(s.obuf, `{"type":`...)
	s.obuf = rawjson.AppendQuoteBytes(s.obuf, s.arena[h.name[0]:h.name[1]])
	s.obuf = append(s.obuf, `,"output_index":`...)
	s.obuf = strconv.AppendInt(s.obuf, int64(key>>20), 10)
	s.obuf = append(s.obuf, `,"content_index":`...)
	s.obuf = strconv.AppendInt(s.obuf, int64(key&(1<<20-1)), 10)
	s.obuf = append(s.obuf, `,"delta":`...)
	s.obuf = rawjson.AppendQuoteBytes(s.obuf, text)
	s.obuf = append(s.obuf, '}')
}

// repeatsText reports whether a Responses event (by its SSE event name)
// repeats the text of earlier deltas, so that rewriteDone edits it on a
// masked stream.
func repeatsText(name []byte) bool {
	for _, n := range [...][]byte{respTextDone, respRefusalDone, respArgsDone, respPartDone, respItemDone, respCompleted, respIncomplete, respFailedEv} {
		if bytes.Equal(name, n) {
			return true
		}
	}
	return false
}

// maskedChannel returns the masked channel with key, or nil.
func (s *NativeStream) maskedChannel(key int64) *nchannel {
	for i := range s.chans {
		if c := &s.chans[i]; c.key == key && c.masked {
			return c
		}
	}
	return nil
}

// rewriteDone puts the masked text into a Responses event that repeats
// the text of its deltas: the .done events, content_part.done,
// output_item.done and the final response object.
func (s *NativeStream) rewriteDone(h *heldEvent) {
	data := s.data(h)
	typ := respType(s.arena[h.name[0]:h.name[1]], data)
	start := len(s.obuf)
	var err error
	edited := false
	switch {
	case bytes.Equal(typ, respTextDone), bytes.Equal(typ, respRefusalDone), bytes.Equal(typ, respArgsDone):
		ch := s.maskedChannel(blockKey(data))
		if ch == nil {
			return
		}
		field := "text"
		switch {
		case bytes.Equal(typ, respRefusalDone):
			field = "refusal"
		case bytes.Equal(typ, respArgsDone):
			field = "arguments"
		}
		s.qt = rawjson.AppendQuoteBytes(s.qt[:0], ch.full)
		s.obuf, err = rawjson.Set(s.obuf, data, field, s.qt)
		edited = true
	case bytes.Equal(typ, respPartDone):
		key := blockKey(data)
		part, pk, _ := rawjson.Get(data, "part")
		if s.maskedChannel(key) == nil || pk != rawjson.Object {
			return
		}
		var ok bool
		s.dt, ok = s.appendPart(s.dt[:0], part, key)
		if !ok {
			return
		}
		s.obuf, err = rawjson.Set(s.obuf, data, "part", s.dt)
		edited = true
	case bytes.Equal(typ, respItemDone):
		oi, _, _ := rawjson.Get(data, "output_index")
		o, _ := rawjson.ParseInt(oi)
		item, ik, _ := rawjson.Get(data, "item")
		if ik != rawjson.Object {
			return
		}
		var ok bool
		s.it, ok = s.appendItem(s.it[:0], item, o)
		if !ok {
			return
		}
		s.obuf, err = rawjson.Set(s.obuf, data, "item", s.it)
		edited = true
	case bytes.Equal(typ, respCompleted), bytes.Equal(typ, respIncomplete), bytes.Equal(typ, respFailedEv):
		resp, rk, _ := rawjson.Get(data, "response")
		if rk != rawjson.Object {
			return
		}
		output, ok2, _ := rawjson.Get(resp, "output")
		if ok2 != rawjson.Array {
			return
		}
		changed := false
		s.ar = append(s.ar[:0], '[')
		rawjson.ForEachElem(output, func(i int, v []byte, k rawjson.Kind) bool {
			if i > 0 {
				s.ar = append(s.ar, ',')
			}
			if k == rawjson.Object {
				var done bool
				s.it, done = s.appendItem(s.it[:0], v, int64(i))
				if done {
					s.ar = append(s.ar, s.it...)
					changed = true
					return true
				}
			}
			s.ar = append(s.ar, v...)
			return true
		})
		if !changed {
			return
		}
		s.ar = append(s.ar, ']')
		s.dt, err = rawjson.Set(s.dt[:0], resp, "output", s.ar)
		if err == nil {
			s.obuf, err = rawjson.Set(s.obuf, data, "response", s.dt)
		}
		edited = true
	}
	if !edited {
		return
	}
	if err != nil {
		// Malformed beyond what was read of it: the unmasked text it
		// repeats must not pass, so only its type does.
		s.obuf = append(s.obuf[:start], `{"type":`...)
		s.obuf = rawjson.AppendQuoteBytes(s.obuf, typ)
		s.obuf = append(s.obuf, '}')
	}
	s.setOwn(h, start)
}

// appendItem appends to dst the output item at output index o with the
// masked text of its channels; false when none of them is masked.
func (s *NativeStream) appendItem(dst, item []byte, o int64) ([]byte, bool) {
	t, _, _ := rawjson.Get(item, "type")
	switch {
	case rawjson.StringEquals(t, respTypeFuncCall):
		ch := s.maskedChannel(o << 20)
		if ch == nil {
			return dst, false
		}
		s.qt = rawjson.AppendQuoteBytes(s.qt[:0], ch.full)
		out, err := rawjson.Set(dst, item, "arguments", s.qt)
		return out, err == nil
	case rawjson.StringEquals(t, respTypeMessage):
		content, ck, _ := rawjson.Get(item, "content")
		if ck != rawjson.Array {
			return dst, false
		}
		// The content array is rebuilt in a scratch slice of its own, as
		// parts are edited into s.dt.
		var arr []byte
		changed := false
		arr = append(arr, '[')
		rawjson.ForEachElem(content, func(i int, v []byte, k rawjson.Kind) bool {
			if i > 0 {
				arr = append(arr, ',')
			}
			if k == rawjson.Object && s.maskedChannel(o<<20|int64(i)) != nil {
				var ok bool
				if arr, ok = s.appendPart(arr, v, o<<20|int64(i)); ok {
					changed = true
					return true
				}
			}
			arr = append(arr, v...)
			return true
		})
		if !changed {
			return dst, false
		}
		arr = append(arr, ']')
		out, err := rawjson.Set(dst, item, "content", arr)
		return out, err == nil
	}
	return dst, false
}

// appendPart appends to dst the content part with the masked text of
// channel key (output_text: text, refusal: refusal).
func (s *NativeStream) appendPart(dst, part []byte, key int64) ([]byte, bool) {
	ch := s.maskedChannel(key)
	if ch == nil {
		return dst, false
	}
	t, _, _ := rawjson.Get(part, "type")
	field := "text"
	if rawjson.StringEquals(t, "refusal") {
		field = "refusal"
	}
	s.qt = rawjson.AppendQuoteBytes(s.qt[:0], ch.full)
	n := len(dst)
	out, err := rawjson.Set(dst, part, field, s.qt)
	if err != nil {
		return dst[:n], false
	}
	return out, true
}
