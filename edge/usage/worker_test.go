package usage

import (
	"context"
	"reflect"
	"testing"
	"time"
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

type nopSink struct{}

func (nopSink) AppendRecord(body []byte, _ *Record) []byte     { return body }
func (nopSink) Finish(dst, body []byte, _ int) ([]byte, error) { return append(dst, body...), nil }
func (nopSink) Send(context.Context, *Batch) error             { return nil }

// TestOpenBatchOldestNewest: a batch's oldest and newest event times
// hold whatever order its records come in.
func TestOpenBatchOldestNewest(t *testing.T) {
	w := &worker{}
	w.sink.Store(&sinkBox{nopSink{}})
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		offsets        []int
		oldest, newest int
	}{
		{[]int{0}, 0, 0},
		{[]int{0, 1, 2, 2, 3}, 0, 3},
		{[]int{3, 2, 1, 0}, 0, 3},
		{[]int{2, 5, 1, 3, 5, 0, 4}, 0, 5},
		{[]int{1, 1, 1}, 1, 1},
	} {
		var b openBatch
		for _, o := range tc.offsets {
			b.add(w, &Record{OccurredAt: t0.Add(time.Duration(o) * time.Second)})
		}
		if want := t0.Add(time.Duration(tc.oldest) * time.Second); !b.oldest.Equal(want) {
			t.Errorf("%v: oldest %v, want %v", tc.offsets, b.oldest, want)
		}
		if want := t0.Add(time.Duration(tc.newest) * time.Second); !b.newest.Equal(want) {
			t.Errorf("%v: newest %v, want %v", tc.offsets, b.newest, want)
		}
	}
}
