package usage

import (
	"reflect"
	"testing"
)

// TestChunkStaleTailCleared: a chunk comes back from the worker
// uncleared; the dispatcher overwrites the records it reuses and clears
// the rest when it hands the chunk on, so no old record stays behind.
func TestChunkStaleTailCleared(t *testing.T) {
	w := &worker{ch: make(chan []Record, 2), free: make(chan []Record, 2)}
	for i := 0; i < 10; i++ {
		w.add(&Record{Model: "old", AppliedGuardrails: []string{"g"}})
	}
	w.send()
	w.free <- <-w.ch // recycled as the worker does: uncleared
	for i := 0; i < 3; i++ {
		w.add(&Record{Model: "new"})
	}
	w.send()
	c := <-w.ch
	if len(c) != 3 || c[0].Model != "new" || c[2].Model != "new" {
		t.Fatalf("chunk holds %d records, first %q", len(c), c[0].Model)
	}
	for i, r := range c[:10] {
		if i >= 3 && !reflect.DeepEqual(r, Record{}) {
			t.Fatalf("record %d of the last round left in the chunk: %+v", i, r)
		}
	}
}
