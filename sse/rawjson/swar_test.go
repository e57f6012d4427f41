package rawjson_test

import (
	"math/rand/v2"
	"strings"
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

// TestIndexSpecial compares the vector and word-at-a-time scans with a byte
// loop at every alignment and length up to a few blocks, on slices and
// strings.
func TestIndexSpecial(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	special := func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' || c >= 0x80 }
	for range 40000 {
		buf := make([]byte, r.IntN(160))
		for i := range buf {
			buf[i] = byte(0x20 + r.IntN(0x5f))
		}
		for range r.IntN(3) {
			if len(buf) > 0 {
				buf[r.IntN(len(buf))] = []byte{0x00, 0x1f, '"', '\\', 0x80, 0xff, 0x7f, 0x20, '!', '#', '[', ']'}[r.IntN(12)]
			}
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
		if got := rawjson.IndexSpecialString(string(buf), from); got != want {
			t.Fatalf("indexSpecial[string](%q, %d) = %d; want %d", buf, from, got, want)
		}
	}
}

// TestScanString compares the string-end scan with a byte loop on bodies
// of every length up to a few blocks, with escapes anywhere (an escaped
// quote included) and an unterminated body.
func TestScanString(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 40000 {
		buf := make([]byte, r.IntN(200))
		for i := range buf {
			buf[i] = byte(0x20 + r.IntN(0x5f))
			if buf[i] == '"' || buf[i] == '\\' {
				buf[i] = 'a'
			}
		}
		for range r.IntN(6) {
			if len(buf) > 0 {
				buf[r.IntN(len(buf))] = []byte{'"', '\\'}[r.IntN(2)]
			}
		}
		from := r.IntN(len(buf) + 1)
		wantEnd, wantEsc := -1, false
		for i := from; i < len(buf); i++ {
			if buf[i] == '"' {
				wantEnd = i + 1
				break
			}
			if buf[i] == '\\' {
				wantEsc = true
				i++
			}
		}
		end, esc := rawjson.ScanString(buf, from)
		if end < 0 {
			end = -1
		}
		if end != wantEnd || (end > 0 && esc != wantEsc) {
			t.Fatalf("scanString(%q, %d) = %d, %v; want %d, %v", buf, from, end, esc, wantEnd, wantEsc)
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

// TestPlain: Plain agrees with a byte loop over isSpecial at every length
// up to five words, with each kind of byte at each place.
func TestPlain(t *testing.T) {
	for _, b := range []byte{'a', '~', ' ', 0x7f, 0, 0x1f, '"', '\\', 0x80, 0xff} {
		for n := 0; n <= 40; n++ {
			for at := 0; at < max(n, 1); at++ {
				v := []byte(strings.Repeat("m", n))
				if n > 0 {
					v[at] = b
				}
				want := true
				for _, c := range v {
					want = want && c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
				}
				if got := rawjson.Plain(string(v)); got != want {
					t.Fatalf("Plain(%q) = %v; want %v", v, got, want)
				}
			}
		}
	}
}
