package store

import (
	"container/heap"
	"sync"
	"time"
)

// lease is one key written with a TTL. The key expires only while its
// ModRev is still modRev: a later write replaced the lease.
type lease struct {
	at     time.Time
	key    string
	modRev int64
}

type leaseHeap []lease

func (h leaseHeap) Len() int           { return len(h) }
func (h leaseHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h leaseHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *leaseHeap) Push(x any)        { *h = append(*h, x.(lease)) }
func (h *leaseHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// expirer removes keys whose TTL has passed, for the memory and embedded
// stores: a timer on the earliest lease calls expire, which deletes every
// due key at a new revision (a delete seen by Watch). Reads call expire
// first when a lease is due, so a key is never returned after its expiry
// even if the timer has not fired yet.
type expirer struct {
	mu     sync.Mutex
	leases leaseHeap
	kick   chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup
	expire func(now time.Time)
}

func newExpirer(expire func(now time.Time)) *expirer {
	e := &expirer{kick: make(chan struct{}, 1), done: make(chan struct{}), expire: expire}
	e.wg.Add(1)
	go e.loop()
	return e
}

func (e *expirer) add(l lease) {
	e.mu.Lock()
	heap.Push(&e.leases, l)
	first := e.leases[0].key == l.key && e.leases[0].modRev == l.modRev
	e.mu.Unlock()
	if first {
		select {
		case e.kick <- struct{}{}:
		default:
		}
	}
}

// due reports whether a lease has passed.
func (e *expirer) due(now time.Time) bool {
	e.mu.Lock()
	d := len(e.leases) > 0 && !e.leases[0].at.After(now)
	e.mu.Unlock()
	return d
}

// popDue removes and returns the leases that have passed.
func (e *expirer) popDue(now time.Time) []lease {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []lease
	for len(e.leases) > 0 && !e.leases[0].at.After(now) {
		out = append(out, heap.Pop(&e.leases).(lease))
	}
	return out
}

func (e *expirer) next() (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.leases) == 0 {
		return time.Time{}, false
	}
	return e.leases[0].at, true
}

func (e *expirer) loop() {
	defer e.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		wait := time.Hour
		if at, ok := e.next(); ok {
			wait = max(time.Until(at), 0)
		}
		t.Reset(wait)
		select {
		case <-t.C:
			e.expire(time.Now())
		case <-e.kick:
		case <-e.done:
			return
		}
	}
}

func (e *expirer) stop() {
	close(e.done)
	e.wg.Wait()
}
