package guard

import (
	"bytes"
	"errors"

	"gw/sse/rawjson"
)

// Format is a JSON body shape the extractor knows: the caller's request on
// each model surface, and the buffered answer of each.
type Format uint8

const (
	ChatRequest      Format = iota // chat completions: messages
	MessagesRequest                // Messages and count_tokens: system, messages
	ResponsesRequest               // Responses: instructions, input
	ChatAnswer                     // chat completion: choices[].message
	MessagesAnswer                 // Messages answer: content blocks
	ResponsesAnswer                // Responses answer: output items
)

// maxDepth bounds the walk of tool payloads (deeper values are judged as
// one raw text rather than walked).
const maxDepth = 64

// ErrBody is returned for a body the extractor cannot walk.
var ErrBody = errors.New("guard: the body is not a JSON object")

// ErrFoldedNames is returned for an answer whose object holds two
// spellings of one name ("content" and "Content"): a Go client reads the
// last, others the exact one, so no single reading can be judged. (The
// read stage refuses such requests before any guardrail runs.)
var ErrFoldedNames = errors.New("guard: the answer spells one member name twice in different cases")

// span locates one extracted value so a mask can rewrite it in place.
type span struct {
	start, end int  // the raw value in body, or in the nested document nest
	nest       int  // -1: in body; else index into Extractor.nests
	num        bool // a JSON number (a mask writes a string in its place)
	src        uint8
	off, n     int // the decoded value in src
	role       Role
	part       Part
	fixed      bool
	msg        int // the message (item) index; latest is msg > lastAsst
}

// Message indexes that are not array positions.
const (
	msgNone   = -1      // system / instructions: never the latest turn
	msgAnswer = 1 << 30 // an answer's texts: always latest
)

const (
	srcBody uint8 = iota
	srcArena
	srcNested
)

// nestSpan is a JSON document held in a string value (chat tool-call
// arguments, a tool result that is JSON text): the outer literal in body
// and the decoded document in Extractor.nested.
type nestSpan struct {
	start, end int
	off, n     int
}

// Extractor finds every text value of a body and rewrites the masked
// ones. Its buffers are reused: no allocation once warm. Not safe for
// concurrent use; one per request.
type Extractor struct {
	body     []byte
	spans    []span
	arena    []byte // decoded strings that had escapes
	nested   []byte // decoded nested documents
	nests    []nestSpan
	doc      []byte // the document being walked (body or a nested one)
	docN     int    // its index in nests, -1 for body
	role     Role
	part     Part
	fixed    bool
	msg      int
	lastAsst int // index of the last assistant message (item) seen
	tmp      []byte
}

// Extract walks body of format f and adds every text value to e, each
// judged on its own, in document order. The caller validated body.
func (x *Extractor) Extract(e *Exec, f Format, body []byte) error {
	x.body, x.spans, x.arena, x.nested, x.nests = body, x.spans[:0], x.arena[:0], x.nested[:0], x.nests[:0]
	x.doc, x.docN, x.lastAsst = body, -1, -1
	e.clearTexts()
	if rawjson.KindOf(body) != rawjson.Object {
		return ErrBody
	}
	if f >= ChatAnswer && f <= ResponsesAnswer && rawjson.FoldConflict(body) != nil {
		return ErrFoldedNames
	}
	var err error
	switch f {
	case ChatRequest:
		err = x.chatRequest()
	case MessagesRequest:
		err = x.messagesRequest()
	case ResponsesRequest:
		err = x.responsesRequest()
	case ChatAnswer:
		err = x.chatAnswer()
	case MessagesAnswer:
		x.set(RoleAssistant, PartContent, false, msgAnswer)
		if v, k, ok := rawjson.Get(body, "content"); ok && k == rawjson.Array {
			x.blocks(v, RoleAssistant, msgAnswer)
		}
	case ResponsesAnswer:
		if v, k, ok := rawjson.Get(body, "output"); ok && k == rawjson.Array {
			x.responseItems(v, true)
		}
	default:
		err = x.endpointBody(f) // extract_endpoints.go
	}
	x.emit(e)
	return err
}

// emit adds the spans found to e, in document order.
func (x *Extractor) emit(e *Exec) {
	body := x.body
	x.sortSpans()
	for i := range x.spans {
		sp := &x.spans[i]
		var data []byte
		switch sp.src {
		case srcBody:
			data = body[sp.off : sp.off+sp.n]
		case srcArena:
			data = x.arena[sp.off : sp.off+sp.n]
		default:
			data = x.nested[sp.off : sp.off+sp.n]
		}
		e.AddText(Text{Role: sp.role, Part: sp.part, Data: data}, sp.fixed, sp.msg > x.lastAsst)
	}
}

// sortSpans puts the spans in document order (members are read in a fixed
// order, which may differ from the body's: "messages" before "system", a
// role after its content). Texts are judged in document order and Rewrite
// relies on it. Insertion sort: the spans are nearly sorted already.
func (x *Extractor) sortSpans() {
	sp := x.spans
	for i := 1; i < len(sp); i++ {
		for j := i; j > 0 && x.before(&sp[j], &sp[j-1]); j-- {
			sp[j], sp[j-1] = sp[j-1], sp[j]
		}
	}
}

// before orders spans by their position in the body; spans inside one
// nested document by their position in it.
func (x *Extractor) before(a, b *span) bool {
	pa, pb := a.start, b.start
	if a.nest >= 0 {
		pa = x.nests[a.nest].start
	}
	if b.nest >= 0 {
		pb = x.nests[b.nest].start
	}
	if pa != pb || a.nest < 0 || b.nest < 0 {
		return pa < pb
	}
	return a.start < b.start
}

func (x *Extractor) set(r Role, p Part, fixed bool, msg int) {
	x.role, x.part, x.fixed, x.msg = r, p, fixed, msg
}

// turn records message i of role r (the latest turn follows the last
// assistant message).
func (x *Extractor) turn(i int, r Role) {
	if r == RoleAssistant && i > x.lastAsst {
		x.lastAsst = i
	}
}

// str adds the string literal v (a span of x.doc).
func (x *Extractor) str(v []byte) {
	x.add(v, false, hasEscape(v))
}

// strEsc is str for a literal whose escape flag the caller's scan found.
func (x *Extractor) strEsc(v []byte, esc bool) {
	x.add(v, false, esc)
}

func (x *Extractor) add(v []byte, num, esc bool) {
	start := offsetIn(x.doc, v)
	sp := span{start: start, end: start + len(v), nest: x.docN, num: num, role: x.role, part: x.part, fixed: x.fixed, msg: x.msg}
	switch {
	case num:
		sp.src, sp.off, sp.n = x.srcOfDoc(), x.docOff()+start, len(v)
	case !esc:
		sp.src, sp.off, sp.n = x.srcOfDoc(), x.docOff()+start+1, len(v)-2
	default:
		off := len(x.arena)
		a, err := rawjson.AppendUnquote(x.arena, v)
		if err != nil {
			return // unreachable on a validated body
		}
		x.arena = a
		sp.src, sp.off, sp.n = srcArena, off, len(a)-off
	}
	x.spans = append(x.spans, sp)
}

func (x *Extractor) srcOfDoc() uint8 {
	if x.docN < 0 {
		return srcBody
	}
	return srcNested
}

func (x *Extractor) docOff() int {
	if x.docN < 0 {
		return 0
	}
	return x.nests[x.docN].off
}

// payload adds a tool payload value: strings, object keys and numbers each
// on their own (part p; keys PartToolKey, numbers PartToolNumber).
func (x *Extractor) payload(v []byte, k rawjson.Kind, p Part, depth int) {
	switch k {
	case rawjson.String:
		x.part = p
		x.str(v)
	case rawjson.Number:
		x.part = PartToolNumber
		x.add(v, true, false)
	case rawjson.Object:
		if depth >= maxDepth {
			return
		}
		_ = rawjson.ForEachKey(v, func(key, val []byte, vk rawjson.Kind) bool {
			x.part = PartToolKey
			x.str(key)
			x.payload(val, vk, p, depth+1)
			return true
		})
	case rawjson.Array:
		if depth >= maxDepth {
			return
		}
		_ = rawjson.ForEachElem(v, func(_ int, val []byte, vk rawjson.Kind) bool {
			x.payload(val, vk, p, depth+1)
			return true
		})
	}
}

// nestedPayload adds a string value that holds JSON text (tool-call
// arguments, a tool result): a JSON object or array is walked as a
// payload; any other text is one value.
func (x *Extractor) nestedPayload(v []byte, p Part) {
	if x.docN >= 0 {
		x.part = p
		x.str(v)
		return
	}
	off := len(x.nested)
	d, err := rawjson.AppendUnquote(x.nested, v)
	if err != nil {
		return
	}
	doc := d[off:]
	if k := rawjson.KindOf(doc); (k != rawjson.Object && k != rawjson.Array) || !rawjson.Valid(doc) {
		x.nested = d[:off]
		x.part = p
		x.str(v)
		return
	}
	x.nested = d
	start := offsetIn(x.body, v)
	x.nests = append(x.nests, nestSpan{start: start, end: start + len(v), off: off, n: len(doc)})
	x.doc, x.docN = x.nested[off:off+len(doc)], len(x.nests)-1
	x.payload(x.doc, rawjson.KindOf(doc), p, 0)
	x.doc, x.docN = x.body, -1
}

// content adds a content value: a string, or an array of parts whose
// `text` members are texts (chat parts, Messages and Responses blocks).
func (x *Extractor) content(v []byte, k rawjson.Kind) {
	switch k {
	case rawjson.String:
		x.str(v)
	case rawjson.Array:
		_ = rawjson.ForEachElem(v, func(_ int, part []byte, pk rawjson.Kind) bool {
			if pk == rawjson.String {
				x.str(part)
			} else if pk == rawjson.Object {
				if t, tk, ok := rawjson.Get(part, "text"); ok && tk == rawjson.String {
					x.str(t)
				}
			}
			return true
		})
	}
}

func roleOf(quoted []byte) Role {
	if len(quoted) >= 2 && !hasEscape(quoted) {
		// Fast path - a plain spelling compares byte for byte.
		switch string(quoted[1 : len(quoted)-1]) {
		case "assistant":
			return RoleAssistant
		case "system", "developer":
			return RoleSystem
		case "tool", "function":
			return RoleTool
		}
		return RoleUser
	}
	switch {
	case rawjson.StringEquals(quoted, "assistant"):
		return RoleAssistant
	case rawjson.StringEquals(quoted, "system"), rawjson.StringEquals(quoted, "developer"):
		return RoleSystem
	case rawjson.StringEquals(quoted, "tool"), rawjson.StringEquals(quoted, "function"):
		return RoleTool
	}
	return RoleUser
}

// chatRequest walks the chat request in one pass (a Cursor): the top
// level, the messages array and each message's members are each scanned
// once, and a string's escape flag comes from the same scan.
func (x *Extractor) chatRequest() error {
	var c rawjson.Cursor
	c.Reset(x.body)
	if !c.Begin() {
		return c.Err()
	}
	for c.More() {
		key, kesc := c.Key()
		if !keyIs(key, kesc, "messages") {
			c.Value()
			continue
		}
		// The last occurrence wins, as in rawjson.Get: drop what an
		// earlier one added (nothing else of a chat request is walked).
		x.spans, x.arena, x.nested, x.nests, x.lastAsst = x.spans[:0], x.arena[:0], x.nested[:0], x.nests[:0], -1
		if c.Kind() == rawjson.Array {
			x.chatMessages(&c)
		} else {
			c.Value()
		}
	}
	return c.End()
}

// keyIs reports whether the raw quoted key (esc as Cursor.Key says it:
// to be decoded or folded) is name, a lower-case name, under folding.
func keyIs(key []byte, esc bool, name string) bool {
	if !esc {
		return len(key) == len(name)+2 && string(key[1:len(key)-1]) == name
	}
	return rawjson.NameIs(key, name)
}

// chatKey numbers the chat message members the extractor reads.
type chatKey uint8

const (
	ckOther chatKey = iota
	ckRole
	ckContent
	ckRefusal
	ckReasoning
	ckToolCalls
	ckFunctionCall
)

// chatKeyOf names a raw quoted message key; a plain lower-case spelling is
// switched on directly, any other (escapes, capitals) decoded and folded by
// NameIs, as a Go upstream reads it.
func chatKeyOf(key []byte, esc bool) chatKey {
	if len(key) < 2 {
		return ckOther
	}
	if !esc {
		switch string(key[1 : len(key)-1]) {
		case "role":
			return ckRole
		case "content":
			return ckContent
		case "refusal":
			return ckRefusal
		case "reasoning_content", "reasoning":
			return ckReasoning
		case "tool_calls":
			return ckToolCalls
		case "function_call":
			return ckFunctionCall
		}
		return ckOther
	}
	switch {
	case rawjson.NameIs(key, "role"):
		return ckRole
	case rawjson.NameIs(key, "content"):
		return ckContent
	case rawjson.NameIs(key, "refusal"):
		return ckRefusal
	case rawjson.NameIs(key, "reasoning_content"), rawjson.NameIs(key, "reasoning"):
		return ckReasoning
	case rawjson.NameIs(key, "tool_calls"):
		return ckToolCalls
	case rawjson.NameIs(key, "function_call"):
		return ckFunctionCall
	}
	return ckOther
}

// chatMessages walks the messages array at c.
func (x *Extractor) chatMessages(c *rawjson.Cursor) {
	c.Begin()
	for i := 0; c.More(); i++ {
		if c.Kind() != rawjson.Object {
			c.Value()
			continue
		}
		// One pass over the message's members, then its texts in a fixed
		// order (the role may follow the content).
		var role, content, refusal, reasoning, toolCalls, fnCall []byte
		var ck rawjson.Kind
		var contentEsc, refusalEsc, reasoningEsc bool
		c.Begin()
		for c.More() {
			key, kesc := c.Key()
			val, vk, esc := c.Value()
			switch chatKeyOf(key, kesc) {
			case ckRole:
				role = val
			case ckContent:
				content, ck, contentEsc = val, vk, esc
			case ckRefusal:
				if vk == rawjson.String {
					refusal, refusalEsc = val, esc
				}
			case ckReasoning:
				if vk == rawjson.String {
					reasoning, reasoningEsc = val, esc
				}
			case ckToolCalls:
				if vk == rawjson.Array {
					toolCalls = val
				}
			case ckFunctionCall:
				if vk == rawjson.Object {
					fnCall = val
				}
			}
		}
		if c.Err() != nil {
			return
		}
		r := RoleUser
		if rawjson.KindOf(role) == rawjson.String {
			r = roleOf(role)
		}
		x.turn(i, r)
		part := PartContent
		if r == RoleTool {
			part = PartToolResult
		}
		x.set(r, part, false, i)
		if reasoning != nil {
			x.part = PartReasoning
			x.strEsc(reasoning, reasoningEsc)
			x.part = part
		}
		if content != nil {
			switch {
			case r == RoleTool && ck == rawjson.String:
				x.nestedPayload(content, PartToolResult)
			case ck == rawjson.String:
				x.strEsc(content, contentEsc)
			default:
				x.content(content, ck)
			}
		}
		if refusal != nil {
			x.part = PartContent
			x.strEsc(refusal, refusalEsc)
		}
		if toolCalls != nil {
			x.toolCalls(toolCalls)
		}
		if fnCall != nil {
			if a, ak, ok := rawjson.Get(fnCall, "arguments"); ok && ak == rawjson.String {
				x.nestedPayload(a, PartToolArguments)
			}
		}
	}
}

// toolCalls adds the arguments of chat tool calls.
func (x *Extractor) toolCalls(arr []byte) {
	_ = rawjson.ForEachElem(arr, func(_ int, tc []byte, k rawjson.Kind) bool {
		if k != rawjson.Object {
			return true
		}
		if a, ak, ok := rawjson.GetPath(tc, "function", "arguments"); ok && ak == rawjson.String {
			x.nestedPayload(a, PartToolArguments)
		}
		return true
	})
}

func (x *Extractor) messagesRequest() error {
	if v, k, ok := rawjson.Get(x.body, "system"); ok {
		x.set(RoleSystem, PartContent, false, msgNone)
		x.content(v, k)
	}
	msgs, k, ok := rawjson.Get(x.body, "messages")
	if !ok || k != rawjson.Array {
		return nil
	}
	return rawjson.ForEachElem(msgs, func(i int, m []byte, mk rawjson.Kind) bool {
		if mk != rawjson.Object {
			return true
		}
		role := RoleUser
		if r, rk, ok := rawjson.Get(m, "role"); ok && rk == rawjson.String {
			role = roleOf(r)
		}
		x.turn(i, role)
		x.set(role, PartContent, false, i)
		if c, ck, ok := rawjson.Get(m, "content"); ok {
			if ck == rawjson.String {
				x.str(c)
			} else if ck == rawjson.Array {
				x.blocks(c, role, i)
			}
		}
		return true
	})
}

// blocks adds the texts of Messages content blocks: text, thinking (signed:
// never rewritten), tool_use input, tool_result content.
func (x *Extractor) blocks(arr []byte, role Role, msg int) {
	_ = rawjson.ForEachElem(arr, func(_ int, b []byte, k rawjson.Kind) bool {
		if k != rawjson.Object {
			return true
		}
		t, _, _ := rawjson.Get(b, "type")
		switch {
		case rawjson.StringEquals(t, "text"):
			if v, vk, ok := rawjson.Get(b, "text"); ok && vk == rawjson.String {
				x.set(role, PartContent, false, msg)
				x.str(v)
			}
		case rawjson.StringEquals(t, "thinking"):
			if v, vk, ok := rawjson.Get(b, "thinking"); ok && vk == rawjson.String {
				x.set(role, PartReasoning, true, msg)
				x.str(v)
			}
		case rawjson.StringEquals(t, "tool_use"), rawjson.StringEquals(t, "server_tool_use"):
			if v, vk, ok := rawjson.Get(b, "input"); ok {
				x.set(role, PartToolArguments, false, msg)
				x.payload(v, vk, PartToolArguments, 0)
			}
		case rawjson.StringEquals(t, "tool_result"):
			if v, vk, ok := rawjson.Get(b, "content"); ok {
				x.set(RoleTool, PartToolResult, false, msg)
				if vk == rawjson.String {
					x.nestedPayload(v, PartToolResult)
				} else {
					x.content(v, vk)
				}
			}
		}
		return true
	})
}

func (x *Extractor) responsesRequest() error {
	if v, k, ok := rawjson.Get(x.body, "instructions"); ok && k == rawjson.String {
		x.set(RoleSystem, PartContent, false, msgNone)
		x.str(v)
	}
	in, k, ok := rawjson.Get(x.body, "input")
	switch {
	case !ok:
	case k == rawjson.String:
		x.set(RoleUser, PartContent, false, 0)
		x.str(in)
	case k == rawjson.Array:
		x.responseItems(in, false)
	}
	return nil
}

// responseItems adds the texts of Responses items (input or output):
// messages, function calls' arguments, function call outputs, reasoning
// summaries. answer: the items of an answer (untyped roles are the
// assistant's; every text is of the latest turn).
func (x *Extractor) responseItems(arr []byte, answer bool) {
	_ = rawjson.ForEachElem(arr, func(i int, it []byte, k rawjson.Kind) bool {
		if k != rawjson.Object {
			return true
		}
		msg := i
		if answer {
			msg = msgAnswer
		}
		t, _, _ := rawjson.Get(it, "type")
		switch {
		case rawjson.StringEquals(t, "function_call"), rawjson.StringEquals(t, "custom_tool_call"):
			x.turn(i, RoleAssistant)
			x.set(RoleAssistant, PartToolArguments, false, msg)
			if a, ak, ok := rawjson.Get(it, "arguments"); ok && ak == rawjson.String {
				x.nestedPayload(a, PartToolArguments)
			} else if a, ak, ok := rawjson.Get(it, "input"); ok && ak == rawjson.String {
				x.str(a)
			}
		case rawjson.StringEquals(t, "function_call_output"), rawjson.StringEquals(t, "custom_tool_call_output"):
			x.set(RoleTool, PartToolResult, false, msg)
			if o, ok2, ok := rawjson.Get(it, "output"); ok {
				if ok2 == rawjson.String {
					x.nestedPayload(o, PartToolResult)
				} else {
					x.content(o, ok2)
				}
			}
		case rawjson.StringEquals(t, "reasoning"):
			x.turn(i, RoleAssistant)
			x.set(RoleAssistant, PartReasoning, false, msg)
			if s, sk, ok := rawjson.Get(it, "summary"); ok {
				x.content(s, sk)
			}
		default: // a message, typed or not
			role := RoleUser
			if r, rk, ok := rawjson.Get(it, "role"); ok && rk == rawjson.String {
				role = roleOf(r)
			} else if answer {
				role = RoleAssistant // an output message
			}
			if !answer {
				x.turn(i, role)
			}
			x.set(role, PartContent, false, msg)
			if c, ck, ok := rawjson.Get(it, "content"); ok {
				x.content(c, ck)
			}
		}
		return true
	})
}

func (x *Extractor) chatAnswer() error {
	ch, k, ok := rawjson.Get(x.body, "choices")
	if !ok || k != rawjson.Array {
		return nil
	}
	return rawjson.ForEachElem(ch, func(_ int, c []byte, ck rawjson.Kind) bool {
		if ck != rawjson.Object {
			return true
		}
		m, mk, ok := rawjson.Get(c, "message")
		if !ok || mk != rawjson.Object {
			return true
		}
		x.set(RoleAssistant, PartContent, false, msgAnswer)
		// Names are read as in requests (chatKeyOf): a Go client reads
		// "Content" as the content, so the guardrails judge it too.
		_ = rawjson.ForEachKey(m, func(key, val []byte, vk rawjson.Kind) bool {
			switch ck := chatKeyOf(key, !rawjson.PlainName(key)); {
			case ck == ckContent, ck == ckRefusal:
				x.part = PartContent
				x.content(val, vk)
			case ck == ckReasoning && vk == rawjson.String:
				x.part = PartReasoning
				x.str(val)
			case ck == ckToolCalls && vk == rawjson.Array:
				x.toolCalls(val)
			case ck == ckFunctionCall && vk == rawjson.Object:
				if a, ak, ok := rawjson.Get(val, "arguments"); ok && ak == rawjson.String {
					x.nestedPayload(a, PartToolArguments)
				}
			}
			return true
		})
		return true
	})
}

// Rewrite appends to dst the body with every text e rewrote replaced (each
// written as a correctly escaped JSON string; a masked number becomes a
// string). Texts inside a nested document (tool-call arguments) are
// replaced in the document, which is then re-quoted into its string.
func (x *Extractor) Rewrite(dst []byte, e *Exec) []byte {
	body := x.body
	pos := 0
	for i := 0; i < len(x.spans); i++ {
		sp := &x.spans[i]
		if sp.nest < 0 {
			if !e.changed[i] {
				continue
			}
			dst = append(dst, body[pos:sp.start]...)
			dst = rawjson.AppendQuoteBytes(dst, e.over[i])
			pos = sp.end
			continue
		}
		// The spans of one nested document are contiguous.
		n := sp.nest
		j := i
		any := false
		for j < len(x.spans) && x.spans[j].nest == n {
			any = any || e.changed[j]
			j++
		}
		if any {
			ns := x.nests[n]
			doc := x.nested[ns.off : ns.off+ns.n]
			x.tmp = x.tmp[:0]
			dpos := 0
			for k := i; k < j; k++ {
				if !e.changed[k] {
					continue
				}
				s := &x.spans[k]
				x.tmp = append(x.tmp, doc[dpos:s.start]...)
				x.tmp = rawjson.AppendQuoteBytes(x.tmp, e.over[k])
				dpos = s.end
			}
			x.tmp = append(x.tmp, doc[dpos:]...)
			dst = append(dst, body[pos:ns.start]...)
			dst = rawjson.AppendQuoteBytes(dst, x.tmp)
			pos = ns.end
		}
		i = j - 1
	}
	return append(dst, body[pos:]...)
}

// hasEscape reports whether a JSON string literal has an escape (the
// assembly IndexByte: texts are long, most have none).
func hasEscape(v []byte) bool { return bytes.IndexByte(v, '\\') >= 0 }
