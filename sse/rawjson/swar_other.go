//go:build !amd64 || purego

package rawjson

// Without the amd64 vector scans (swar_amd64.go) the word-at-a-time loops
// read every string.

func specialBlocks[T string | []byte](_ T, i int) int { return i }

func quoteBlocks(_ []byte, i int) int { return i }
