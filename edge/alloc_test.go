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
