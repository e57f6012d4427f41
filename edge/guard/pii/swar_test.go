package pii

import (
	"encoding/binary"
	"testing"
)

// TestMainStart8: the eight-byte skip agrees with the byte table for every
// byte value at every position, among bytes that start nothing ('e') and
// among non-ASCII ones (0xff: no borrow or carry may leak a false hit).
func TestMainStart8(t *testing.T) {
	for _, fill := range []byte{'e', 0xff, 0x00, '/', ':', '@', 'B'} {
		for c := 0; c < 256; c++ {
			for pos := 0; pos < 8; pos++ {
				var b [8]byte
				for k := range b {
					b[k] = fill
				}
				b[pos] = byte(c)
				want := mainStart[c] || mainStart[fill]
				if got := mainStart8(binary.LittleEndian.Uint64(b[:])); got != want {
					t.Fatalf("byte %#x at %d among %#x: got %v, want %v", c, pos, fill, got, want)
				}
			}
		}
	}
}
