package rawjson

import (
	"cmp"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Member names are matched as encoding/json matches them to a struct field:
// without case, under Unicode simple folding ("Model", "MODEL" and
// "\u004dodel" are all "model"; so is "ſ" to "s" and the Kelvin sign to
// "k"). An upstream written in Go reads a request that way, so gw must too:
// policy that read only "model" while the upstream took "Model" would check
// one value and send another. Two spellings of one name in one object are
// refused outright by ValidNames (a Go upstream takes the last, most others
// the exact one), so within a request each name has one spelling and every
// parser reads what gw read.

// foldRune returns the smallest rune of r's simple-folding orbit, as
// encoding/json folds names ('A' for 'a', 'S' for 'ſ', 'K' for the Kelvin
// sign).
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// foldByte folds an ASCII byte: lower-case letters to upper case.
func foldByte(c byte) byte {
	if c-'a' < 26 {
		return c - ('a' - 'A')
	}
	return c
}

// foldFirst reports whether raw and key, non-empty ASCII of equal length,
// may be equal without case by their first bytes: a letter's case bit
// ignored (a false match only costs the call to equalFoldASCII).
func foldFirst(raw []byte, key string) bool {
	return len(raw) == 0 || raw[0]|0x20 == key[0]|0x20
}

// equalFoldASCII reports whether raw and key, both ASCII and of equal
// length, are equal without case. Not inlined: callers try it only after
// the bytes differ, and KeyIs must stay small enough to inline.
//
//go:noinline
func equalFoldASCII(raw []byte, key string) bool {
	for i := 0; i < len(raw); i++ {
		if a, b := raw[i], key[i]; a != b && foldByte(a) != foldByte(b) {
			return false
		}
	}
	return true
}

// wideIn reports whether data[i:j] holds a byte >= 0x80. A last partial
// word is read whole and masked when data extends that far (a key is
// followed by at least its closing quote and a colon).
func wideIn(data []byte, i, j int) bool {
	for ; i+8 <= j; i += 8 {
		if load64(data, i)&msb != 0 {
			return true
		}
	}
	if i >= j {
		return false
	}
	if i+8 <= len(data) {
		return load64(data, i)&msb&(1<<(8*uint(j-i))-1) != 0
	}
	for ; i < j; i++ {
		if data[i] >= 0x80 {
			return true
		}
	}
	return false
}

// oddIn reports whether the name data[i:j] (between its quotes) has an
// upper-case ASCII letter, a byte >= 0x80 or a backslash: a name that can
// equal another under folding without being spelled the same. Two names
// without any are equal under folding only if they are byte for byte.
// Names are short, so every word is looked at without an early exit, a
// last partial one read whole and masked when data extends that far.
func oddIn(data []byte, i, j int) bool {
	var acc uint64
	for ; i+8 <= j; i += 8 {
		acc |= oddMask(load64(data, i))
	}
	if i < j {
		if i+8 > len(data) {
			for ; i < j; i++ {
				if c := data[i]; c-'A' < 26 || c >= 0x80 || c == '\\' {
					return true
				}
			}
			return acc != 0
		}
		acc |= oddMask(load64(data, i)) & (1<<(8*uint(j-i)) - 1)
	}
	return acc != 0
}

// oddMask marks the bytes of w that are 'A'..'Z', >= 0x80 or '\\'. The
// backslash test is the has-zero trick, whose false marks only ever sit
// above a true one, so whether any byte is marked is exact (a lane above
// the name that a borrow marks is beyond the mask's bytes, or above a true
// mark inside them).
func oddMask(w uint64) uint64 {
	bs := w ^ (lsb * '\\')
	return upperMask(w) | (w|((bs-lsb)&^bs))&msb
}

// nameRunes steps through the decoded runes of a quoted name's body.
type nameRunes struct {
	raw []byte
	i   int
}

// next returns the next decoded rune, or -1 at the end or on a malformed
// escape.
func (n *nameRunes) next() rune {
	if n.i >= len(n.raw) {
		return -1
	}
	c := n.raw[n.i]
	switch {
	case c == '\\':
		r, k := unescape(n.raw, n.i)
		if k == 0 {
			n.i = len(n.raw)
			return -1
		}
		n.i += k
		return r
	case c < utf8.RuneSelf:
		n.i++
		return rune(c)
	}
	r, k := utf8.DecodeRune(n.raw[n.i:])
	n.i += k
	return r
}

// foldEqualQuoted reports whether the quoted name raw (quotes included)
// decodes to a name equal to key under folding.
func foldEqualQuoted(raw []byte, key string) bool {
	if len(raw) < 2 {
		return false
	}
	n := nameRunes{raw: raw[1 : len(raw)-1]}
	for _, r := range key {
		got := n.next()
		if got < 0 || (got != r && foldRune(got) != foldRune(r)) {
			return false
		}
	}
	return n.next() < 0
}

// foldEqualNames reports whether two quoted names are equal under folding,
// and whether they also decode to the same text.
func foldEqualNames(a, b []byte) (fold, same bool) {
	x := nameRunes{raw: a[1 : len(a)-1]}
	y := nameRunes{raw: b[1 : len(b)-1]}
	same = true
	for {
		r, s := x.next(), y.next()
		if r < 0 || s < 0 {
			return r == s, same && r == s
		}
		if r != s {
			if foldRune(r) != foldRune(s) {
				return false, false
			}
			same = false
		}
	}
}

// nameSpots notes, during a validating walk (ValidNames, or a strict
// Cursor told to with NoteNames), the objects that hold an odd name: a
// capital, a non-ASCII byte or an escape (oddIn). Only those can hold
// two spellings of one name, so conflict looks at them alone. The zero
// value is ready; one nameSpots serves one document. It is small (a Cursor
// carries one): objects nested deeper than its stacks, or more of them
// than it keeps, make conflict walk the whole document.
type nameSpots struct {
	n   int
	at  [8]int32 // '{' of each object noted, in walk order
	all bool     // more objects, deeper nesting or a larger document: look at all
	// The open objects' '{' by depth: validValue's own walk, and a strict
	// Cursor's walked levels.
	vstarts, cstarts [16]int32
}

// open notes that the object at depth opens at data offset i.
func (s *nameSpots) open(starts []int32, depth, i int) {
	if depth < len(starts) && i <= math.MaxInt32 {
		starts[depth] = int32(i)
	}
}

// odd notes that the object at depth holds an odd name.
func (s *nameSpots) odd(starts []int32, depth int) {
	switch {
	case s.all:
	case depth >= len(starts) || s.n == len(s.at):
		s.all = true
	case s.n > 0 && s.at[s.n-1] == starts[depth]:
	default:
		s.at[s.n] = starts[depth]
		s.n++
	}
}

// conflict is FoldConflict for the document the notes were taken on: the
// quoted name of a member spelled differently from an earlier one of its
// object that it equals under folding (of the first object noted that holds
// one), or nil.
func (s *nameSpots) conflict(data []byte) []byte {
	switch {
	case s.all || len(data) > math.MaxInt32:
		return FoldConflict(data)
	case s.n == 0:
		return nil
	}
	w := getWalk(data)
	defer w.release()
	for _, start := range s.at[:s.n] {
		if w.object(int(start), false) < 0 {
			return w.found
		}
	}
	return nil
}

// FoldConflict returns the quoted name of a member whose name equals an
// earlier member's of the same object under folding but decodes to a
// different text ("model" then "Model"), or nil if there is none: of the
// first object to end that holds one, the first such member. data must be
// valid JSON (Valid); a malformed document yields nil.
func FoldConflict(data []byte) []byte {
	w := getWalk(data)
	defer w.release()
	w.value(0)
	return w.found
}

// walkPool keeps foldWalks and their scratch: a check allocates nothing
// once warm.
var walkPool = sync.Pool{New: func() any { return new(foldWalk) }}

func getWalk(data []byte) *foldWalk {
	w := walkPool.Get().(*foldWalk)
	w.data, w.keys, w.found = data, w.keys[:0], nil
	return w
}

// release returns w to the pool, keeping no reference to the document.
func (w *foldWalk) release() {
	w.data, w.found = nil, nil
	walkPool.Put(w)
}

type nameSpan struct {
	start, end     int // the quoted name
	odd, esc, wide bool
}

type foldWalk struct {
	data   []byte
	keys   []nameSpan // names of the objects open, innermost last
	found  []byte
	hashes []nameHash // conflict's scratch
	fold   []byte     // conflict's scratch: one folded name
}

// value walks the value at or after data[i] and returns the index past it,
// or -1 on malformed input or once a conflict is found.
func (w *foldWalk) value(i int) int {
	data := w.data
	i = skipWS(data, i)
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '{':
		return w.object(i, true)
	case '[':
		i = skipWS(data, i+1)
		if i < len(data) && data[i] == ']' {
			return i + 1
		}
		for {
			if i = w.value(i); i < 0 {
				return -1
			}
			if i = skipWS(data, i); i >= len(data) {
				return -1
			}
			if data[i] == ']' {
				return i + 1
			}
			i++
		}
	case '"':
		e, _ := scanString(data, i+1)
		return e
	}
	e, _ := skipValue(data, i)
	return e
}

// object walks the object at data[i] and checks its names; deep walks its
// values too (their objects checked in turn), else they are skipped.
func (w *foldWalk) object(i int, deep bool) int {
	data := w.data
	base := len(w.keys)
	odd := false
	if i = skipWS(data, i+1); i < len(data) && data[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return -1
		}
		e, esc, o, wide := scanName(data, i+1, true)
		if e < 0 {
			return -1
		}
		odd = odd || o
		w.keys = append(w.keys, nameSpan{i, e, o, esc, wide})
		if i = skipWS(data, e); i >= len(data) || data[i] != ':' {
			return -1
		}
		if deep {
			i = w.value(i + 1)
		} else {
			i, _ = skipValue(data, skipWS(data, i+1))
		}
		if i < 0 {
			return -1
		}
		if i = skipWS(data, i); i >= len(data) {
			return -1
		}
		if data[i] == '}' {
			break
		}
		i = skipWS(data, i+1)
	}
	if odd && w.conflict(w.keys[base:]) {
		return -1
	}
	w.keys = w.keys[:base]
	return i + 1
}

// conflict looks for two names of one object equal under folding but not
// in text. Each name's folded form is hashed once (seeded: crafted names
// cannot make hashes meet), and the hashes are sorted, so an object costs
// about a pass over its names plus a sort, whatever its size or its
// duplicates. Within a run of equal hashes (one folded name), the first
// name in document order whose text differs from the run's first is a
// conflict; the earliest over all runs is reported.
func (w *foldWalk) conflict(keys []nameSpan) bool {
	data := w.data
	if len(keys) <= 8 {
		// Small objects, most of them: each pair with an odd name, ASCII
		// names without escapes compared in place.
		for j := 1; j < len(keys); j++ {
			for i := 0; i < j; i++ {
				if (keys[i].odd || keys[j].odd) && differentSpelling(data, keys[i], keys[j]) {
					w.found = data[keys[j].start:keys[j].end:keys[j].end]
					return true
				}
			}
		}
		return false
	}
	hs := w.hashes[:0]
	for j, k := range keys {
		w.fold = appendFolded(w.fold[:0], data[k.start:k.end], k.esc || k.wide)
		hs = append(hs, nameHash{h: maphash.Bytes(foldSeed, w.fold), i: j})
	}
	w.hashes = hs
	if len(hs) <= 64 {
		// Hashes compared pairwise: cheaper than a sort at this size.
		for j := 1; j < len(hs); j++ {
			for i := 0; i < j; i++ {
				if hs[i].h == hs[j].h && differentSpelling(data, keys[i], keys[j]) {
					w.found = data[keys[j].start:keys[j].end:keys[j].end]
					return true
				}
			}
		}
		return false
	}
	slices.SortFunc(hs, func(a, b nameHash) int {
		if c := cmp.Compare(a.h, b.h); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	best := -1
	for r := 0; r < len(hs); {
		e := r + 1
		for e < len(hs) && hs[e].h == hs[r].h {
			e++
		}
		for x := r + 1; x < e && (best < 0 || hs[x].i < best); x++ {
			if differentSpelling(data, keys[hs[r].i], keys[hs[x].i]) {
				best = hs[x].i
				break
			}
		}
		r = e
	}
	if best < 0 {
		return false
	}
	k := keys[best]
	w.found = data[k.start:k.end:k.end]
	return true
}

// differentSpelling reports whether two names are equal under folding but
// not in text.
func differentSpelling(data []byte, a, b nameSpan) bool {
	if !a.esc && !b.esc && !a.wide && !b.wide {
		// ASCII without escapes: equal under folding only at equal length.
		x, y := data[a.start+1:a.end-1], data[b.start+1:b.end-1]
		return len(x) == len(y) && string(x) != string(y) && equalFoldASCII(x, string(y))
	}
	fold, same := foldEqualNames(data[a.start:a.end], data[b.start:b.end])
	return fold && !same
}

// nameHash is a name's folded hash and its index in the object.
type nameHash struct {
	h uint64
	i int
}

// foldSeed seeds the names' hashes, per process.
var foldSeed = maphash.MakeSeed()

// appendFolded appends the folded form of a quoted name: every rune
// decoded and folded; decode is false for an ASCII name without escapes.
func appendFolded(dst, quoted []byte, decode bool) []byte {
	if !decode {
		// ASCII without escapes: byte by byte.
		for _, c := range quoted[1 : len(quoted)-1] {
			dst = append(dst, foldByte(c))
		}
		return dst
	}
	n := nameRunes{raw: quoted[1 : len(quoted)-1]}
	for r := n.next(); r >= 0; r = n.next() {
		dst = utf8.AppendRune(dst, foldRune(r))
	}
	return dst
}

// FoldedNameError reports a valid document that ValidNames refuses: Name
// (quoted, as in the document; at most 64 bytes of it) differs only in case
// from another member's name of the same object.
type FoldedNameError struct{ Name []byte }

// Folded returns a *FoldedNameError for the quoted name, cut to 64 bytes.
func Folded(name []byte) *FoldedNameError {
	if len(name) > 64 {
		name = append(name[:61:61], "..."...)
	}
	return &FoldedNameError{Name: append([]byte(nil), name...)}
}

func (e *FoldedNameError) Error() string {
	return "the member name " + string(e.Name) + " differs only in case from another member of the same object; " +
		"parsers disagree on which one counts, so the body is refused"
}

// upperMask marks the bytes of w in 'A'..'Z', among bytes < 0x80 (a byte
// >= 0x80 may be marked too; callers mark those anyway). Bytes 'A'..'Z' are
// those where b+(0x80-'A') sets the high bit and b+(0x80-'Z'-1) does not;
// no lane carries into the next.
func upperMask(w uint64) uint64 {
	lo := w &^ msb
	return (lo + lsb*(0x80-'A')) &^ (lo + lsb*(0x80-'Z'-1)) & msb
}

// scanName is scanString for a member name that also reports, as it scans,
// whether the name is wide (a byte >= 0x80) and, when wantOdd, odd
// (oddIn): an OR or two per word. A name with an escape is reported odd
// and not wide (it is compared decoded anyway).
func scanName(data []byte, i int, wantOdd bool) (end int, esc, odd, wide bool) {
	var hi, up uint64
	for i+8 <= len(data) {
		w := load64(data, i)
		if m := quoteOrBackslashMask(w); m != 0 {
			w &= m&-m - 1 // the bytes before the quote or backslash
			hi |= w
			if wantOdd {
				up |= upperMask(w)
			}
			i += bits.TrailingZeros64(m) >> 3
			if data[i] == '"' {
				return i + 1, false, (hi&msb | up) != 0, hi&msb != 0
			}
			e, _ := scanString(data, i)
			return e, true, true, false
		}
		hi |= w
		if wantOdd {
			up |= upperMask(w)
		}
		i += 8
	}
	// The document ends within a word: byte by byte.
	e, esc := scanString(data, i)
	if e < 0 || esc {
		return e, esc, esc, false
	}
	wide = hi&msb != 0 || wideIn(data, i, e-1)
	return e, false, wantOdd && (wide || up != 0 || oddIn(data, i, e-1)), wide
}

// validName is validString for a member name that also reports whether
// the name is odd (oddIn), as it validates: the common lower-case ASCII
// name costs an OR per word.
func validName(data []byte, i int) (end int, esc, odd bool) {
	var up uint64
	for i+8 <= len(data) {
		w := load64(data, i)
		if m := specialMask(w); m != 0 {
			up |= upperMask(w & (m&-m - 1))
			i += bits.TrailingZeros64(m) >> 3
			if data[i] == '"' {
				return i + 1, false, up != 0
			}
			// A backslash or a non-ASCII byte (odd), or a control character
			// (invalid): validString takes it from here.
			e, esc := validString(data, i)
			return e, esc, true
		}
		up |= upperMask(w)
		i += 8
	}
	e, esc := validString(data, i)
	if e < 0 {
		return e, esc, false
	}
	return e, esc, esc || up != 0 || oddIn(data, i, e-1)
}

// NameIs reports whether the raw quoted member name (as ForEachKey or
// Cursor.Key return it) decodes to name under folding: the way to compare
// a name, as StringEquals is the way to compare a string value.
func NameIs(quoted []byte, name string) bool {
	if len(quoted) < 2 {
		return false
	}
	raw := quoted[1 : len(quoted)-1]
	// An escape or a multi-byte rune takes more bytes than the ASCII
	// letter it may stand for: a name spelled in as many bytes as an ASCII
	// name is equal to it only letter for letter, up to ASCII case; a
	// shorter one never is. Of the longer spellings, one whose plain first
	// byte differs is not (most names compared against another differ
	// there); only the others are decoded.
	if Plain(name) {
		if len(raw) <= len(name) {
			return len(raw) == len(name) && (string(raw) == name || foldFirst(raw, name) && equalFoldASCII(raw, name))
		}
		if c := raw[0]; c < 0x80 && c != '\\' && len(name) > 0 && foldByte(c) != foldByte(name[0]) {
			return false
		}
	}
	return foldEqualQuoted(quoted, name)
}

// PlainName reports whether the raw quoted member name is lower-case ASCII
// without escapes: such a name equals a lower-case name under folding only
// byte for byte, so a byte switch classifies it (NameIs the others).
func PlainName(quoted []byte) bool {
	return len(quoted) >= 2 && !oddIn(quoted, 1, len(quoted)-1)
}

// AppendNameLower appends the raw quoted member name decoded and folded to
// lower case ("MODEL", "mod\u0065l" and "Model" all give "model"; ſ gives
// s, the Kelvin sign k): a walker that switches on lower-case names reads a
// name in any case through it, as encoding/json would match it. Runes that
// fold to no ASCII letter are kept as they decode.
func AppendNameLower(dst, quoted []byte) ([]byte, error) {
	if len(quoted) < 2 || quoted[0] != '"' || quoted[len(quoted)-1] != '"' {
		return dst, ErrSyntax
	}
	n := nameRunes{raw: quoted[1 : len(quoted)-1]}
	for n.i < len(n.raw) {
		r := n.next()
		if r < 0 {
			return dst, ErrSyntax
		}
		if f := foldRune(r); f < utf8.RuneSelf {
			if f-'A' < 26 {
				f += 'a' - 'A'
			}
			dst = append(dst, byte(f))
			continue
		}
		dst = utf8.AppendRune(dst, r)
	}
	return dst, nil
}
