package rawjson

// Cursor reads a document one value at a time in a single forward pass, so
// a walk that descends into an array's objects scans each byte once
// (ForEachElem then ForEachKey on each element scans every element twice:
// once to find its end, once for its members). It follows the package's
// validation contract: structure is checked at the levels the caller walks,
// values it reads whole with Value are matched leniently; on valid JSON it
// agrees with ForEachElem and ForEachKey. It never panics or reads out of
// bounds. It does not check that a closing bracket matches its opener.
//
// Use:
//
//	c.Reset(data)
//	if c.Begin() { // an object
//		for c.More() {
//			key, _ := c.Key()
//			val, kind, _ := c.Value() // or c.Begin() to descend
//		}
//	}
//	err := c.End()
//
// The zero Cursor is at the end of an empty document.
//
// A strict cursor (ResetStrict) validates as it reads instead, so that a
// body which must be valid JSON and is walked anyway is read once, not
// validated in one pass and walked in another: see ResetStrict.
type Cursor struct {
	data   []byte
	i      int  // the next byte to read
	first  bool // the container just entered has had no value yet
	closer byte // the bracket that closed the container More last left
	err    error
	// Strict mode only: the containers walked with Begin (bit set: object)
	// and whether the member More stepped to still owes its Key.
	strict    bool
	wantKey   bool
	depth     int
	stack     uint64
	noteNames bool      // NoteNames
	names     nameSpots // strict mode with noteNames: objects with odd names
}

// Reset starts c at the first value of data.
func (c *Cursor) Reset(data []byte) {
	*c = Cursor{data: data, i: skipWS(data, 0)}
}

// ResetStrict starts c at the first value of data in strict mode: every
// byte the walk passes is checked as Valid checks it. Key validates the
// key, Value the whole value it returns (nesting within MaxDepth counting
// the levels walked), More that a closing bracket matches its opener, and
// each object member must be read with Key before its value. So when the
// caller reads every value (descending with Begin or taking it whole with
// Value) and End returns nil, the document is exactly what Valid accepts.
// Strict mode walks at most 64 levels with Begin; deeper nesting is taken
// whole with Value.
func (c *Cursor) ResetStrict(data []byte) {
	*c = Cursor{data: data, i: skipWS(data, 0), strict: true}
}

func (c *Cursor) fail(err error) {
	if c.err == nil {
		c.err = err
	}
	c.i = len(c.data)
}

// Err returns the first error met, or nil.
func (c *Cursor) Err() error { return c.err }

// Kind returns the kind of the value at the cursor, told by its first byte;
// Invalid after an error or at the end of the input.
func (c *Cursor) Kind() Kind {
	if c.err != nil || c.i >= len(c.data) {
		return Invalid
	}
	return kindOfByte[c.data[c.i]]
}

// Begin enters the object or array at the cursor. It returns false (and
// records an error) if the value there is neither.
func (c *Cursor) Begin() bool {
	switch k := c.Kind(); k {
	case Object, Array:
		if c.strict && !c.push(k == Object) {
			return false
		}
		c.i = skipWS(c.data, c.i+1)
		c.first = true
		return true
	}
	if c.err == nil {
		if c.i >= len(c.data) {
			c.fail(ErrUnexpectedEnd)
		} else {
			c.fail(ErrSyntax)
		}
	}
	return false
}

// More reports whether the container the cursor is in has another element
// or member, stepping over the comma before it. At the closing bracket it
// steps past it and returns false; the cursor is then after the container,
// in the enclosing one. It returns false on malformed input (see Err).
func (c *Cursor) More() bool {
	if c.err != nil {
		return false
	}
	if c.strict && c.depth == 0 {
		c.fail(ErrSyntax) // not in a container Begin entered
		return false
	}
	data := c.data
	i := skipWS(data, c.i)
	if i >= len(data) {
		c.fail(ErrUnexpectedEnd)
		return false
	}
	switch data[i] {
	case ']', '}':
		c.closer = data[i]
		if c.strict && !c.pop(data[i] == '}') {
			return false
		}
		c.i = skipWS(data, i+1)
		c.first = false // the container was a value of its enclosing one
		return false
	case ',':
		if c.first {
			c.fail(ErrSyntax)
			return false
		}
		i = skipWS(data, i+1)
		if i >= len(data) {
			c.fail(ErrUnexpectedEnd)
			return false
		}
		if data[i] == ']' || data[i] == '}' {
			c.fail(ErrSyntax) // a trailing comma
			return false
		}
	default:
		if !c.first {
			c.fail(ErrSyntax)
			return false
		}
	}
	c.i = i
	c.first = false
	if c.strict {
		c.wantKey = c.stack&(1<<(c.depth-1)) != 0
	}
	return true
}

// push notes a container Begin enters (strict mode): a value where a key
// is owed, or nesting past the stack, is a failure.
func (c *Cursor) push(obj bool) bool {
	if c.wantKey || c.depth >= 64 {
		c.fail(ErrSyntax)
		return false
	}
	if obj {
		c.stack |= 1 << c.depth
		if c.noteNames {
			c.names.open(c.names.cstarts[:], c.depth, c.i)
		}
	} else {
		c.stack &^= 1 << c.depth
	}
	c.depth++
	return true
}

// pop checks a closing bracket against the innermost container walked
// (strict mode).
func (c *Cursor) pop(obj bool) bool {
	if c.depth == 0 || (c.stack&(1<<(c.depth-1)) != 0) != obj {
		c.fail(ErrSyntax)
		return false
	}
	c.depth--
	return true
}

// Closer returns the bracket ('}' or ']') that closed the container More
// last stepped out of, 0 before any: a caller that must reject a mismatched
// closer, as Get and ScanTop do for objects, checks it.
func (c *Cursor) Closer() byte { return c.closer }

// Key reads an object member's key and the colon after it: the raw quoted
// key (compare it with [KeyIs]) and whether it must be decoded or folded to
// compare (a backslash escape, a non-ASCII byte or an upper-case letter). It
// returns nil on malformed input.
func (c *Cursor) Key() (key []byte, esc bool) {
	data := c.data
	if c.err != nil {
		return nil, false
	}
	if c.i >= len(data) || data[c.i] != '"' {
		c.fail(ErrSyntax)
		return nil, false
	}
	start := c.i
	var j int
	if c.strict {
		if !c.wantKey {
			c.fail(ErrSyntax)
			return nil, false
		}
		c.wantKey = false
		var odd bool
		j, esc, odd = validName(data, start+1)
		if odd {
			// esc marks every name but a lower-case ASCII one without
			// escapes (KeyIs decodes and folds those).
			esc = true
			if c.noteNames {
				c.names.odd(c.names.cstarts[:], c.depth-1)
			}
		}
	} else {
		var odd bool
		j, esc, odd, _ = scanName(data, start+1, true)
		esc = esc || odd
	}
	if j < 0 {
		c.fail(codeErr(j))
		return nil, false
	}
	k := skipWS(data, j)
	if k >= len(data) {
		c.fail(ErrUnexpectedEnd)
		return nil, false
	}
	if data[k] != ':' {
		c.fail(ErrSyntax)
		return nil, false
	}
	c.i = skipWS(data, k+1)
	return data[start:j:j], esc
}

// NoteNames makes a strict cursor note the objects that hold a name with
// an upper-case letter, a non-ASCII byte or an escape, those read with Key
// and those inside values read with Value, so that NameConflict can answer
// once the document is read. Call it after ResetStrict.
func (c *Cursor) NoteNames() { c.noteNames = true }

// NameConflict is, once a strict cursor told to NoteNames has read the
// whole document, ValidNames' folded: the quoted name of a member spelled
// differently from another of its object that it equals under folding, or
// nil. Only the objects noted are looked at again.
func (c *Cursor) NameConflict() []byte { return c.names.conflict(c.data) }

// KeyIs reports whether key, a raw quoted name as Key returned it with its
// esc, is the name quoted under folding, as encoding/json matches a struct
// field (see fold.go). quoted is given with its quotes and in lower case
// (`"model"`, `"generationconfig"`: under folding the same name). A name Key
// did not mark is lower-case ASCII without escapes, which equals quoted
// under folding only byte for byte. Taking the name quoted keeps KeyIs small
// enough to inline, so that against a constant the plain case is a length
// check and a word compare or two, no call.
func KeyIs(key []byte, esc bool, quoted string) bool {
	if !esc {
		return string(key) == quoted
	}
	return foldEqualQuoted(key, quoted[1:len(quoted)-1])
}

// ValueIs reports whether a raw quoted string value, as Value returned it
// with whether it holds an escape, decodes to exactly the text quoted
// (given with its quotes): bytewise when plain, decoded otherwise. Values,
// unlike names, are compared with their case.
func ValueIs(val []byte, esc bool, quoted string) bool {
	if !esc {
		return string(val) == quoted
	}
	return StringEquals(val, quoted[1:len(quoted)-1])
}

// Value reads the whole value at the cursor: its raw span, its kind and,
// for a string, whether it holds a backslash escape (a string without one
// is its own decoded text between the quotes). It returns nil, Invalid on
// malformed input.
func (c *Cursor) Value() (val []byte, kind Kind, esc bool) {
	if c.err != nil {
		return nil, Invalid, false
	}
	data, i := c.data, c.i
	var e int
	switch {
	case c.strict:
		e, kind, esc = c.validValue()
	case i < len(data) && data[i] == '"':
		e, esc = scanString(data, i+1)
		kind = String
	default:
		e, kind = skipValue(data, i)
	}
	if e < 0 {
		c.fail(codeErr(e))
		return nil, Invalid, false
	}
	c.i = e
	return data[i:e:e], kind, esc
}

// validValue is Value's reading in strict mode: the end of the value at
// the cursor, validated, or a negative code.
func (c *Cursor) validValue() (e int, kind Kind, esc bool) {
	data, i := c.data, c.i
	if c.wantKey {
		return codeSyntax, Invalid, false
	}
	if i >= len(data) {
		return codeEOF, Invalid, false
	}
	switch kind = kindOfByte[data[i]]; kind {
	case String:
		e, esc = validString(data, i+1)
	case Object, Array:
		// The levels walked count toward MaxDepth; a one-word stack covers
		// what real documents nest (see Valid).
		var small [1]uint64
		r := 0
		var spots *nameSpots
		if c.noteNames {
			spots = &c.names
		}
		if e, r = validValue(data, i, small[:], MaxDepth-c.depth, spots); r == validTooDeep {
			var big [(MaxDepth + 63) / 64]uint64
			e, r = validValue(data, i, big[:], MaxDepth-c.depth, spots)
		}
		if r != validYes {
			e = codeSyntax
		}
	default:
		e, kind = skipValue(data, i)
	}
	return e, kind, esc
}

// End returns the first error met, or ErrSyntax if anything but whitespace
// follows the cursor (call it once the top-level value is read).
func (c *Cursor) End() error {
	if c.err != nil {
		return c.err
	}
	return endOfDocument(c.data, c.i)
}

// Pos returns the index in the document of the next byte c reads.
func (c *Cursor) Pos() int { return c.i }

// ResumeMember starts c at index i of data, inside an object that has had
// a member already, where a More that returned true would leave it: at the
// next member's key. The caller vouches for data[:i]: a cursor walked the
// same bytes (in another document) to i that way, so the state it reached
// there follows from them alone. It lets a reader skip a prefix that
// repeats from one document to the next.
func (c *Cursor) ResumeMember(data []byte, i int) {
	*c = Cursor{data: data, i: min(max(i, 0), len(data))}
}
