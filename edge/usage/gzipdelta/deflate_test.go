package gzipdelta

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestNextAgreeAndCommonPrefix checks the word-at-a-time searches against
// byte-at-a-time ones on pairs that agree in runs of every length, at
// every offset.
func TestNextAgreeAndCommonPrefix(t *testing.T) {
	slowAgree := func(cur, ref []byte, i int) int {
		n := min(len(cur), len(ref))
		for j := i; j+minMatch <= n; j++ {
			if binary.LittleEndian.Uint32(cur[j:]) == binary.LittleEndian.Uint32(ref[j:]) {
				return j
			}
		}
		return len(cur)
	}
	slowPrefix := func(a, b []byte) int {
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		return i
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 20000; round++ {
		n := rng.IntN(80)
		cur, ref := make([]byte, n), make([]byte, n+rng.IntN(3))
		for k := range cur {
			cur[k] = byte(rng.IntN(4))
		}
		copy(ref, cur)
		// Runs of differences, 1 to 5 bytes, separated by agreeing runs.
		for k := 0; k < len(ref); k += 1 + rng.IntN(8) {
			for m := rng.IntN(5); m >= 0 && k < len(ref); m, k = m-1, k+1 {
				ref[k] ^= byte(1 + rng.IntN(255))
			}
		}
		for i := 0; i <= n; i++ {
			if got, want := nextAgree(cur, ref, i), slowAgree(cur, ref, i); got != want {
				t.Fatalf("nextAgree(%x, %x, %d) = %d, want %d", cur, ref, i, got, want)
			}
			if got, want := CommonPrefix(cur[i:], ref[min(i, len(ref)):]), slowPrefix(cur[i:], ref[min(i, len(ref)):]); got != want {
				t.Fatalf("CommonPrefix(%x, %x) = %d, want %d", cur[i:], ref[min(i, len(ref)):], got, want)
			}
		}
	}
}
