//go:build !race

package edge

import (
	"testing"
)

// TestRelayAllocsPerEvent guards the whole relay — upstream reads through
// the idle hook, the SSE reader, the per-event rewrite, the batching and
// the writes to the caller — at 0 allocations per relayed event: a stream
// of 200 events allocates no more than one of 20 (what a stream allocates
// once, in fasthttp's client and the request path, is the same for both).
func TestRelayAllocsPerEvent(t *testing.T) {
	perStream := func(events int) float64 {
		p := rawProxy(t, startRawUpstream(t, writeBurst, chatFrames(events)), 30000)
		var w countingWriter
		w.buf.Grow(64 << 10)
		for i := 0; i < 20; i++ { // warm the pools
			w.buf.Reset()
			relayOnce(t, p, &w)
		}
		return testing.AllocsPerRun(200, func() {
			w.buf.Reset()
			relayOnce(t, p, &w)
		})
	}
	short, long := perStream(20), perStream(200)
	if perEvent := (long - short) / 180; perEvent > 0.02 {
		t.Fatalf("a 20-event stream allocates %.1f, a 200-event one %.1f: %.3f per event; want 0", short, long, perEvent)
	}
	t.Logf("allocations per stream: %.1f (20 events), %.1f (200 events)", short, long)
}
