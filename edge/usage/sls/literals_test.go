package sls

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/pierrec/lz4/v4"
)

// TestAppendLiterals: the block written for incompressible input decodes
// to the input with the reference LZ4 decoder, across the literal-length
// encoding's boundaries (15, 15+255, ...).
func TestAppendLiterals(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 14, 15, 16, 269, 270, 271, 524, 525, 4096, 70000} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		out := make([]byte, 0, lz4.CompressBlockBound(n))
		k := appendLiterals(out, src)
		got := make([]byte, n)
		m, err := lz4.UncompressBlock(out[:k], got)
		if err != nil || m != n || !bytes.Equal(got, src) {
			t.Fatalf("n=%d: decoded %d bytes, err %v", n, m, err)
		}
	}
}
