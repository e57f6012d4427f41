package gemini

import (
	"bytes"

	"gw/sse/rawjson"
)

// walked is what one pass over an event found: raw spans of the event, nil
// when absent. Duplicate keys follow encoding/json (the last one wins) at
// every level, as the generic reading does.
type walked struct {
	cand                                bool   // candidates is an array: candidate 0's parts and finish were read
	finish                              []byte // candidate 0's finishReason
	usage, feedback, responseID, errVal []byte
}

// walkedPart is one part of candidate 0's content.parts (object parts only).
type walkedPart struct{ text, thought, call, sig []byte }

// The generic reading insists that an object ends with '}' (rawjson.Cursor
// alone accepts either closer), so every object level of the walk checks
// Closer.

// walk reads the members Event needs from data in one forward pass: every
// byte of the event is scanned once, descending into candidates[0].content
// .parts instead of skipping candidates whole and reading it again level by
// level. It returns false on input whose walked levels are malformed (the
// caller then falls back to eventGeneric, which decides what such input
// means).
func (s *ToChatStream) walk(data []byte) bool {
	c := &s.cur
	c.Reset(data)
	s.ev = walked{}
	s.walked = s.walked[:0]
	if c.Kind() != rawjson.Object || !c.Begin() {
		return false
	}
	for c.More() {
		k, ok := s.key()
		if !ok {
			return false
		}
		switch string(k) {
		case "candidates":
			s.ev.cand, s.ev.finish, s.walked = false, nil, s.walked[:0]
			if c.Kind() == rawjson.Array {
				if !s.walkCandidates() {
					return false
				}
				s.ev.cand = true
				continue
			}
		case "usageMetadata":
			s.ev.usage, _, _ = c.Value()
			continue
		case "promptFeedback":
			s.ev.feedback, _, _ = c.Value()
			continue
		case "responseId":
			s.ev.responseID, _, _ = c.Value()
			continue
		case "error":
			s.ev.errVal, _, _ = c.Value()
			continue
		}
		c.Value()
	}
	return c.End() == nil && c.Closer() == '}'
}

// key reads a member's key: its text, decoded into s.key when it is
// spelled with escapes; false on malformed input.
func (s *ToChatStream) key() ([]byte, bool) {
	k, esc := s.cur.Key()
	if k == nil {
		return nil, false
	}
	if !esc || bytes.IndexByte(k, '\\') < 0 {
		// No escape (esc also marks a name in capitals or with non-ASCII
		// bytes, which KeyIs folds): the name is its own text.
		return k[1 : len(k)-1], true
	}
	t, err := rawjson.AppendUnquote(s.keyBuf[:0], k)
	if err != nil {
		return nil, false
	}
	s.keyBuf = t
	return t, true
}

// walkCandidates reads the candidates array at the cursor: the first
// element when it is an object, the others skipped.
func (s *ToChatStream) walkCandidates() bool {
	c := &s.cur
	if !c.Begin() {
		return false
	}
	for first := true; c.More(); first = false {
		if first && c.Kind() == rawjson.Object {
			if !s.walkCandidate() {
				return false
			}
			continue
		}
		c.Value()
	}
	return c.Err() == nil
}

// walkCandidate reads candidate 0: content.parts and finishReason.
func (s *ToChatStream) walkCandidate() bool {
	c := &s.cur
	if !c.Begin() {
		return false
	}
	for c.More() {
		k, ok := s.key()
		if !ok {
			return false
		}
		switch string(k) {
		case "content":
			s.walked = s.walked[:0]
			if c.Kind() == rawjson.Object {
				if !s.walkContent() {
					return false
				}
				continue
			}
		case "finishReason":
			s.ev.finish, _, _ = c.Value()
			continue
		}
		c.Value()
	}
	return c.Err() == nil && c.Closer() == '}'
}

// walkContent reads a content object's parts.
func (s *ToChatStream) walkContent() bool {
	c := &s.cur
	if !c.Begin() {
		return false
	}
	for c.More() {
		k, ok := s.key()
		if !ok {
			return false
		}
		if string(k) == "parts" {
			s.walked = s.walked[:0]
			if c.Kind() == rawjson.Array {
				if !s.walkParts() {
					return false
				}
				continue
			}
		}
		c.Value()
	}
	return c.Err() == nil && c.Closer() == '}'
}

// walkParts reads a parts array; elements other than objects are skipped
// (they carry nothing a chat caller gets).
func (s *ToChatStream) walkParts() bool {
	c := &s.cur
	if !c.Begin() {
		return false
	}
	for c.More() {
		if c.Kind() != rawjson.Object {
			c.Value()
			continue
		}
		var p walkedPart
		if !c.Begin() {
			return false
		}
		for c.More() {
			k, ok := s.key()
			if !ok {
				return false
			}
			switch string(k) {
			case "text":
				p.text, _, _ = c.Value()
			case "thought":
				p.thought, _, _ = c.Value()
			case "functionCall":
				p.call, _, _ = c.Value()
			case "thoughtSignature":
				p.sig, _, _ = c.Value()
			default:
				c.Value()
			}
		}
		if c.Err() != nil || c.Closer() != '}' {
			return false
		}
		s.walked = append(s.walked, p)
	}
	return c.Err() == nil
}
