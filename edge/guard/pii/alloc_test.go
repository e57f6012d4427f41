//go:build !race

// The race detector makes sync.Pool (ours, and regexp's) drop items at
// random, so allocation counts hold only without it.

package pii

import (
	"context"
	"testing"

	"gw/edge/guard"
)

func TestPIIAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	c := mustNew(t, allOpts())
	masking := chatTexts()
	masking[2].Data = []byte("a@b.com and 4111 1111 1111 1111 and fe80::1")
	blocking := mustNew(t, opts("email!", "ip_address"))
	for _, tc := range []struct {
		c     guard.Checker
		texts []guard.Text
	}{{c, chatTexts()}, {c, masking}, {blocking, masking}} {
		req := &guard.Request{Texts: tc.texts}
		var v guard.Verdict
		check := func() { v.Reset(); _ = tc.c.Check(context.Background(), req, &v) }
		check() // warm the pool and the verdict's buffers
		if n := testing.AllocsPerRun(100, check); n != 0 {
			t.Fatalf("%v allocs per Check; want 0", n)
		}
	}
}
