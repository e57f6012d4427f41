package rawjson

// The editing contract, shared by Set, SetString, SetIfAbsent, Delete and
// Rename: they append to dst an edited copy of the object data, in which the
// bytes outside the edited members are copied verbatim, whitespace included.
// They check data as described in the package comment; on malformed input
// they return dst unchanged and the error. dst may be nil; with enough spare
// capacity they do not allocate. dst must not overlap data: never pass
// data[:0] as dst.

type editMode uint8

const (
	modeSet editMode = iota
	modeSetIfAbsent
	modeDelete
	modeRename
)

type editOp struct {
	key   string
	mode  editMode
	raw   []byte // value for modeSet/modeSetIfAbsent unless quote
	str   string // string value when quote; new key for modeRename
	quote bool   // write str as a JSON string instead of raw

	peek   string // SetPeek: a member read in the same pass
	peeked []byte // its raw value (last occurrence), nil if absent
}

// Set appends to dst a copy of the object data with every top-level member
// named key set to rawVal, in place, keeping key order; a member whose name
// differs from key in case is renamed key. If key is absent,
// `"key":rawVal` is appended after the last member (with a comma if the
// object is not empty). rawVal must be one valid JSON value and is not
// checked beyond being non-empty (ErrEmptyValue); use SetString for strings.
func Set(dst, data []byte, key string, rawVal []byte) ([]byte, error) {
	if len(rawVal) == 0 {
		return dst, ErrEmptyValue
	}
	return edit(dst, data, &editOp{key: key, mode: modeSet, raw: rawVal})
}

// SetPeek is Set that also returns the raw value of the top-level member
// named peek (last occurrence, as Get; nil if absent), read in the same
// pass: a body whose `model` is rewritten and whose `usage` is read is
// walked once instead of twice.
func SetPeek(dst, data []byte, key string, rawVal []byte, peek string) (out, peeked []byte, err error) {
	if len(rawVal) == 0 {
		return dst, nil, ErrEmptyValue
	}
	op := editOp{key: key, mode: modeSet, raw: rawVal, peek: peek}
	if out, err = edit(dst, data, &op); err != nil {
		return out, nil, err
	}
	return out, op.peeked, nil
}

// SetString is Set with the JSON string literal of s as the value; s is
// quoted straight into dst as AppendQuote does.
func SetString(dst, data []byte, key, s string) ([]byte, error) {
	return edit(dst, data, &editOp{key: key, mode: modeSet, str: s, quote: true})
}

// SetIfAbsent appends to dst a copy of data, with `"key":rawVal` appended
// after the last member if key is absent. A present key is left as it is,
// whatever its value (null included).
func SetIfAbsent(dst, data []byte, key string, rawVal []byte) ([]byte, error) {
	if len(rawVal) == 0 {
		return dst, ErrEmptyValue
	}
	return edit(dst, data, &editOp{key: key, mode: modeSetIfAbsent, raw: rawVal})
}

// Delete appends to dst a copy of data without any top-level member named
// key, together with one adjacent comma. An absent key yields an exact copy.
func Delete(dst, data []byte, key string) ([]byte, error) {
	return edit(dst, data, &editOp{key: key, mode: modeDelete})
}

// Rename appends to dst a copy of data in which every top-level member named
// from is renamed to, in place, keeping its value and position. If from is
// present, members already named to are removed, so the renamed value wins.
// If from is absent the copy is exact. Renamed keys are written as
// AppendQuote(to) writes them. Several from members yield several to members,
// and the last one still wins, as it did for from.
func Rename(dst, data []byte, from, to string) ([]byte, error) {
	return edit(dst, data, &editOp{key: from, mode: modeRename, str: to})
}

func edit(dst, data []byte, op *editOp) ([]byte, error) {
	var it objIter
	if !it.reset(data) {
		return dst, it.err
	}
	orig := len(dst)
	fast := isFastKey(op.key)
	fastTo := op.mode == modeRename && isFastKey(op.str)
	// Unchanged bytes are copied lazily: data[pending:] is what has not been
	// written to out yet, so an edit costs a few large appends.
	out := dst
	pending := 0
	found := false   // a member named op.key was seen
	emitted := false // a member was kept (written or pending)
	dropped := false // a member named op.str was dropped (modeRename)
	tail := it.open  // end of the last member; the closing part follows
	peekFast := op.peek != "" && isFastKey(op.peek)
	var m member
	for it.next(&m) {
		tail = m.valEnd
		if op.peek != "" && m.is(data, op.peek, peekFast) {
			op.peeked = data[m.val:m.valEnd:m.valEnd]
		}
		match := m.is(data, op.key, fast)
		if match {
			found = true
		}
		if (match && op.mode == modeDelete) ||
			(!match && op.mode == modeRename && m.is(data, op.str, fastTo)) {
			// Drop the member with the separator before it: ws-comma-ws, or
			// the object's leading whitespace for the first member.
			out = append(out, data[pending:m.sep]...)
			pending = m.valEnd
			dropped = true
			continue
		}
		if !emitted && m.sep != it.open {
			// All members before this one were dropped: it takes the
			// object's leading whitespace instead of its own comma.
			out = append(out, data[pending:m.sep]...)
			out = append(out, data[it.open:it.firstKey]...)
			pending = m.key
		}
		emitted = true
		if !match {
			continue
		}
		switch op.mode {
		case modeSet:
			if !m.exact(data, op.key) && !StringEquals(data[m.key:m.keyEnd], op.key) {
				// The name in another case: the upstream reads gw's
				// value under gw's name.
				out = append(out, data[pending:m.key]...)
				out = appendQuote(out, op.key)
				pending = m.keyEnd
			}
			out = append(out, data[pending:m.val]...)
			out = op.appendValue(out)
			pending = m.valEnd
		case modeRename:
			out = append(out, data[pending:m.key]...)
			out = appendQuote(out, op.str)
			pending = m.keyEnd
		}
	}
	if it.err != nil {
		return dst[:orig], it.err
	}
	if op.mode == modeRename && !found && dropped {
		// Nothing to rename: undo dropping the members named to.
		return append(dst[:orig], data...), nil
	}
	if !found && (op.mode == modeSet || op.mode == modeSetIfAbsent) {
		out = append(out, data[pending:tail]...)
		pending = tail
		if emitted {
			out = append(out, ',')
		}
		out = appendQuote(out, op.key)
		out = append(out, ':')
		out = op.appendValue(out)
	}
	return append(out, data[pending:]...), nil
}

func (op *editOp) appendValue(dst []byte) []byte {
	if op.quote {
		return appendQuote(dst, op.str)
	}
	return append(dst, op.raw...)
}
