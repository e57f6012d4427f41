package rawjson

// MaxDepth is the deepest nesting of objects and arrays that Valid accepts;
// it is the limit encoding/json enforces.
const MaxDepth = 10000

// Valid reports whether data is exactly one JSON value, optionally surrounded
// by whitespace, per RFC 8259, without allocating. Unlike encoding/json.Valid
// it also requires string contents to be valid UTF-8 (RFC 8259 section 8.1),
// so a body that a strict upstream would refuse is rejected up front; on
// UTF-8 input the two agree. Lone surrogate escapes such as "\ud800" are
// valid syntax and accepted, as in encoding/json. Nesting deeper than
// MaxDepth is rejected.
func Valid(data []byte) bool {
	return validWith(data, nil)
}

// ValidNames is Valid for a request body that policy reads and an upstream
// parses again: valid reports Valid(data), and folded, for a valid
// document, is the quoted name of a member whose name equals another's in
// the same object under folding but is spelled differently ("Model" next to
// "model"; FoldConflict), or nil. encoding/json takes the last of such
// members, most other parsers only the exact spelling, so gw could not know
// which value its upstream reads: such a body is refused. Names without an
// upper-case letter, non-ASCII byte or escape (most bodies' every name) cost
// an OR per word while validating; only the objects that hold another kind
// are looked at again.
func ValidNames(data []byte) (valid bool, folded []byte) {
	var spots nameSpots
	if !validWith(data, &spots) {
		return false, nil
	}
	return true, spots.conflict(data)
}

// validWith is Valid, noting in spots (when not nil) the objects that hold
// an odd name (oddIn).
func validWith(data []byte, spots *nameSpots) bool {
	// Fast path - a one-word container stack covers 64 levels, which is all
	// real payloads use; deeper documents are validated again with the full
	// stack rather than paying to zero it on every call.
	var small [1]uint64
	switch valid(data, small[:], spots) {
	case validYes:
		return true
	case validNo:
		return false
	}
	var big [(MaxDepth + 63) / 64]uint64
	return valid(data, big[:], spots) == validYes
}

const (
	validNo = iota
	validYes
	validTooDeep // the stack was too small to decide
)

// valid validates data with a container-kind bit stack (bit set: object) of
// len(stack)*64 levels, capped at MaxDepth.
func valid(data []byte, stack []uint64, spots *nameSpots) int {
	end, r := validValue(data, 0, stack, MaxDepth, spots)
	if r == validYes && skipWS(data, end) != len(data) {
		return validNo
	}
	return r
}

// validValue validates the value at data[i] (after optional whitespace)
// with a container-kind bit stack (bit set: object) of len(stack)*64
// levels, nesting at most maxDepth deep, and returns the index just past
// it. With spots not nil, it notes there the objects that hold an odd name
// (oddIn).
func validValue(data []byte, i int, stack []uint64, maxDepth int, spots *nameSpots) (int, int) {
	limit := min(len(stack)*64, maxDepth)
	depth := 0
	for {
		// Parse the value at i. Containers push and go around for their first
		// element; an empty container or a scalar falls through.
		i = skipWS(data, i)
		if i >= len(data) {
			return i, validNo
		}
		switch c := data[i]; c {
		case '{', '[':
			if depth >= limit {
				if depth >= maxDepth {
					return i, validNo
				}
				return i, validTooDeep
			}
			w, bit := depth>>6, uint64(1)<<(depth&63)
			if c == '{' {
				stack[w] |= bit
				if spots != nil {
					spots.open(spots.vstarts[:], depth, i)
				}
			} else {
				stack[w] &^= bit
			}
			depth++
			i = skipWS(data, i+1)
			if i < len(data) && data[i] == c+2 { // '{'+2 == '}', '['+2 == ']'
				depth--
				i++
				break
			}
			if c == '{' {
				if i = validKey(data, i, spots, depth-1); i < 0 {
					return i, validNo
				}
			}
			continue
		case '"':
			i, _ = validString(data, i+1)
		case 't':
			i = skipLit(data, i, "true")
		case 'f':
			i = skipLit(data, i, "false")
		case 'n':
			i = skipLit(data, i, "null")
		default:
			i = skipNumber(data, i)
		}
		if i < 0 {
			return i, validNo
		}
		// After a value: close containers until a comma leads to the next
		// value, or the outermost value ends.
		for {
			if depth == 0 {
				return i, validYes
			}
			i = skipWS(data, i)
			if i >= len(data) {
				return i, validNo
			}
			d := depth - 1
			isObj := stack[d>>6]&(1<<(d&63)) != 0
			c := data[i]
			if c == ',' {
				i++
				if isObj {
					if i = validKey(data, skipWS(data, i), spots, d); i < 0 {
						return i, validNo
					}
				}
				break
			}
			if (isObj && c == '}') || (!isObj && c == ']') {
				depth--
				i++
				continue
			}
			return i, validNo
		}
	}
}

// validKey validates `"key" ws :` at data[i], a name of the object at
// depth d, and returns the index past the colon, or a negative code. With
// spots not nil, an odd name notes its object there.
func validKey(data []byte, i int, spots *nameSpots, d int) int {
	if i >= len(data) || data[i] != '"' {
		return codeSyntax
	}
	if spots == nil {
		i, _ = validString(data, i+1)
	} else {
		var odd bool
		if i, _, odd = validName(data, i+1); odd {
			spots.odd(spots.vstarts[:], d)
		}
	}
	if i < 0 {
		return i
	}
	i = skipWS(data, i)
	if i >= len(data) || data[i] != ':' {
		return codeSyntax
	}
	return i + 1
}

// validString strictly validates the string body at data[i] (just after the
// opening quote) and returns the index past the closing quote, or a negative
// code, and whether the body holds a backslash escape.
func validString(data []byte, i int) (end int, esc bool) {
	for {
		i = indexSpecial(data, i)
		if i >= len(data) {
			return codeEOF, esc
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, esc
		case c == '\\':
			if i+1 >= len(data) {
				return codeEOF, esc
			}
			esc = true
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if hex4(data, i+2) < 0 {
					return codeSyntax, esc
				}
				i += 6
			default:
				return codeSyntax, esc
			}
		case c >= 0x80:
			k := utf8Run(data, i)
			if k == i {
				return codeSyntax, esc
			}
			i = k
		default: // control character
			return codeSyntax, esc
		}
	}
}
