package limiter

import "sync/atomic"

// Slot holds one concurrency slot taken by Limiter.Acquire. The zero value
// is empty. Release is idempotent and safe from any goroutine, so the
// caller defers it right after Acquire and may also release early.
//
// A Slot must not be copied while held (go vet flags copies): two copies
// would release twice. Keep it in the request's state and pass a pointer.
type Slot struct {
	st atomic.Pointer[subject]
}

// Release frees the slot if it is held. Calling it again, or on an empty
// Slot, does nothing.
func (s *Slot) Release() {
	if st := s.st.Swap(nil); st != nil {
		st.inflight.Add(-1)
	}
}

// Held reports whether the slot is held.
func (s *Slot) Held() bool { return s.st.Load() != nil }

// acquire takes a slot of st if fewer than max are in flight; dead when
// st is being swept. It returns the in-flight count seen.
func (st *subject) acquire(max int64) (inflight int64, ok, dead bool) {
	for {
		v := st.inflight.Load()
		if v < 0 {
			return 0, false, true
		}
		if v >= max {
			return v, false, false
		}
		if st.inflight.CompareAndSwap(v, v+1) {
			return v + 1, true, false
		}
	}
}
