//go:build !purego

package rawjson

import "unsafe"

// This file holds the package's only use of unsafe; offset_safe.go is its
// twin under the purego tag.

// Offset returns the offset of sub within doc, or -1 when sub is empty or
// does not lie within doc. The values this package returns are spans of
// their input with their capacity clipped, so the capacity arithmetic that
// would find a subslice's offset does not work; the pointer difference is
// checked, so a wrong caller cannot corrupt an edit.
func Offset(doc, sub []byte) int {
	if len(sub) == 0 || len(doc) == 0 || len(sub) > len(doc) {
		return -1
	}
	off := uintptr(unsafe.Pointer(unsafe.SliceData(sub))) - uintptr(unsafe.Pointer(unsafe.SliceData(doc)))
	if off > uintptr(len(doc)-len(sub)) || &doc[off] != &sub[0] {
		return -1
	}
	return int(off)
}
