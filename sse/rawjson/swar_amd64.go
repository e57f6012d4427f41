//go:build amd64 && !purego

package rawjson

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// With AVX2 the string scans read 32 bytes per step (swar_amd64.s) and
// leave the tail shorter than a block to the word-at-a-time loops.

var useAVX2 = cpu.X86.HasAVX2

//go:noescape
func indexAVX2(p *byte, n int, below uint64) int

// Thresholds for indexAVX2: the special bytes (control characters and
// non-ASCII with the quote and backslash), or the quote and backslash
// alone.
const (
	belowSpecial = lsb * 0x20
	belowNone    = lsb * 0x80
)

// blockBytes is the least input worth a vector scan.
const blockBytes = 32

// specialBlocks advances i over the whole 32-byte blocks of s[i:] that hold
// no special byte (see specialMask): to the first special byte when one of
// them holds one, else to the tail shorter than a block.
func specialBlocks[T string | []byte](s T, i int) int {
	if !useAVX2 || len(s)-i < blockBytes {
		return i
	}
	return i + indexAVX2(at(s, i), len(s)-i, belowSpecial)
}

// quoteBlocks is specialBlocks for '"' and '\\'.
func quoteBlocks(s []byte, i int) int {
	if !useAVX2 || len(s)-i < blockBytes {
		return i
	}
	return i + indexAVX2(&s[i], len(s)-i, belowNone)
}

// at returns the address of s[i] (i < len(s)) for a string or a slice: both
// headers start with the data pointer.
func at[T string | []byte](s T, i int) *byte {
	return (*byte)(unsafe.Add(unsafe.Pointer(*(**byte)(unsafe.Pointer(&s))), i))
}
