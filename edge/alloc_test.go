//go:build !race

package edge

import "testing"

// TestRelayChunkAllocs guards the streaming hot path: 0 allocations per relayed chunk.
func TestRelayChunkAllocs(t *testing.T) {
	snap := benchSnapshot(t)
	c := &call{plan: snap.Plans["gpt"]}
	c.in.ForceUsage = true
	s := relayPool.Get().(*relayState)
	s.processChunk(c, benchChunk) // warm the buffers
	if n := testing.AllocsPerRun(1000, func() { s.processChunk(c, benchChunk) }); n != 0 {
		t.Fatalf("processChunk allocates %.1f per chunk; want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { hasContent(benchChunk) }); n != 0 {
		t.Fatalf("hasContent allocates %.1f; want 0", n)
	}
}

// TestNativeEventAllocs: native Messages and Responses events are relayed
// without allocating, the model-carrying ones included.
func TestNativeEventAllocs(t *testing.T) {
	snap := benchSnapshot(t)
	c := &call{plan: snap.Plans["gpt"]}
	s := relayPool.Get().(*relayState)
	for _, b := range nativeBenchEvents {
		b.read(s, c, b.ev) // warm the buffers
		if n := testing.AllocsPerRun(1000, func() { b.read(s, c, b.ev) }); n != 0 {
			t.Fatalf("%s allocates %.1f per event; want 0", b.name, n)
		}
	}
}
