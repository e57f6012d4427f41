//go:build !race

package cache

import "testing"

// TestMissAllocs: keying a request and missing the memory store allocate
// nothing.
func TestMissAllocs(t *testing.T) {
	m, _ := memWith(100)
	var x Matcher = &Exact{Store: m}
	buf := make([]byte, 0, 1024)
	r := new(Request) // lives in the pooled request state in edge
	n := testing.AllocsPerRun(200, func() {
		buf, _ = AppendCanonical(buf[:0], "chat_completions", "gpt-4o", chatBody)
		*r = Request{Namespace: "faq", Canon: buf}
		if _, st := x.Lookup(r); st != Miss {
			t.Fatal("hit")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocs per miss; want 0", n)
	}
}
