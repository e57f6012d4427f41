package limiter_test

import (
	"testing"

	"gw/limiter"
)

// TestKeySlot: CLUSTER KEYSLOT's answers, hash tags included.
func TestKeySlot(t *testing.T) {
	f := func(key string, want uint16) {
		t.Helper()
		if got := limiter.KeySlot(key); got != want {
			t.Fatalf("slot(%q) = %d; want %d", key, got, want)
		}
	}
	f("foo", 12182)
	f("bar", 5061)
	f("hello", 866)
	f("{foo}bar", 12182)
	f("x{foo}y{bar}", 12182)
	// An empty or unclosed tag hashes the whole key.
	if limiter.KeySlot("{}foo") == limiter.KeySlot("foo") || limiter.KeySlot("{foo") == limiter.KeySlot("foo") {
		t.Fatal("an empty or unclosed hash tag was used as the tag")
	}
}
