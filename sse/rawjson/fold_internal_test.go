package rawjson

import "testing"

// TestOddNameAndWideIn: the word-at-a-time checks (also reading past the
// name's end) agree with a byte loop
// for every byte value at every position of names up to 24 bytes.
func TestOddNameAndWideIn(t *testing.T) {
	naiveOdd := func(b []byte) bool {
		for _, c := range b {
			if ('A' <= c && c <= 'Z') || c >= 0x80 || c == '\\' {
				return true
			}
		}
		return false
	}
	naiveWide := func(b []byte) bool {
		for _, c := range b {
			if c >= 0x80 {
				return true
			}
		}
		return false
	}
	buf := make([]byte, 40)
	for n := 0; n <= 24; n++ {
		for pos := 0; pos < n; pos++ {
			for v := 0; v < 256; v++ {
				for i := range buf {
					buf[i] = 'a' + byte(i%26)
				}
				buf[pos] = byte(v)
				buf[n] = 0xff // past the name: must not count
				name := buf[:n]
				if got, want := oddIn(name, 0, n), naiveOdd(name); got != want {
					t.Fatalf("oddIn(%q) = %v; want %v", name, got, want)
				}
				for _, b := range []byte{0xff, '\\', 'Q', 0} { // past the name: must not count
					buf[n] = b
					if got, want := oddIn(buf, 0, n), naiveOdd(name); got != want {
						t.Fatalf("oddIn(%q, 0, %d) = %v; want %v", buf[:n+1], n, got, want)
					}
				}
				buf[n] = 0xff
				for _, data := range [][]byte{buf, buf[:n]} {
					if got, want := wideIn(data, 0, n), naiveWide(name); got != want {
						t.Fatalf("wideIn(%q, 0, %d) len %d = %v; want %v", name, n, len(data), got, want)
					}
				}
			}
		}
	}
}
