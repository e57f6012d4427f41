package rawjson

// Internals exposed to the black-box tests.
var (
	RuneLen      = runeLen[[]byte]
	IndexSpecial = indexSpecial[[]byte]
	IsFastKey    = isFastKey
	// IndexSpecialString is indexSpecial on a string (the JSON quoting).
	IndexSpecialString = indexSpecial[string]
	ScanString         = scanString
)
