package a2a

import "unsafe"

// This file holds the package's only use of unsafe (as edge/guard's
// offset.go: rawjson clips the capacity of the values it returns, so the
// capacity arithmetic that would find a subslice's offset does not work).

// offsetIn returns the offset of sub within doc, or -1 when sub does not
// lie within doc (checked, so a wrong caller cannot corrupt an edit).
func offsetIn(doc, sub []byte) int {
	if len(sub) == 0 || len(doc) == 0 {
		return -1
	}
	off := uintptr(unsafe.Pointer(unsafe.SliceData(sub))) - uintptr(unsafe.Pointer(unsafe.SliceData(doc)))
	if len(sub) > len(doc) || off > uintptr(len(doc)-len(sub)) || &doc[off] != &sub[0] {
		return -1
	}
	return int(off)
}
