package rawjson_test

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"gw/sse/rawjson"
)

// TestRuneLen compares runeLen with utf8.DecodeRune on every 1-, 2- and
// 3-byte sequence that starts with a non-ASCII byte, and on 4-byte sequences
// around every boundary.
func TestRuneLen(t *testing.T) {
	check := func(b []byte) {
		r, size := utf8.DecodeRune(b)
		want := size
		if r == utf8.RuneError && size == 1 {
			want = 0
		}
		if got := rawjson.RuneLen(b, 0); got != want {
			t.Fatalf("runeLen(% x) = %d; want %d", b, got, want)
		}
	}
	for c0 := 0x80; c0 < 0x100; c0++ {
		check([]byte{byte(c0)})
		for c1 := range 0x100 {
			check([]byte{byte(c0), byte(c1)})
			for _, c2 := range []byte{0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xff} {
				check([]byte{byte(c0), byte(c1), c2})
				for _, c3 := range []byte{0x00, 0x7f, 0x80, 0xbf, 0xc0} {
					check([]byte{byte(c0), byte(c1), c2, c3})
				}
			}
		}
	}
}

// TestIndexSpecial compares the word-at-a-time scan with a byte loop at every
// alignment.
func TestIndexSpecial(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	special := func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' || c >= 0x80 }
	buf := make([]byte, 64)
	for range 20000 {
		for i := range buf {
			buf[i] = byte(0x20 + r.IntN(0x5f))
		}
		for range r.IntN(3) {
			buf[r.IntN(len(buf))] = []byte{0x00, 0x1f, '"', '\\', 0x80, 0xff, 0x7f, 0x20, '!', '#', '[', ']'}[r.IntN(12)]
		}
		from := r.IntN(len(buf) + 1)
		want := len(buf)
		for i := from; i < len(buf); i++ {
			if special(buf[i]) {
				want = i
				break
			}
		}
		if got := rawjson.IndexSpecial(buf, from); got != want {
			t.Fatalf("indexSpecial(%q, %d) = %d; want %d", buf, from, got, want)
		}
	}
}

// TestIsFastKey compares the word-at-a-time check with a byte loop, every
// length up to 40, a backslash or non-ASCII byte at every position.
func TestIsFastKey(t *testing.T) {
	want := func(k string) bool {
		for i := 0; i < len(k); i++ {
			if k[i] >= 0x80 || k[i] == '\\' {
				return false
			}
		}
		return true
	}
	for n := range 41 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + i%26)
		}
		if !rawjson.IsFastKey(string(b)) {
			t.Fatalf("isFastKey(%q) = false", b)
		}
		for pos := range n {
			for _, c := range []byte{'\\', 0x80, 0xff, 0xc3, 0x7f, '[', 0x5c ^ 0x80} {
				k := []byte(string(b))
				k[pos] = c
				if got := rawjson.IsFastKey(string(k)); got != want(string(k)) {
					t.Fatalf("isFastKey(%q) = %v", k, got)
				}
			}
		}
	}
}
