//go:build !race

package load

import "testing"

func TestDeltaHasContentAllocs(t *testing.T) {
	data := []byte(`{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`)
	if n := testing.AllocsPerRun(100, func() { deltaHasContent(data) }); n != 0 {
		t.Fatalf("got %g allocs; want 0", n)
	}
}
