package guard

import "unsafe"

// This file holds the package's only use of unsafe.

// offsetIn returns the offset of sub within doc. sub must be a subslice of
// doc (rawjson returns values as spans of their input, with their capacity
// clipped, so the capacity arithmetic other code uses does not work here).
func offsetIn(doc, sub []byte) int {
	if len(sub) == 0 {
		return 0
	}
	off := uintptr(unsafe.Pointer(unsafe.SliceData(sub))) - uintptr(unsafe.Pointer(unsafe.SliceData(doc)))
	if off > uintptr(len(doc)) {
		panic("BUG: guard.offsetIn: sub is not within doc")
	}
	return int(off)
}
