package keyword

import (
	"errors"
	"sort"
)

// Transition entries carry the next state's row offset in the low bits and
// two flags in the high bits, so the scan loop needs one load, one add and
// one compare per byte.
const (
	flagLiteral = 1 << 31 // a literal pattern ends here: stop
	flagFactor  = 1 << 30 // a regex prefilter factor ends here: note it, go on
	rowMask     = flagFactor - 1
)

// automaton is an Aho-Corasick automaton compiled into a dense DFA over
// byte classes: bytes that occur in no pattern share class 0, and ASCII
// upper-case letters share the class of their lower-case twin, which makes
// matching ASCII-case-insensitive at no cost per byte.
type automaton struct {
	cls    [256]uint16 // byte → class
	maxLen int         // longest pattern (literal or factor) in bytes
	nc     uint32      // number of classes
	shift  uint32      // row width is 1<<shift ≥ nc: a state is its row offset >> shift
	trans  []uint32    // state*nc + class → next row offset | flags
	// Per state (indexed by row offset / nc):
	lit    []int32  // lowest literal id ending here (via suffix links), or -1
	factor []uint64 // prefilter bits of the factors ending here
}

// maxTable bounds the transition table (64 MiB): some 250,000 automaton
// states at 64 byte classes, far beyond a keyword list's needs.
const maxTable = 1 << 24

// asciiLower folds A–Z to a–z and leaves every other byte alone.
func asciiLower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + ('a' - 'A')
	}
	return b
}

// buildAutomaton compiles literals (reported by id, their position in
// lits) and prefilter factors (each with its bit) into one automaton.
// Patterns must be non-empty.
func buildAutomaton(lits []string, factors []string, factorBits []uint64) (*automaton, error) {
	a := &automaton{}
	// Byte classes from the folded patterns; class 0 is "no pattern uses it".
	next := uint16(1)
	assign := func(p string) {
		for i := 0; i < len(p); i++ {
			b := asciiLower(p[i])
			if a.cls[b] == 0 {
				a.cls[b] = next
				next++
			}
		}
	}
	for _, p := range lits {
		assign(p)
		a.maxLen = max(a.maxLen, len(p))
	}
	for _, p := range factors {
		assign(p)
		a.maxLen = max(a.maxLen, len(p))
	}
	for b := 'A'; b <= 'Z'; b++ {
		a.cls[b] = a.cls[b+('a'-'A')]
	}
	a.nc = uint32(next)
	for 1<<a.shift < a.nc {
		a.shift++
	}

	// Trie with sparse children while building.
	type node struct {
		child  map[uint16]int32
		fail   int32
		lit    int32
		factor uint64
	}
	nodes := []node{{child: map[uint16]int32{}, lit: -1}}
	insert := func(p string) int32 {
		s := int32(0)
		for i := 0; i < len(p); i++ {
			c := a.cls[asciiLower(p[i])]
			n, ok := nodes[s].child[c]
			if !ok {
				n = int32(len(nodes))
				nodes = append(nodes, node{child: map[uint16]int32{}, lit: -1})
				nodes[s].child[c] = n
			}
			s = n
		}
		return s
	}
	for id, p := range lits {
		if p == "" {
			return nil, errors.New("empty literal")
		}
		s := insert(p)
		if nodes[s].lit < 0 {
			nodes[s].lit = int32(id)
		}
	}
	for i, p := range factors {
		if p == "" {
			return nil, errors.New("BUG: empty prefilter factor")
		}
		s := insert(p)
		nodes[s].factor |= factorBits[i]
	}
	if uint64(len(nodes))<<a.shift > maxTable {
		return nil, errors.New("too many patterns: the automaton would exceed its size limit")
	}

	// Breadth-first: suffix links, inherited outputs, and the dense table.
	a.trans = make([]uint32, len(nodes)<<a.shift)
	a.lit = make([]int32, len(nodes))
	a.factor = make([]uint64, len(nodes))
	queue := make([]int32, 0, len(nodes))
	queue = append(queue, 0)
	for qi := 0; qi < len(queue); qi++ {
		s := queue[qi]
		n := &nodes[s]
		if s != 0 {
			f := &nodes[n.fail]
			// Outputs of the longest proper suffix that is a pattern prefix;
			// the parent was finished first, so f's outputs are complete.
			if f.lit >= 0 && (n.lit < 0 || f.lit < n.lit) {
				n.lit = f.lit
			}
			n.factor |= f.factor
		}
		a.lit[s], a.factor[s] = n.lit, n.factor
		// Children in class order so the build is deterministic.
		cs := make([]int, 0, len(n.child))
		for c := range n.child {
			cs = append(cs, int(c))
		}
		sort.Ints(cs)
		row := uint32(s) << a.shift
		for c := uint32(0); c < a.nc; c++ {
			var t int32
			if ch, ok := n.child[uint16(c)]; ok {
				t = ch
			} else if s != 0 {
				// Already filled: the fail state is shallower.
				a.trans[row+c] = a.trans[uint32(n.fail)<<a.shift+c]
				continue
			}
			a.trans[row+c] = uint32(t) << a.shift
		}
		for _, c := range cs {
			ch := n.child[uint16(c)]
			if s == 0 {
				nodes[ch].fail = 0
			} else {
				nodes[ch].fail = int32(a.trans[uint32(n.fail)<<a.shift+uint32(c)] >> a.shift)
			}
			queue = append(queue, ch)
		}
	}
	// Flags go on after every row is built: targets are final by then.
	for i, e := range a.trans {
		st := e >> a.shift
		if a.lit[st] >= 0 {
			a.trans[i] |= flagLiteral
		}
		if a.factor[st] != 0 {
			a.trans[i] |= flagFactor
		}
	}
	return a, nil
}

// scan runs data through the automaton. It returns the id of the literal
// that ends first in data (lowest id on a tie), or -1, and when it is -1
// the prefilter bits of every factor in data.
func (a *automaton) scan(data []byte) (lit int32, seen uint64) {
	switch {
	case len(data) < splitMin || len(data) < 4*a.maxLen:
		_, lit, seen = a.run(0, data)
		return lit, seen
	case len(data) < 8*a.maxLen:
		return a.scan2(data)
	}
	return a.scan4(data)
}

// Texts shorter than splitMin are scanned as one stream.
const splitMin = 256

// run feeds data to the automaton from state s and stops at the first
// literal.
func (a *automaton) run(s uint32, data []byte) (state uint32, lit int32, seen uint64) {
	trans, cls := a.trans, &a.cls
	for _, b := range data {
		e := trans[s+uint32(cls[b])]
		// Fast path - no output: most bytes of most texts.
		if e >= flagFactor {
			st := (e & rowMask) >> a.shift
			if e&flagLiteral != 0 {
				return 0, a.lit[st], seen
			}
			seen |= a.factor[st]
		}
		s = e & rowMask
	}
	return s, -1, seen
}

// scan2 is scan as two interleaved streams. A DFA walk is one chain of
// dependent loads, so a single stream waits on memory latency each byte;
// two independent chains keep the core busy and nearly halve the time.
//
// Stream A covers data[:mid+maxLen-1] and so finds every match ending
// there; stream B starts from the root at mid and finds every match
// starting at or after mid. Every match is found by one of them (it is at
// most maxLen long), A's first literal is the first overall, and when A has
// none B's first is (B's state is exact for every match it can report
// first, since those start after mid).
func (a *automaton) scan2(data []byte) (int32, uint64) {
	mid := len(data) / 2
	A, B := data[:mid+a.maxLen-1], data[mid:]
	n := min(len(A), len(B))
	A, B = A[:len(A):len(A)], B[:len(B):len(B)]
	trans, cls := a.trans, &a.cls
	var sa, sb uint32
	var seenA, seenB uint64
	hitB := int32(-1)
	for k := 0; k < n; k++ {
		ea := trans[sa+uint32(cls[A[k]])]
		eb := trans[sb+uint32(cls[B[k]])]
		if ea|eb >= flagFactor {
			if ea >= flagFactor {
				st := (ea & rowMask) >> a.shift
				if ea&flagLiteral != 0 {
					return a.lit[st], 0
				}
				seenA |= a.factor[st]
			}
			if eb >= flagFactor && hitB < 0 {
				st := (eb & rowMask) >> a.shift
				if eb&flagLiteral != 0 {
					hitB = a.lit[st]
				} else {
					seenB |= a.factor[st]
				}
			}
		}
		sa, sb = ea&rowMask, eb&rowMask
	}
	_, lit, seen := a.run(sa, A[n:])
	if lit >= 0 {
		return lit, 0
	}
	seenA |= seen
	if hitB >= 0 {
		return hitB, 0
	}
	_, lit, seen = a.run(sb, B[n:])
	return lit, seenA | seenB | seen
}

// scan4 is scan2 with four interleaved streams, for texts long enough that
// the maxLen-1 overlap each stream adds is small against its share. The
// argument is scan2's by induction: stream i starts from the root at its
// quarter and covers maxLen-1 bytes past it, so when streams 0..i-1 found
// no literal, stream i's first literal is the first overall.
func (a *automaton) scan4(data []byte) (int32, uint64) {
	q, ext := len(data)/4, a.maxLen-1
	d0, d1, d2, d3 := data[:q+ext:q+ext], data[q:2*q+ext:2*q+ext], data[2*q:3*q+ext:3*q+ext], data[3*q:]
	n := min(len(d0), len(d3)) // d0, d1 and d2 are equally long
	d0, d1, d2, d3 = d0[:n], d1[:n], d2[:n], d3[:n]
	trans, cls := a.trans, &a.cls
	var s0, s1, s2, s3 uint32
	var seen0, seen1, seen2, seen3 uint64
	hit1, hit2, hit3 := int32(-1), int32(-1), int32(-1)
	for k := range d0 {
		e0 := trans[s0+uint32(cls[d0[k]])]
		e1 := trans[s1+uint32(cls[d1[k]])]
		e2 := trans[s2+uint32(cls[d2[k]])]
		e3 := trans[s3+uint32(cls[d3[k]])]
		if e0|e1|e2|e3 >= flagFactor {
			if e0 >= flagFactor {
				st := (e0 & rowMask) >> a.shift
				if e0&flagLiteral != 0 {
					return a.lit[st], 0
				}
				seen0 |= a.factor[st]
			}
			a.note(e1, &hit1, &seen1)
			a.note(e2, &hit2, &seen2)
			a.note(e3, &hit3, &seen3)
		}
		s0, s1, s2, s3 = e0&rowMask, e1&rowMask, e2&rowMask, e3&rowMask
	}
	// Tails, in stream order: a stream's own first literal counts only when
	// every earlier stream has none.
	seen := seen0
	for i, st := range [4]struct {
		s    uint32
		hit  int32
		seen uint64
		tail []byte
	}{
		{s0, -1, 0, data[n:min(q+ext, len(data))]},
		{s1, hit1, seen1, data[q+n : min(2*q+ext, len(data))]},
		{s2, hit2, seen2, data[2*q+n : min(3*q+ext, len(data))]},
		{s3, hit3, seen3, data[3*q+n:]},
	} {
		if st.hit >= 0 {
			return st.hit, 0
		}
		_, lit, sn := a.run(st.s, st.tail)
		if lit >= 0 {
			return lit, 0
		}
		if i > 0 {
			seen |= st.seen
		}
		seen |= sn
	}
	return -1, seen
}

// note records a stream's output entry e: its first literal, or the
// factors seen before it.
func (a *automaton) note(e uint32, hit *int32, seen *uint64) {
	if e < flagFactor || *hit >= 0 {
		return
	}
	st := (e & rowMask) >> a.shift
	if e&flagLiteral != 0 {
		*hit = a.lit[st]
		return
	}
	*seen |= a.factor[st]
}

// run2 runs two texts through the automaton as independent streams from
// the root, interleaved over their common length (see scan2 for why), and
// reports each one's first literal, or when it has none the prefilter
// bits of its factors.
func (a *automaton) run2(d0, d1 []byte) (lit0 int32, seen0 uint64, lit1 int32, seen1 uint64) {
	n := min(len(d0), len(d1))
	h0, h1 := d0[:n], d1[:n]
	trans, cls := a.trans, &a.cls
	var s0, s1 uint32
	lit0, lit1 = -1, -1
	for k := range h0 {
		e0 := trans[s0+uint32(cls[h0[k]])]
		e1 := trans[s1+uint32(cls[h1[k]])]
		if e0|e1 >= flagFactor {
			a.note(e0, &lit0, &seen0)
			a.note(e1, &lit1, &seen1)
		}
		s0, s1 = e0&rowMask, e1&rowMask
	}
	lit0, seen0 = a.finish(s0, d0[n:], lit0, seen0)
	lit1, seen1 = a.finish(s1, d1[n:], lit1, seen1)
	return lit0, seen0, lit1, seen1
}

// run4 is run2 with four texts.
func (a *automaton) run4(d0, d1, d2, d3 []byte) (lit [4]int32, seen [4]uint64) {
	n := min(len(d0), len(d1), len(d2), len(d3))
	h0, h1, h2, h3 := d0[:n], d1[:n], d2[:n], d3[:n]
	trans, cls := a.trans, &a.cls
	var s0, s1, s2, s3 uint32
	l0, l1, l2, l3 := int32(-1), int32(-1), int32(-1), int32(-1)
	var f0, f1, f2, f3 uint64
	for k := range h0 {
		e0 := trans[s0+uint32(cls[h0[k]])]
		e1 := trans[s1+uint32(cls[h1[k]])]
		e2 := trans[s2+uint32(cls[h2[k]])]
		e3 := trans[s3+uint32(cls[h3[k]])]
		if e0|e1|e2|e3 >= flagFactor {
			a.note(e0, &l0, &f0)
			a.note(e1, &l1, &f1)
			a.note(e2, &l2, &f2)
			a.note(e3, &l3, &f3)
		}
		s0, s1, s2, s3 = e0&rowMask, e1&rowMask, e2&rowMask, e3&rowMask
	}
	lit[0], seen[0] = a.finish(s0, d0[n:], l0, f0)
	lit[1], seen[1] = a.finish(s1, d1[n:], l1, f1)
	lit[2], seen[2] = a.finish(s2, d2[n:], l2, f2)
	lit[3], seen[3] = a.finish(s3, d3[n:], l3, f3)
	return lit, seen
}

// finish runs a stream's tail from state s unless it already has a literal.
func (a *automaton) finish(s uint32, tail []byte, lit int32, seen uint64) (int32, uint64) {
	if lit >= 0 || len(tail) == 0 {
		return lit, seen
	}
	_, l, sn := a.run(s, tail)
	return l, seen | sn
}
