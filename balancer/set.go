package balancer

import "math/bits"

// Set is a bitset of target indexes: bit i set means target i is in the set.
// The zero value (nil) is the empty set. Add grows the set append-style, so
// keep the returned value; reuse a Set across requests with s = s[:0].
type Set []uint64

// Has reports whether i is in s. Indexes past the end are not.
func (s Set) Has(i int) bool {
	w := uint(i) >> 6
	return w < uint(len(s)) && s[w]&(1<<(uint(i)&63)) != 0
}

// Add adds i (≥ 0) to s and returns s, grown if needed. It allocates only
// when s lacks capacity.
func (s Set) Add(i int) Set {
	w := i >> 6
	for len(s) <= w {
		s = append(s, 0)
	}
	s[w] |= 1 << (uint(i) & 63)
	return s
}

// Len returns the number of members.
func (s Set) Len() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// word returns word w of s; words past the end are empty.
func (s Set) word(w int) uint64 {
	if w < len(s) {
		return s[w]
	}
	return 0
}

// next returns the smallest member ≥ i, or -1.
func (s Set) next(i int) int {
	w := i >> 6
	if w >= len(s) {
		return -1
	}
	x := s[w] &^ (1<<(uint(i)&63) - 1)
	for {
		if x != 0 {
			return w<<6 | bits.TrailingZeros64(x)
		}
		w++
		if w == len(s) {
			return -1
		}
		x = s[w]
	}
}

// appendMembers appends up to limit members of s in ascending order.
func (s Set) appendMembers(out []int, limit int) []int {
	for w, x := range s {
		for x != 0 {
			if limit <= 0 {
				return out
			}
			out = append(out, w<<6|bits.TrailingZeros64(x))
			x &= x - 1
			limit--
		}
	}
	return out
}

// sized returns s resized to n words, reusing its capacity; the contents are
// unspecified.
func (s Set) sized(n int) Set {
	if cap(s) < n {
		return make(Set, n)
	}
	return s[:n]
}
