//go:build !purego

package headers

import "unsafe"

// This file holds the package's only use of unsafe; b2s_purego.go is its
// safe twin (build with -tags purego).

// b2s views b as a string without copying. The string must not outlive a
// change to b; callers only pass it to functions that do not retain it.
func b2s(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
