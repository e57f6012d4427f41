package store

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// DefaultHistory is how many changes the memory and embedded stores keep
// for Watch from an older revision. A watcher that falls further behind
// gets ErrCompacted and lists again, as with a compacted etcd.
const DefaultHistory = 10000

// maxBatch bounds one WatchResponse so a watcher far behind receives its
// backlog in pieces instead of one huge slice.
const maxBatch = 1000

// hub is the change history of the memory and embedded stores and the
// watchers reading it. Every revision is exactly one event, so the history
// is contiguous: events[i] has revision compacted+1+i. Watchers never
// block writers: each reads the shared history at its own pace.
type hub struct {
	mu        sync.Mutex
	events    []Event
	rev       int64 // the store's current revision
	compacted int64 // highest revision no longer in the history
	limit     int
	changed   chan struct{} // closed and replaced on every append
	closed    bool
}

func newHub(rev int64, limit int) *hub {
	if limit <= 0 {
		limit = DefaultHistory
	}
	// History from before rev is not available (after a restart of the
	// embedded store it was never loaded): watching it is ErrCompacted.
	return &hub{rev: rev, compacted: rev, limit: limit, changed: make(chan struct{})}
}

// publish appends the event of a write at revision ev.KV.ModRev. Callers
// serialise writes and publish in revision order.
func (h *hub) publish(ev Event) {
	h.mu.Lock()
	if ev.KV.ModRev != h.rev+1 {
		h.mu.Unlock()
		panic(fmt.Sprintf("BUG: store: event at revision %d after revision %d", ev.KV.ModRev, h.rev))
	}
	h.rev = ev.KV.ModRev
	h.events = append(h.events, ev)
	// Trim in steps of a quarter so the slice is not copied on every write.
	if len(h.events) > h.limit+h.limit/4 {
		h.trimLocked(len(h.events) - h.limit)
	}
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

func (h *hub) trimLocked(n int) {
	if n <= 0 {
		return
	}
	if n > len(h.events) {
		n = len(h.events)
	}
	rest := make([]Event, len(h.events)-n, max(len(h.events)-n, h.limit)+h.limit/4+1)
	copy(rest, h.events[n:])
	h.events = rest
	h.compacted += int64(n)
}

// compact drops the history before rev (watching from rev stays possible).
func (h *hub) compact(rev int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	if rev > h.rev {
		return fmt.Errorf("cannot compact at revision %d: the store is at revision %d", rev, h.rev)
	}
	if rev-1 <= h.compacted {
		return nil
	}
	h.trimLocked(int(rev - 1 - h.compacted))
	return nil
}

// close ends every watcher with ErrClosed.
func (h *hub) close() {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.changed)
	}
	h.mu.Unlock()
}

func (h *hub) watch(ctx context.Context, prefix string, fromRev int64) <-chan WatchResponse {
	ch := make(chan WatchResponse, 1)
	if fromRev <= 0 {
		// "From now" is now, not when the goroutine first runs.
		h.mu.Lock()
		fromRev = h.rev + 1
		h.mu.Unlock()
	}
	go h.run(ctx, ch, prefix, fromRev)
	return ch
}

func (h *hub) run(ctx context.Context, ch chan<- WatchResponse, prefix string, next int64) {
	defer close(ch)
	send := func(r WatchResponse) bool {
		select {
		case ch <- r:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			send(WatchResponse{Err: ErrClosed})
			return
		}
		if next <= h.compacted {
			compacted := h.compacted
			h.mu.Unlock()
			send(WatchResponse{Err: fmt.Errorf("cannot watch from revision %d: history up to %d is gone: %w", next, compacted, ErrCompacted)})
			return
		}
		var batch []Event
		i := next - h.compacted - 1
		for ; i < int64(len(h.events)) && len(batch) < maxBatch; i++ {
			if ev := h.events[i]; strings.HasPrefix(ev.KV.Key, prefix) {
				batch = append(batch, ev)
			}
		}
		if last := h.compacted + i; last >= next {
			next = last + 1
		}
		wait := h.changed
		more := i < int64(len(h.events))
		h.mu.Unlock()
		if len(batch) > 0 && !send(WatchResponse{Events: batch}) {
			return
		}
		if more {
			continue
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return
		}
	}
}
