// Package gzipdelta writes gzip members of batches whose items repeat each
// other (OTLP spans, NDJSON usage records), without a general deflate
// encoder's match search: the caller knows what each piece of an item is
// to be compared with (the same attribute of the span before, the same
// member of the line before), so a piece that agrees becomes a back
// reference at that fixed distance and the rest literals. The block uses
// deflate's fixed Huffman codes (RFC 1951 3.2.6), so no code tables are
// counted, built or sent. The output is an ordinary gzip member any
// receiver inflates; it is larger than klauspost's level 1 (see
// docs/USAGE.md), at a fraction of its CPU: hashing every position and
// building dynamic tables per 64 KiB were most of an exporter's cost.
package gzipdelta

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// minMatch is the shortest new back reference worth its bits: a fixed-code
// length and distance cost about as much as three literals.
const minMatch = 4

// MaxDist is deflate's window: a reference reaches at most this far back.
const MaxDist = 32768

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

// Writer writes one gzip member with a single fixed-Huffman block:
// Start, then Literals, Match, Run and Delta in stream order, then Finish.
// A block written piece by piece, with its gzip framing added by the
// caller, goes Open, Reserve before each piece, End.
type Writer struct {
	// buf is the output with room for all of it (Start reserves the
	// worst case), so no write checks for space: out so far is buf[:o].
	buf      []byte
	o        int
	acc      uint64 // bits not yet in buf: fewer than 8 between writes
	n        uint
	pendLen  int // a back reference not yet written: runs at one distance merge
	pendDist int
	dist     int    // the distance whose code is dcode: a run's references share one
	dcode    uint32 // dist's code and extra bits (see code)
	dn       uint8
}

const hi1 = 0x8080808080808080

var gzipHeader = [10]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}

// slack is the room past the worst case that the word-wide writes of
// flush and Literals need.
const slack = 16

// put writes n ≤ 32 bits.
func (z *Writer) put(b uint32, n uint8) {
	z.acc |= uint64(b) << z.n
	z.n += uint(n)
	binary.LittleEndian.PutUint64(z.buf[z.o:], z.acc)
	z.o += int(z.n >> 3)
	z.acc >>= z.n &^ 7
	z.n &= 7
}

// Start writes the gzip header (no name, no time, OS unknown, as
// compress/gzip and klauspost write it) and the block header (final,
// fixed codes), after dst, for a stream of size bytes.
func (z *Writer) Start(dst []byte, size int) {
	z.begin(append(dst, gzipHeader[:]...), size)
}

// begin starts a bare final fixed-code block (no gzip header) after dst,
// for size bytes of stream; Reserve makes room for more, End closes it.
// It reserves the most that size bytes can take, 9 bits a byte (a
// literal's longest code; a back reference of 3 bytes or more takes at
// most 25 bits).
func (z *Writer) begin(dst []byte, size int) {
	z.buf, z.o = dst[:cap(dst)], len(dst)
	z.acc, z.n, z.pendLen, z.pendDist, z.dist = 0, 0, 0, 0, 0
	z.Reserve(size)
	z.put(1|1<<1, 3) // BFINAL=1, BTYPE=01
}

// Open is begin in the writer's own buffer, kept from the last block:
// for a block that End returns to be copied out.
func (z *Writer) Open(size int) { z.begin(z.buf[:0], size) }

// Reserve makes room for size more bytes of stream (see begin).
func (z *Writer) Reserve(size int) {
	if need := size + size/8 + 1 + 8 + slack; len(z.buf)-z.o < need {
		out := slices.Grow(z.buf[:z.o], need)
		z.buf = out[:cap(out)]
	}
}

// Literals writes p. Eight ASCII bytes (all below 144: 8-bit codes
// 0x30+b) take one word: the codes of all eight at once, their bits
// reversed byte by byte (codes go most significant bit first into an
// LSB-first stream). Other bytes go six codes (at most 54 bits, with
// fewer than 8 waiting) between two word-wide writes of the whole bytes.
func (z *Writer) Literals(p []byte) {
	if z.pendLen > 0 {
		z.flushMatch()
	}
	buf, o, acc, n := z.buf, z.o, z.acc, z.n
	for len(p) >= 8 {
		if w := binary.LittleEndian.Uint64(p); w&hi1 == 0 {
			w += 0x3030303030303030 // no carry: every byte stays below 0xb0
			w = w>>1&0x5555555555555555 | w&0x5555555555555555<<1
			w = w>>2&0x3333333333333333 | w&0x3333333333333333<<2
			w = w>>4&0x0f0f0f0f0f0f0f0f | w&0x0f0f0f0f0f0f0f0f<<4
			binary.LittleEndian.PutUint64(buf[o:], acc|w<<(n&63))
			o += 8
			acc = w >> (64 - n) // n 0: none left over (Go shifts out to 0)
			p = p[8:]
			continue
		}
		o, acc, n = addCodes(buf, o, acc, n, p[:6])
		p = p[6:]
	}
	if len(p) > 5 {
		o, acc, n = addCodes(buf, o, acc, n, p[:6])
		p = p[6:]
	}
	o, acc, n = addCodes(buf, o, acc, n, p)
	z.o, z.acc, z.n = o, acc, n
}

// addCodes adds the codes of p (at most 6 bytes: 54 bits above the
// fewer than 8 waiting in acc) and writes acc's whole bytes at buf[o:].
func addCodes(buf []byte, o int, acc uint64, n uint, p []byte) (int, uint64, uint) {
	for _, b := range p {
		c := litCodes[b]
		acc |= uint64(c.bits) << (n & 63)
		n += uint(c.n)
	}
	binary.LittleEndian.PutUint64(buf[o:], acc)
	return o + int(n>>3), acc >> (n &^ 7), n & 7
}

// Match queues a back reference of l bytes at distance d, merged with the
// one before when that ended here at the same distance.
func (z *Writer) Match(l, d int) {
	if z.pendLen > 0 {
		if z.pendDist == d {
			z.pendLen += l
			return
		}
		z.flushMatch()
	}
	z.pendLen, z.pendDist = l, d
}

// flushMatch writes the queued reference in pieces of 3-258 bytes, each
// length code and distance code in one put (at most 13 + 18 bits).
func (z *Writer) flushMatch() {
	p := z.pendLen
	z.pendLen = 0
	if z.pendDist != z.dist {
		z.setDist(z.pendDist)
	}
	for p > 0 {
		t := min(p, 258)
		if r := p - t; r > 0 && r < 3 {
			t = p - 3
		}
		c := lenCodes[t-3]
		z.put(c.bits|z.dcode<<c.n, c.n+z.dn)
		p -= t
	}
}

// setDist makes d's code the current one.
func (z *Writer) setDist(d int) {
	z.dist = d
	x := uint32(d - 1)
	if x < 4 {
		z.dcode, z.dn = distCodes[x], 5
		return
	}
	n := uint8(bits.Len32(x) - 1) // x in [2^n, 2^(n+1)): n-1 extra bits
	sym := 2*uint32(n) + (x>>(n-1))&1
	z.dcode, z.dn = distCodes[sym]|(x&(1<<(n-1)-1))<<5, 5+n-1
}

// End closes the block (its end code, the last byte padded) and returns
// the output.
func (z *Writer) End() []byte {
	if z.pendLen > 0 {
		z.flushMatch()
	}
	c := litCodes[256]
	z.put(c.bits, c.n)
	if z.n > 0 {
		z.put(0, uint8(8-z.n))
	}
	return z.buf[:z.o]
}

// Finish ends the block and appends the gzip trailer of the uncompressed
// bytes' CRC-32 and length.
func (z *Writer) Finish(crc uint32, size int) []byte {
	return AppendTrailer(z.End(), crc, size)
}

// AppendTrailer appends a gzip member's trailer: the CRC-32 and the
// length of its uncompressed bytes.
func AppendTrailer(dst []byte, crc uint32, size int) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, crc)
	return binary.LittleEndian.AppendUint32(dst, uint32(size))
}

// AppendStoredHead appends the gzip header and p as a stored (uncompressed,
// not final) deflate block: what precedes a block that Open started on
// its own, byte-aligned, with p not known before the end (len(p) < 64 KiB).
func AppendStoredHead(dst, p []byte) []byte {
	dst = append(dst, gzipHeader[:]...)
	dst = append(dst, 0) // BFINAL=0, BTYPE=00, padded to the byte
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(p)))
	dst = binary.LittleEndian.AppendUint16(dst, ^uint16(len(p)))
	return append(dst, p...)
}

// CRC32Combine is the IEEE CRC-32 of a followed by b, given a's CRC, b's
// CRC and b's length (zlib's crc32_combine): a batch's bytes are
// checksummed as they are written, before the head that precedes them in
// the stream is known. a's CRC is moved past len(b) zero bytes by one
// precomputed operator per set bit of the length.
func CRC32Combine(crcA, crcB uint32, lenB int) uint32 {
	for k := 0; lenB > 0 && k < len(crcZeros); k, lenB = k+1, lenB>>1 {
		if lenB&1 != 0 {
			crcA = gf2Times(&crcZeros[k], crcA)
		}
	}
	return crcA ^ crcB
}

// crcZeros[k] appends 2^k zero bytes to a CRC-32 (GF(2) matrices, one
// column per bit).
var crcZeros = func() (z [32][32]uint32) {
	var one [32]uint32  // one zero bit
	one[0] = 0xedb88320 // the reflected polynomial
	for n := 1; n < 32; n++ {
		one[n] = 1 << (n - 1)
	}
	var two, four [32]uint32
	gf2Square(&two, &one)
	gf2Square(&four, &two)
	gf2Square(&z[0], &four) // eight bits: a byte
	for k := 1; k < len(z); k++ {
		gf2Square(&z[k], &z[k-1])
	}
	return z
}()

func gf2Times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

func gf2Square(square, mat *[32]uint32) {
	for n := range mat {
		square[n] = gf2Times(mat, mat[n])
	}
}

// Run writes stream bytes s[a:b] against those d bytes earlier (d 0:
// literals).
func (z *Writer) Run(s []byte, a, b, d int) {
	switch {
	case b <= a:
	case d == 0:
		z.Literals(s[a:b])
	default:
		z.Delta(s[a:b], s[a-d:b-d], d)
	}
}

// Delta writes cur, whose bytes are at stream offset pos, against ref, the
// corresponding bytes d = pos - (ref's offset) earlier: each stretch of at
// least minMatch bytes where they agree is a back reference, the rest
// literals. A reference pending at distance d goes on while they agree.
func (z *Writer) Delta(cur, ref []byte, d int) {
	ref = ref[:min(len(ref), len(cur))]
	i := 0
	if z.pendLen > 0 && z.pendDist == d {
		i = CommonPrefix(cur, ref)
		z.pendLen += i
	}
	for i < len(cur) {
		j := nextAgree(cur, ref, i)
		if j > i {
			z.Literals(cur[i:j])
		}
		if j < len(cur) {
			// nextAgree found minMatch bytes that agree: compare past them.
			l := minMatch + CommonPrefix(cur[j+minMatch:], ref[j+minMatch:])
			z.Match(l, d)
			j += l
		}
		i = j
	}
}

// nextAgree returns the first j >= i where cur and ref agree in minMatch
// (4) bytes running, or len(cur) when there is none. Eight bytes are
// compared at once: a byte of their XOR is zero where the two agree, and
// four zero bytes in a row start a match at one of the word's first five
// positions; the next word starts past those five. A byte at a time, the
// search was the compressor's largest cost (most of a changed value's
// bytes go through it).
func nextAgree(cur, ref []byte, i int) int {
	n := min(len(cur), len(ref))
	cur, ref = cur[:n], ref[:n]
	j := i
	for ; j+8 <= n; j += 5 {
		x := binary.LittleEndian.Uint64(cur[j:j+8]) ^ binary.LittleEndian.Uint64(ref[j:j+8])
		// High bit of each byte set where the byte of x is zero.
		z := ^((x & lo7) + lo7 | x) & hi1
		if z4 := z & (z >> 8) & (z >> 16) & (z >> 24); z4 != 0 {
			return j + bits.TrailingZeros64(z4)/8
		}
	}
	for ; j+minMatch <= n; j++ {
		if binary.LittleEndian.Uint32(cur[j:j+4]) == binary.LittleEndian.Uint32(ref[j:j+4]) {
			return j
		}
	}
	return len(cur)
}

const lo7 = 0x7f7f7f7f7f7f7f7f

// CommonPrefix is the length of the longest common prefix of a and b,
// found 32 bytes per step where they agree (most of a span).
func CommonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	for len(a) >= 32 && len(b) >= 32 {
		x := binary.LittleEndian.Uint64(a[0:8]) ^ binary.LittleEndian.Uint64(b[0:8])
		x |= binary.LittleEndian.Uint64(a[8:16]) ^ binary.LittleEndian.Uint64(b[8:16])
		x |= binary.LittleEndian.Uint64(a[16:24]) ^ binary.LittleEndian.Uint64(b[16:24])
		x |= binary.LittleEndian.Uint64(a[24:32]) ^ binary.LittleEndian.Uint64(b[24:32])
		if x != 0 {
			break
		}
		a, b = a[32:], b[32:]
	}
	for len(a) >= 8 && len(b) >= 8 {
		if x := binary.LittleEndian.Uint64(a[0:8]) ^ binary.LittleEndian.Uint64(b[0:8]); x != 0 {
			return n - len(a) + bits.TrailingZeros64(x)/8
		}
		a, b = a[8:], b[8:]
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return n - len(a) + i
}
