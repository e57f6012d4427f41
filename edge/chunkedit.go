package edge

import (
	"bytes"

	"gw/sse/rawjson"
)

// editChunk appends to dst the chat chunk data with `model` set to alias
// and, when dropUsage, its top-level `usage` member removed — what
// RewriteModel after rawjson.Delete(data, "usage") produce, byte for byte —
// in one walk over the members instead of the three of the slow path
// (IsUsageOnlyChunk, Delete, RewriteModel). ok is false, with dst
// unchanged, whenever the slow path must decide: a usage-only chunk, a
// chunk without `model` or with `usage` first, duplicate keys, one of
// its names in capitals or escaped, or input that is not an object.
func editChunk(dst, data, alias []byte, dropUsage bool) (out []byte, ok bool) {
	var e chunkEdit
	e.modelVS, e.usageFrom = -1, -1
	cursor := 0
	err := rawjson.ForEachKey(data, func(key, val []byte, kind rawjson.Kind) bool {
		// Between the previous value's end and this key are only
		// whitespace and one comma (or the opening brace): the first quote
		// after the cursor starts the key.
		ks := cursor + bytes.IndexByte(data[cursor:], '"')
		vs := skipWSColon(data, ks+len(key))
		ve := vs + len(val)
		if ks < cursor || vs < 0 || ve > len(data) || !bytes.Equal(data[vs:ve], val) {
			e.bad = true
			return false
		}
		if !rawjson.PlainName(key) {
			// The slow path's edits read names under folding ("usAge" is
			// usage) and write the name they set in lower case: a name in
			// capitals or escaped that is one of ours is left to them.
			if rawjson.NameIs(key, "model") || rawjson.NameIs(key, "usage") || rawjson.NameIs(key, "choices") {
				e.bad = true
				return false
			}
		}
		switch {
		case string(key) == `"model"`:
			e.bad = e.bad || e.modelVS >= 0
			e.modelVS, e.modelVE = vs, ve
		case string(key) == `"usage"`:
			// Delete drops a member with the separator before it; the first
			// member's removal also moves the next one's: left to the slow path.
			e.bad = e.bad || e.usageFrom >= 0 || e.members == 0
			e.usageFrom, e.usageTo, e.usageKind = cursor, ve, kind
		case string(key) == `"choices"`:
			e.bad = e.bad || e.haveChoices
			e.haveChoices, e.choices, e.choicesKind = true, val, kind
		}
		e.members++
		cursor = ve
		return !e.bad
	})
	if err != nil || e.bad || e.modelVS < 0 || e.usageOnly() {
		return dst, false
	}
	// Apply the two edits in the order they appear.
	type span struct {
		from, to int
		with     []byte
	}
	a, b := span{e.modelVS, e.modelVE, alias}, span{-1, -1, nil}
	if dropUsage && e.usageFrom >= 0 {
		b = span{e.usageFrom, e.usageTo, nil}
		if b.from < a.from {
			a, b = b, a
		}
	}
	out = append(dst, data[:a.from]...)
	out = append(out, a.with...)
	if b.from < 0 {
		return append(out, data[a.to:]...), true
	}
	out = append(out, data[a.to:b.from]...)
	out = append(out, b.with...)
	return append(out, data[b.to:]...), true
}

// chunkEdit is what editChunk's walk found.
type chunkEdit struct {
	modelVS, modelVE   int // the model value; modelVS -1: absent
	usageFrom, usageTo int // the usage member with the separator before it; -1: absent
	usageKind          rawjson.Kind
	choices            []byte
	choicesKind        rawjson.Kind
	haveChoices        bool
	members            int
	bad                bool // a case for the slow path
}

// usageOnly is openai.IsUsageOnlyChunk on the walk's findings: usage is an
// object and choices is absent, null or an empty array.
func (e *chunkEdit) usageOnly() bool {
	if e.usageFrom < 0 || e.usageKind != rawjson.Object {
		return false
	}
	if !e.haveChoices || e.choicesKind == rawjson.Null {
		return true
	}
	if e.choicesKind != rawjson.Array {
		return false
	}
	n := 0
	_ = rawjson.ForEachElem(e.choices, func(int, []byte, rawjson.Kind) bool { n++; return false })
	return n == 0
}

// skipWSColon returns the index after the whitespace, the colon and the
// whitespace that follow a key ending before i; -1 if there is no colon.
func skipWSColon(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	i++
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

// EditChunk is editChunk for the fuzz targets in fuzz/ (FuzzEdgeEditChunk).
func EditChunk(dst, data, alias []byte, dropUsage bool) ([]byte, bool) {
	return editChunk(dst, data, alias, dropUsage)
}
