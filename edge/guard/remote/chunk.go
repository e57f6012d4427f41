package remote

import "unicode/utf8"

// Chunks appends to dst the pieces of text of at most n characters each
// (runes; a split never falls inside a UTF-8 sequence), in order, and
// returns dst. The pieces alias text. Invalid UTF-8 bytes count as one
// character each. Empty text gives no piece; n <= 0 gives text whole.
// Services that state their limit in characters (Azure 10,000, Aliyun
// 2,000) take one call per piece.
func Chunks(dst [][]byte, text []byte, n int) [][]byte {
	if len(text) == 0 {
		return dst
	}
	if n <= 0 || len(text) <= n { // fast path - a rune is at least one byte
		return append(dst, text)
	}
	start, count := 0, 0
	for i := 0; i < len(text); {
		if count == n {
			dst = append(dst, text[start:i])
			start, count = i, 0
		}
		if c := text[i]; c < utf8.RuneSelf {
			i++
		} else {
			_, size := utf8.DecodeRune(text[i:])
			i += size
		}
		count++
	}
	return append(dst, text[start:])
}

// RuneCount is the number of characters of text as Chunks counts them.
func RuneCount(text []byte) int { return utf8.RuneCount(text) }
