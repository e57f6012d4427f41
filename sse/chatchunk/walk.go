// Package chatchunk reads a chat completions stream chunk in one forward
// pass: the members the second-stage converters (sse/msgconv,
// sse/respconv) need, from the top level down into choices[i].delta.
//
// The converters used to read a chunk level by level (the top with
// ForEachKey or ScanTop, skipping choices whole, then each choice, then its
// delta), scanning the delta's bytes three or four times. A Walker descends
// instead, with a key switch per level, and keeps raw spans. It accepts
// only input whose walked levels are well formed (objects closed by '}',
// arrays by ']', keys whose escapes decode); on anything else Walk returns
// false and the caller reads the chunk its generic way, which decides what
// malformed input means. On input Walk accepts, both readings agree (each
// converter checks this with a test and a fuzz target).
package chatchunk

import (
	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// Chunk is what one walk found: raw spans, nil when absent. Duplicate keys
// follow encoding/json (the last one wins) at every level, as the
// converters' generic readings do.
type Chunk struct {
	ID, Created, Model, Usage, Error []byte

	// Choices reports that the (last) choices member is an array; Choice
	// that one of its object elements was accepted (the first whose index
	// the accept function of Walk takes): the members below are its.
	Choices, Choice bool

	Index, Finish []byte
	// DeltaObject reports that the choice's (last) delta is an object; its
	// members follow.
	DeltaObject bool

	Content, ReasoningContent, Reasoning, Refusal, ToolCalls, ThinkingBlocks []byte

	// Members only a source converter fills (see Sink); Walk leaves them
	// zero.
	HasCall    bool
	Call       ToolCall
	HasCounted bool
	Counted    transcode.Usage
	Done       bool
}

func (ck *Chunk) clearChoice() {
	ck.Choice, ck.Index, ck.Finish = false, nil, nil
	ck.clearDelta()
}

func (ck *Chunk) clearDelta() {
	ck.DeltaObject = false
	ck.Content, ck.ReasoningContent, ck.Reasoning, ck.Refusal, ck.ToolCalls, ck.ThinkingBlocks = nil, nil, nil, nil, nil, nil
}

// Walker walks chunks; the zero value is ready. Not safe for concurrent
// use. The repeated prefix it keeps is a copy; its cursor refers to the
// last chunk until the next Walk.
type Walker struct {
	cur    rawjson.Cursor
	keyBuf []byte

	// prefix is the start of the last chunk walked, up to the key of its
	// choices member, when only members without a role here (id, object,
	// created, model, system_fingerprint, ...) came before it: a stream's
	// chunks repeat it byte for byte, so the next chunk that starts with it
	// resumes the walk at choices. id, created and model are kept as
	// offsets into it (span; n == 0 when absent).
	prefix               []byte
	id, created, model   span
	pendID, pendC, pendM span
	pendPrefix           int // where choices' key starts in the chunk being walked, or 0
}

// maxPrefix bounds the prefix a Walker keeps (a pooled converter keeps its
// Walker): real streams repeat 100–300 bytes before choices.
const maxPrefix = 4096

// span is a value's place in a chunk.
type span struct{ off, n int }

func (p span) of(data []byte) []byte {
	if p.n <= 0 {
		return nil
	}
	return data[p.off : p.off+p.n : p.off+p.n]
}

func spanOf(data, v []byte) span {
	if v == nil {
		return span{}
	}
	return span{rawjson.Offset(data, v), len(v)}
}

// Walk reads data into ck. accept decides, from the raw index member of an
// object element of choices (nil when absent), whether that element is the
// choice the converter follows; elements after the accepted one are
// skipped. It returns false, with ck in no particular state, on input whose
// walked levels are malformed.
func (w *Walker) Walk(data []byte, ck *Chunk, accept func(index []byte) bool) bool {
	c := &w.cur
	*ck = Chunk{}
	w.pendPrefix = 0
	if p := len(w.prefix); p > 0 && len(data) > p && string(data[:p]) == string(w.prefix) {
		// Fast path - the members before choices are the last chunk's.
		c.ResumeMember(data, p)
		ck.ID, ck.Created, ck.Model = w.id.of(data), w.created.of(data), w.model.of(data)
		return w.members(data, ck, accept, true)
	}
	c.Reset(data)
	if c.Kind() != rawjson.Object || !c.Begin() {
		return false
	}
	return w.members(data, ck, accept, false)
}

// members reads the top-level members from the cursor on; resumed tells
// that a prefix was skipped (so the chunk's prefix is not recorded again).
func (w *Walker) members(data []byte, ck *Chunk, accept func([]byte) bool, resumed bool) bool {
	c := &w.cur
	plain := !resumed // only members without a role so far
	for next := resumed; next || c.More(); next = false {
		// (A resumed cursor is at a key already.)
		at := c.Pos()
		k, ok := w.key()
		if !ok {
			return false
		}
		switch string(k) {
		case "choices":
			if plain && at > 1 && at <= maxPrefix {
				w.pendPrefix = at
				w.pendID, w.pendC, w.pendM = spanOf(data, ck.ID), spanOf(data, ck.Created), spanOf(data, ck.Model)
			}
			plain = false
			ck.Choices = false
			ck.clearChoice()
			if c.Kind() == rawjson.Array {
				if !w.choices(ck, accept) {
					return false
				}
				ck.Choices = true
				continue
			}
		case "usage":
			plain = false
			ck.Usage, _, _ = c.Value()
			continue
		case "error":
			plain = false
			ck.Error, _, _ = c.Value()
			continue
		case "id":
			ck.ID, _, _ = c.Value()
			continue
		case "created":
			ck.Created, _, _ = c.Value()
			continue
		case "model":
			ck.Model, _, _ = c.Value()
			continue
		}
		c.Value()
	}
	if c.End() != nil || c.Closer() != '}' {
		return false
	}
	if p := w.pendPrefix; p > 0 {
		w.prefix = append(w.prefix[:0], data[:p]...)
		w.id, w.created, w.model = w.pendID, w.pendC, w.pendM
	}
	return true
}

// key reads a member's key: its text, or, when it is spelled with escapes,
// capitals or non-ASCII bytes, its lower-case folded text in keyBuf (the
// switches name members in lower case); false on malformed input.
func (w *Walker) key() ([]byte, bool) {
	k, esc := w.cur.Key()
	if k == nil {
		return nil, false
	}
	if !esc {
		return k[1 : len(k)-1], true
	}
	// Escapes, capitals or non-ASCII bytes: the name decoded and folded to
	// lower case, as the generic readers match it.
	t, err := rawjson.AppendNameLower(w.keyBuf[:0], k)
	if err != nil {
		return nil, false
	}
	w.keyBuf = t
	return t, true
}

// choices reads the choices array at the cursor.
func (w *Walker) choices(ck *Chunk, accept func([]byte) bool) bool {
	c := &w.cur
	if !c.Begin() {
		return false
	}
	for c.More() {
		if ck.Choice || c.Kind() != rawjson.Object {
			c.Value()
			continue
		}
		if !w.choice(ck) {
			return false
		}
		if accept(ck.Index) {
			ck.Choice = true
		} else {
			ck.clearChoice()
		}
	}
	return c.Err() == nil && c.Closer() == ']'
}

// choice reads one choice object: index, finish_reason and delta.
func (w *Walker) choice(ck *Chunk) bool {
	c := &w.cur
	if !c.Begin() {
		return false
	}
	for c.More() {
		k, ok := w.key()
		if !ok {
			return false
		}
		switch string(k) {
		case "index":
			ck.Index, _, _ = c.Value()
			continue
		case "finish_reason":
			ck.Finish, _, _ = c.Value()
			continue
		case "delta":
			ck.clearDelta()
			if c.Kind() == rawjson.Object {
				if !w.delta(ck) {
					return false
				}
				ck.DeltaObject = true
				continue
			}
		}
		c.Value()
	}
	return c.Err() == nil && c.Closer() == '}'
}

// delta reads a delta object's members.
func (w *Walker) delta(ck *Chunk) bool {
	c := &w.cur
	if !c.Begin() {
		return false
	}
	for c.More() {
		k, ok := w.key()
		if !ok {
			return false
		}
		var v *[]byte
		switch string(k) {
		case "content":
			v = &ck.Content
		case "reasoning_content":
			v = &ck.ReasoningContent
		case "reasoning":
			v = &ck.Reasoning
		case "refusal":
			v = &ck.Refusal
		case "tool_calls":
			v = &ck.ToolCalls
		case "thinking_blocks":
			v = &ck.ThinkingBlocks
		default:
			c.Value()
			continue
		}
		*v, _, _ = c.Value()
	}
	return c.Err() == nil && c.Closer() == '}'
}

// ToolCall is what a walk of one delta.tool_calls element found: raw
// spans, nil when absent (duplicate keys: the last wins).
type ToolCall struct {
	Index, ID []byte
	// Function reports that the (last) function member is an object; Name
	// and Arguments are its members.
	Function        bool
	Name, Arguments []byte
}

// WalkToolCall reads one tool_calls element (an object) into tc in one
// pass, descending into function. It returns false on input whose walked
// levels are malformed; the caller then reads the element its generic way.
func (w *Walker) WalkToolCall(raw []byte, tc *ToolCall) bool {
	c := &w.cur
	c.Reset(raw)
	*tc = ToolCall{}
	if c.Kind() != rawjson.Object || !c.Begin() {
		return false
	}
	for c.More() {
		k, ok := w.key()
		if !ok {
			return false
		}
		switch string(k) {
		case "index":
			tc.Index, _, _ = c.Value()
			continue
		case "id":
			tc.ID, _, _ = c.Value()
			continue
		case "function":
			tc.Function, tc.Name, tc.Arguments = false, nil, nil
			if c.Kind() == rawjson.Object {
				if !w.function(tc) {
					return false
				}
				tc.Function = true
				continue
			}
		}
		c.Value()
	}
	return c.End() == nil && c.Closer() == '}'
}

func (w *Walker) function(tc *ToolCall) bool {
	c := &w.cur
	if !c.Begin() {
		return false
	}
	for c.More() {
		k, ok := w.key()
		if !ok {
			return false
		}
		switch string(k) {
		case "name":
			tc.Name, _, _ = c.Value()
		case "arguments":
			tc.Arguments, _, _ = c.Value()
		default:
			c.Value()
		}
	}
	return c.Err() == nil && c.Closer() == '}'
}
