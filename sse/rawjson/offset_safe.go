//go:build purego

package rawjson

// Offset returns the offset of sub within doc, or -1 when sub is empty or
// does not lie within doc: the safe twin of offset_unsafe.go, a linear
// search by element address.
func Offset(doc, sub []byte) int {
	if len(sub) == 0 || len(sub) > len(doc) {
		return -1
	}
	for i := 0; i <= len(doc)-len(sub); i++ {
		if &doc[i] == &sub[0] {
			return i
		}
	}
	return -1
}
