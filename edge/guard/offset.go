package guard

import "gw/sse/rawjson"

// offsetIn returns the offset of sub within doc. sub must be a subslice of
// doc (a value rawjson returned); an empty one is at 0.
func offsetIn(doc, sub []byte) int {
	if len(sub) == 0 {
		return 0
	}
	off := rawjson.Offset(doc, sub)
	if off < 0 {
		panic("BUG: guard.offsetIn: sub is not within doc")
	}
	return off
}
