package remote

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestChunks(t *testing.T) {
	f := func(text string, n int, want ...string) {
		t.Helper()
		got := Chunks(nil, []byte(text), n)
		if len(got) != len(want) {
			t.Fatalf("Chunks(%q, %d): got %d pieces %q; want %d %q", text, n, len(got), got, len(want), want)
		}
		for i := range want {
			if string(got[i]) != want[i] {
				t.Fatalf("Chunks(%q, %d)[%d]: got %q; want %q", text, n, i, got[i], want[i])
			}
		}
	}
	f("", 3)
	f("abc", 0, "abc")
	f("abc", 3, "abc")
	f("abcd", 3, "abc", "d")
	f("abcdef", 3, "abc", "def")
	f("héllo", 2, "hé", "ll", "o")
	f("日本語テキスト", 3, "日本語", "テキス", "ト")
	f("a😀b", 1, "a", "😀", "b")
	f("\xffab", 2, "\xffa", "b")
}

// TestChunksBoundaries checks the exact limit the cloud kinds rely on:
// 10,000 and 2,000 characters, multi-byte text included.
func TestChunksBoundaries(t *testing.T) {
	for _, n := range []int{2000, 10000} {
		for _, unit := range []string{"a", "é", "語", "😀"} {
			for _, total := range []int{n - 1, n, n + 1, 2 * n, 2*n + 1} {
				text := []byte(strings.Repeat(unit, total))
				got := Chunks(nil, text, n)
				wantPieces := (total + n - 1) / n
				if len(got) != wantPieces {
					t.Fatalf("n=%d unit=%q total=%d: got %d pieces; want %d", n, unit, total, len(got), wantPieces)
				}
				for i, p := range got {
					c := utf8.RuneCount(p)
					if c > n || (i < len(got)-1 && c != n) || !utf8.Valid(p) {
						t.Fatalf("n=%d unit=%q total=%d: piece %d has %d characters", n, unit, total, i, c)
					}
				}
				if !bytes.Equal(bytes.Join(got, nil), text) {
					t.Fatalf("n=%d unit=%q total=%d: pieces do not rejoin to the text", n, unit, total)
				}
			}
		}
	}
}

func TestChunksAllocs(t *testing.T) {
	text := []byte(strings.Repeat("日本語", 1000))
	dst := make([][]byte, 0, 64)
	if a := testing.AllocsPerRun(100, func() { dst = Chunks(dst[:0], text, 100) }); a != 0 {
		t.Fatalf("got %v allocs; want 0", a)
	}
}

func BenchmarkChunks(b *testing.B) {
	text := []byte(strings.Repeat("Lorem ipsum dolor sit amet, 日本語のテキスト. ", 2000))
	dst := make([][]byte, 0, 64)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		dst = Chunks(dst[:0], text, 2000)
	}
}
