//go:build !race

package authn

import "testing"

// TestCachedTokenAllocs: a cached token authenticates without allocating,
// like a caller key.
func TestCachedTokenAllocs(t *testing.T) {
	_, _, auth := cachedSetup(t)
	if n := testing.AllocsPerRun(1000, func() {
		if !auth() {
			t.Fatal("rejected")
		}
	}); n != 0 {
		t.Fatalf("cached token: %v allocs; want 0", n)
	}
	s := snap(t)
	if n := testing.AllocsPerRun(1000, func() {
		if !authKey(s, "key-ok") {
			t.Fatal("rejected")
		}
	}); n != 0 {
		t.Fatalf("caller key: %v allocs; want 0", n)
	}
}
