package rawjson

import "math/bits"

// Word-at-a-time ("SIMD within a register") helpers. They find the first
// interesting byte of a string body eight bytes per step; the byte loops after
// them handle the tail.
//
// The classic has-zero trick (v-lsb)&^v&msb may also flag bytes *above* a true
// hit (the borrow propagates upwards), never below one, so the lowest set bit
// of the mask - the first byte in memory on a little-endian load - is exact.

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// load64 reads s[i:i+8] as a little-endian word. The compiler merges the byte
// loads into one 8-byte load.
func load64[T string | []byte](s T, i int) uint64 {
	s8 := s[i : i+8]
	return uint64(s8[0]) | uint64(s8[1])<<8 | uint64(s8[2])<<16 | uint64(s8[3])<<24 |
		uint64(s8[4])<<32 | uint64(s8[5])<<40 | uint64(s8[6])<<48 | uint64(s8[7])<<56
}

// quoteOrBackslashMask marks the bytes of w equal to '"' or '\\'.
func quoteOrBackslashMask(w uint64) uint64 {
	q := w ^ (lsb * '"')
	b := w ^ (lsb * '\\')
	return ((q - lsb) &^ q & msb) | ((b - lsb) &^ b & msb)
}

// specialMask marks the bytes of w that a plain string run cannot contain:
// control characters (< 0x20), '"', '\\' and non-ASCII bytes (>= 0x80).
func specialMask(w uint64) uint64 {
	q := w ^ (lsb * '"')
	b := w ^ (lsb * '\\')
	ctl := (w - lsb*0x20) &^ w
	return (ctl | ((q - lsb) &^ q) | ((b - lsb) &^ b) | w) & msb
}

// indexSpecial returns the index of the first byte at or after i that is a
// control character, '"', '\\' or >= 0x80, or len(s).
func indexSpecial[T string | []byte](s T, i int) int {
	// Four words (most strings end in them), then 32 bytes per step with
	// AVX2 (specialBlocks).
	if i+32 <= len(s) {
		for k := i; k < i+32; k += 8 {
			if m := specialMask(load64(s, k)); m != 0 {
				return k + bits.TrailingZeros64(m)>>3
			}
		}
		if i = specialBlocks(s, i+32); i < len(s) && isSpecial[s[i]] {
			return i
		}
	}
	for ; i+8 <= len(s); i += 8 {
		if m := specialMask(load64(s, i)); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(s); i++ {
		if isSpecial[s[i]] {
			return i
		}
	}
	return len(s)
}

// Plain reports whether s is quoted as it is: no control character,
// quote, backslash or non-ASCII byte (those AppendQuote escapes or
// checks). It reads whole words, the last 4-7 bytes as two overlapping
// halves and fewer padded with a plain byte, so a short value costs no
// byte loop: encoders test field values with it before quoting them.
func Plain(s string) bool {
	for ; len(s) >= 8; s = s[8:] {
		if specialMask(load64(s, 0)) != 0 {
			return false
		}
	}
	w := uint64(lsb * 'a')
	if k := len(s); k >= 4 {
		head := uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
		t := s[k-4:]
		tail := uint32(t[0]) | uint32(t[1])<<8 | uint32(t[2])<<16 | uint32(t[3])<<24
		w = w<<(8*k&63) | uint64(tail)<<(8*(k-4)&63) | uint64(head)
	} else {
		for i := k - 1; i >= 0; i-- {
			w = w<<8 | uint64(s[i])
		}
	}
	return specialMask(w) == 0
}

var isSpecial = func() (t [256]bool) {
	for c := range t {
		t[c] = c < 0x20 || c == '"' || c == '\\' || c >= 0x80
	}
	return t
}()

// runeLen returns the length of the valid UTF-8 sequence that starts at s[i]
// (s[i] >= 0x80), or 0 if it is invalid or truncated. It accepts exactly what
// utf8.DecodeRune accepts: no overlong forms, no surrogates, nothing above
// U+10FFFF.
func runeLen[T string | []byte](s T, i int) int {
	c := s[i]
	n := len(s) - i
	switch {
	case c < 0xC2:
		return 0
	case c < 0xE0:
		if n < 2 || s[i+1]&0xC0 != 0x80 {
			return 0
		}
		return 2
	case c < 0xF0:
		if n < 3 {
			return 0
		}
		lo, hi := byte(0x80), byte(0xBF)
		if c == 0xE0 {
			lo = 0xA0
		} else if c == 0xED {
			hi = 0x9F
		}
		if c1 := s[i+1]; c1 < lo || c1 > hi || s[i+2]&0xC0 != 0x80 {
			return 0
		}
		return 3
	case c < 0xF5:
		if n < 4 {
			return 0
		}
		lo, hi := byte(0x80), byte(0xBF)
		if c == 0xF0 {
			lo = 0x90
		} else if c == 0xF4 {
			hi = 0x8F
		}
		if c1 := s[i+1]; c1 < lo || c1 > hi || s[i+2]&0xC0 != 0x80 || s[i+3]&0xC0 != 0x80 {
			return 0
		}
		return 4
	}
	return 0
}

// utf8Run returns the end of the run of valid multi-byte UTF-8 sequences that
// starts at s[i]; it returns i when s[i] does not start a valid sequence.
func utf8Run[T string | []byte](s T, i int) int {
	for i < len(s) && s[i] >= 0x80 {
		n := runeLen(s, i)
		if n == 0 {
			break
		}
		i += n
	}
	return i
}
