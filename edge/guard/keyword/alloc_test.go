//go:build !race

// The race detector makes sync.Pool (ours, and regexp's) drop items at
// random, so allocation counts hold only without it.

package keyword

import (
	"context"
	"testing"

	"gw/edge/guard"
)

func TestKeywordAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	c := mustNew(t, pat(benchPatterns()...))
	for _, texts := range [][]guard.Text{chatTexts(), append(chatTexts(), guard.Text{Data: []byte("JAILBREAK")}), append(chatTexts(), guard.Text{Data: []byte("password = x")})} {
		req := &guard.Request{Texts: texts}
		var v guard.Verdict
		if n := testing.AllocsPerRun(100, func() { v.Reset(); _ = c.Check(context.Background(), req, &v) }); n != 0 {
			t.Fatalf("%v allocs per Check; want 0", n)
		}
	}
}
