package custom_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"gw/edge/guard"
	"gw/edge/guard/custom"
)

// TestManyTexts: a large tool payload is tens of thousands of values, each
// its own text. They reach the glue in batches (one call takes a bounded
// number of arguments) and count toward max_memory_bytes.
func TestManyTexts(t *testing.T) {
	c := newCheckerWith(t, guardrail(`export function checkInput(input) {
		return { action: "block", reason: String(input.texts.length) + ":" + input.texts[input.texts.length - 1].text };
	}`, 5000*slowdown, 64<<20, nil))
	for _, n := range []int{0, 1, 1000, 100000} {
		req := &guard.Request{Phase: guard.Input}
		for i := range n {
			req.Texts = append(req.Texts, guard.Text{Part: guard.PartToolKey, Data: []byte("k" + strconv.Itoa(i))})
		}
		var v guard.Verdict
		err := c.Check(context.Background(), req, &v)
		if n == 0 {
			// texts[-1] is undefined: reading .text throws.
			if err == nil {
				t.Fatal("want a TypeError for an empty list")
			}
			continue
		}
		if err != nil {
			t.Fatalf("%d texts: %v", n, err)
		}
		if want := strconv.Itoa(n) + ":k" + strconv.Itoa(n-1); v.Message != want {
			t.Fatalf("got %q; want %q", v.Message, want)
		}
	}
}

func TestTextsCountTowardMemory(t *testing.T) {
	c := newCheckerWith(t, guardrail(`export function checkInput(input) { return null }`, 5000*slowdown, 4<<20, nil))
	req := &guard.Request{Phase: guard.Input}
	for i := range 100000 {
		req.Texts = append(req.Texts, guard.Text{Data: []byte("value-" + strconv.Itoa(i))})
	}
	var v guard.Verdict
	if err := c.Check(context.Background(), req, &v); !errors.Is(err, custom.ErrMemory) {
		t.Fatalf("got %v; want ErrMemory for texts larger than the heap", err)
	}
	req.Texts = req.Texts[:10]
	for range 5 { // the replacement runtime may still be starting
		if err := c.Check(context.Background(), req, &v); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("checker did not recover after an out-of-memory")
}
