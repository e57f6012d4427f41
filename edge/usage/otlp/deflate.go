package otlp

import (
	"encoding/binary"
	"math/bits"
)

// The gzip body of an OTLP batch is written here, not by a general
// deflate encoder. Spans of one batch repeat each other: the same
// attribute keys in the same order, most values equal to the previous
// span's. The encoder knows where each attribute of each span starts, so
// it needs no match search: an attribute is compared with the same
// attribute of the previous span, and what agrees becomes a back
// reference at that fixed distance, the rest literals. The block uses
// deflate's fixed Huffman codes (RFC 1951 3.2.6), so no code tables are
// counted, built or sent. The output is an ordinary gzip member any
// receiver inflates; it is larger than klauspost's level 1 (see
// docs/USAGE.md), at a fraction of its CPU: hashing every position and
// building dynamic tables per 64 KiB were most of an OTLP exporter's
// cost.

// minMatch is the shortest new back reference worth its bits: a fixed-code
// length and distance cost about as much as three literals.
const minMatch = 4

// maxDist is deflate's window: a reference reaches at most this far back.
const maxDist = 32768

// code is a fixed Huffman code, bit-reversed (deflate sends Huffman codes
// most significant bit first into an LSB-first stream), with any extra
// bits already shifted in above it.
type code struct {
	bits uint32
	n    uint8
}

var (
	litCodes  [257]code // 0-255 literals, 256 end of block
	lenCodes  [256]code // match length 3-258 at [length-3]: symbol and extra bits
	distCodes [30]uint32
)

func init() {
	rev := func(c uint32, n uint8) uint32 { return uint32(bits.Reverse16(uint16(c))) >> (16 - n) }
	for v := 0; v <= 256; v++ {
		switch {
		case v < 144:
			litCodes[v] = code{rev(0x30+uint32(v), 8), 8}
		case v < 256:
			litCodes[v] = code{rev(0x190+uint32(v-144), 9), 9}
		default:
			litCodes[v] = code{0, 7} // 256: 0000000
		}
	}
	// Length symbols 257-285: base lengths and extra bits (RFC 1951 3.2.5).
	base := [29]int{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	extra := [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	for s := 28; s >= 0; s-- {
		sym := uint32(257 + s)
		var c code
		if sym < 280 {
			c = code{rev(sym-256, 7), 7}
		} else {
			c = code{rev(0xc0+sym-280, 8), 8}
		}
		top := 258
		if s < 28 {
			top = base[s+1] - 1
		}
		for l := base[s]; l <= top; l++ {
			lenCodes[l-3] = code{c.bits | uint32(l-base[s])<<c.n, c.n + extra[s]}
		}
	}
	for d := range distCodes {
		distCodes[d] = rev(uint32(d), 5)
	}
}

// deflater writes one gzip member with a single fixed-Huffman block.
type deflater struct {
	out      []byte
	acc      uint64
	n        uint
	pendLen  int // a back reference not yet written: runs at one distance merge
	pendDist int
}

func (z *deflater) put(b uint32, n uint8) {
	z.acc |= uint64(b) << z.n
	z.n += uint(n)
	if z.n >= 32 {
		z.out = binary.LittleEndian.AppendUint32(z.out, uint32(z.acc))
		z.acc >>= 32
		z.n -= 32
	}
}

// start writes the gzip header (no name, no time, OS unknown, as
// compress/gzip and klauspost write it) and the block header: final,
// fixed codes.
func (z *deflater) start(dst []byte) {
	z.out = append(dst, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff)
	z.acc, z.n, z.pendLen, z.pendDist = 0, 0, 0, 0
	z.put(1|1<<1, 3) // BFINAL=1, BTYPE=01
}

func (z *deflater) literals(p []byte) {
	z.flushMatch()
	for _, b := range p {
		c := litCodes[b]
		z.put(c.bits, c.n)
	}
}

// match queues a back reference of l bytes at distance d, merged with the
// one before when that ended here at the same distance.
func (z *deflater) match(l, d int) {
	if z.pendLen > 0 && z.pendDist == d {
		z.pendLen += l
		return
	}
	z.flushMatch()
	z.pendLen, z.pendDist = l, d
}

// flushMatch writes the queued reference in pieces of 3-258 bytes.
func (z *deflater) flushMatch() {
	p, d := z.pendLen, z.pendDist
	z.pendLen = 0
	for p > 0 {
		t := min(p, 258)
		if r := p - t; r > 0 && r < 3 {
			t = p - 3
		}
		c := lenCodes[t-3]
		z.put(c.bits, c.n)
		x := uint32(d - 1)
		if x < 4 {
			z.put(distCodes[x], 5)
		} else {
			n := uint8(bits.Len32(x) - 1) // x in [2^n, 2^(n+1)): n-1 extra bits
			sym := 2*uint32(n) + (x>>(n-1))&1
			z.put(distCodes[sym]|(x&(1<<(n-1)-1))<<5, 5+n-1)
		}
		p -= t
	}
}

// finish ends the block and appends the gzip trailer of the uncompressed
// bytes' CRC-32 and length.
func (z *deflater) finish(crc uint32, size int) []byte {
	z.flushMatch()
	c := litCodes[256]
	z.put(c.bits, c.n)
	for z.n > 0 {
		z.out = append(z.out, byte(z.acc))
		z.acc >>= 8
		z.n -= min(z.n, 8)
	}
	z.out = binary.LittleEndian.AppendUint32(z.out, crc)
	return binary.LittleEndian.AppendUint32(z.out, uint32(size))
}

// run writes stream bytes s[a:b] against those d bytes earlier (d 0:
// literals).
func (z *deflater) run(s []byte, a, b, d int) {
	switch {
	case b <= a:
	case d == 0:
		z.literals(s[a:b])
	default:
		z.delta(s[a:b], s[a-d:b-d], d)
	}
}

// delta writes cur, whose bytes are at stream offset pos, against ref, the
// corresponding bytes d = pos - (ref's offset) earlier: each stretch where
// they agree is a back reference, the rest literals.
func (z *deflater) delta(cur, ref []byte, d int) {
	ref = ref[:min(len(ref), len(cur))]
	for i := 0; i < len(cur); {
		if i < len(ref) && cur[i] == ref[i] {
			l := commonPrefix(cur[i:], ref[i:])
			if l >= minMatch || (z.pendLen > 0 && z.pendDist == d) {
				z.match(l, d)
				i += l
				continue
			}
		}
		// Literals up to the next byte that agrees: a differing value is
		// usually followed by equal bytes again.
		z.flushMatch()
		c := litCodes[cur[i]]
		z.put(c.bits, c.n)
		for i++; i < len(cur) && (i >= len(ref) || cur[i] != ref[i]); i++ {
			c := litCodes[cur[i]]
			z.put(c.bits, c.n)
		}
	}
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:i+8]) ^ binary.LittleEndian.Uint64(b[i:i+8]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for ; i < n && a[i] == b[i]; i++ {
	}
	return i
}
