//go:build !race

package edge

import "testing"

// TestRealtimeScanAllocs: relaying upstream frames — audio and transcript
// deltas and a response.done whose usage is read — allocates nothing in
// steady state.
func TestRealtimeScanAllocs(t *testing.T) {
	batch, _ := realtimeBatch()
	s := wsScanner{usage: true}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := s.feed(batch); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per batch of 64 frames; want 0", n)
	}
}
