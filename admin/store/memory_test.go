package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"gw/admin/store"
	"gw/admin/store/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := store.NewMemory(0)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// A watcher that falls further behind than the history gets ErrCompacted
// instead of a silent gap.
func TestMemoryHistoryBound(t *testing.T) {
	testHistoryBound(t, store.NewMemory(8))
}

func testHistoryBound(t *testing.T, s store.Store) {
	t.Helper()
	defer s.Close()
	ctx := context.Background()
	first, err := s.Put(ctx, "/h/0", []byte("0"), store.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 30; i++ {
		if _, err := s.Put(ctx, fmt.Sprintf("/h/%d", i), []byte("x"), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := <-s.Watch(ctx, "/h/", first.ModRev)
	if !errors.Is(r.Err, store.ErrCompacted) {
		t.Fatalf("watch from a trimmed revision: %v, %d events; want ErrCompacted", r.Err, len(r.Events))
	}
	// The recent history is still there: the last 8 changes at least.
	_, rev, err := s.List(ctx, "/h/")
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r = <-s.Watch(wctx, "/h/", rev-7)
	if r.Err != nil || len(r.Events) != 8 {
		t.Fatalf("watch of the last 8 changes: %v, %d events", r.Err, len(r.Events))
	}
}
