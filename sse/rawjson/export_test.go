package rawjson

// Internals exposed to the black-box tests.
var (
	RuneLen      = runeLen[[]byte]
	IndexSpecial = indexSpecial[[]byte]
	IsFastKey    = isFastKey
)
