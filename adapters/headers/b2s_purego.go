//go:build purego

package headers

// b2s is the safe twin of b2s.go: it copies (and may allocate for names
// longer than 32 bytes).
func b2s(b []byte) string { return string(b) }
