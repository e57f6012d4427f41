package edge

import "testing"

// TestDoneSet: a key is new once; the oldest key is forgotten when the set
// is full; a set nobody added to holds no storage (idle RSS).
func TestDoneSet(t *testing.T) {
	d := newDoneSet(2)
	if d.ring != nil || d.seen != nil {
		t.Fatal("a fresh set allocated its storage")
	}
	for i, c := range []struct {
		key  string
		want bool
	}{
		{"a", true}, {"a", false}, {"b", true}, {"a", false},
		{"c", true}, // forgets a, the oldest
		{"b", false}, {"a", true}, {"c", false},
	} {
		if got := d.add(c.key); got != c.want {
			t.Fatalf("step %d: add(%q) = %v; want %v", i, c.key, got, c.want)
		}
	}
}
