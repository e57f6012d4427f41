package limiter

// The local store: one lock-free state block per subject in an
// xsync.MapOf. It is the whole store without Redis and the per-replica
// fallback with it.

import (
	"hash/maphash"
	"math"
	"runtime"
	"sync/atomic"

	"github.com/puzpuzpuz/xsync/v3"
)

// A window counter is one uint64: the low tagBits of the window number
// (unix seconds / window length) above a countBits count. One CAS checks the
// limit, rotates a stale window to the current one and increments, so a
// window is exact without locks and never allocates.
//
// Why not striped counters: a striped counter makes Add cheap but cannot
// check-and-increment exactly (the sum of the stripes is read racily), and
// limits must hold exactly. Contention is per subject, and each subject's
// block is padded to its own cache lines, so unrelated subjects never share
// a line; Load before CAS keeps rejected requests read-only (see the
// timing tests for the figures against atomic.Int64 and xsync.Counter).
const (
	tagBits   = 24
	countBits = 64 - tagBits
	tagMask   = 1<<tagBits - 1
	countMask = 1<<countBits - 1
	// countMax is where counts saturate (about 1.1e12): a limit above it
	// cannot be reached. All ones is the tombstone.
	countMax = countMask - 1

	// tombstone marks a slot of a subject being swept: writers look the
	// subject up again.
	tombstone = math.MaxUint64
	// inflightDead is the tombstone of the concurrency counter.
	inflightDead = math.MinInt64
)

func pack(win, count int64) uint64 {
	return uint64(win&tagMask)<<countBits | uint64(count)
}

// slotWindow reconstructs the full window number of slot value v relative
// to win: tags compare modulo 2^tagBits, and a tag up to half the ring
// ahead is a newer window (another goroutine read the clock later). An
// empty slot (count 0, the zero value included) is older than any window.
func slotWindow(v uint64, win int64) int64 {
	if v&countMask == 0 {
		return math.MinInt64
	}
	d := (int64(v>>countBits) - win) & tagMask
	if d >= 1<<(tagBits-1) {
		d -= 1 << tagBits
	}
	return win + d
}

// subject is the state block of one Subject: a counter per window kind and
// the in-flight count. Padded to two cache lines (see xsync's Counter for
// 64 vs 128 bytes: adjacent-line prefetch pairs lines).
type subject struct {
	slots    [numWindows]atomic.Uint64
	inflight atomic.Int64
	rpwSecs  atomic.Int64 // the RPW slot's window length, for the sweep
	_        [128 - 8*numWindows - 16]byte
}

type local struct {
	subjects *xsync.MapOf[Subject, *subject]
}

func newLocal() *local {
	return &local{subjects: xsync.NewMapOfWithHasher[Subject, *subject](hashSubject)}
}

var subjectSeed = maphash.MakeSeed()

// hashSubject hashes the two strings with maphash (AES-based where the CPU
// has it): the generic struct hasher (runtime.typehash) walks the type
// descriptor on every call and cost a third of a Reserve.
func hashSubject(s Subject, seed uint64) uint64 {
	h := maphash.String(subjectSeed, s.ID)
	if s.Scope != "" {
		h = (h ^ maphash.String(subjectSeed, s.Scope)) * 0x9e3779b97f4a7c15
	}
	return h ^ seed
}

func newSubject() *subject { return new(subject) }

// get returns the live state block of s, creating it.
func (l *local) get(s Subject) *subject {
	// Fast path - the subject exists.
	if st, ok := l.subjects.Load(s); ok {
		return st
	}
	// Slow path - the first request of this subject (or the first after a
	// sweep).
	st, _ := l.subjects.LoadOrCompute(s, newSubject)
	return st
}

// regain returns the state block of s after st was found tombstoned: the
// sweeper is between marking and deleting (or undoing), so yield until the
// map changes.
func (l *local) regain(s Subject, st *subject) *subject {
	for {
		n := l.get(s)
		if n != st {
			return n
		}
		runtime.Gosched()
		if !st.dead() {
			return st
		}
	}
}

func (st *subject) dead() bool { return st.inflight.Load() == inflightDead }

// peek returns the count of window win in slot k and the window it belongs
// to (a newer window when the slot moved on), or dead.
func (st *subject) peek(k Kind, win int64) (count, at int64, dead bool) {
	v := st.slots[k].Load()
	if v == tombstone {
		return 0, win, true
	}
	w := slotWindow(v, win)
	if w < win {
		return 0, win, false // stale: the window starts at zero
	}
	return int64(v & countMask), w, false
}

// charge adds cost to the window win of slot k if count+need stays within
// max. It returns the count after the charge (or the count that refused
// it) and the window charged: a newer window when the slot already moved
// on. need is max(cost, 1): an exhausted window refuses even a zero
// estimate.
func (st *subject) charge(k Kind, win, cost, max int64) (count, at int64, ok, dead bool) {
	need := cost
	if need < 1 {
		need = 1
	}
	slot := &st.slots[k]
	for {
		v := slot.Load()
		if v == tombstone {
			return 0, win, false, true
		}
		at = slotWindow(v, win)
		var c int64
		if at >= win {
			c = int64(v & countMask)
		} else {
			at = win
		}
		if c+need > max {
			return c, at, false, false
		}
		if cost == 0 {
			return c, at, true, false
		}
		n := c + cost
		if n > countMax {
			n = countMax
		}
		if slot.CompareAndSwap(v, pack(at, n)) {
			return n, at, true, false
		}
	}
}

// adjust adds delta to window win of slot k. A negative delta (a refund)
// applies only while that window is current and clamps at zero; a positive
// delta is charged to win, or to the slot's newer window, without a limit
// check (the tokens were spent). It reports dead on a tombstone.
func (st *subject) adjust(k Kind, win, delta int64) (dead bool) {
	slot := &st.slots[k]
	for {
		v := slot.Load()
		if v == tombstone {
			return true
		}
		at := slotWindow(v, win)
		var c int64
		switch {
		case at == win:
			c = int64(v & countMask)
		case at > win:
			if delta < 0 {
				return false // refunds never touch another window
			}
			c = int64(v & countMask)
		default: // stale slot: window win starts at zero
			if delta < 0 {
				return false
			}
			at = win
		}
		n := c + delta
		if n < 0 {
			n = 0
		} else if n > countMax {
			n = countMax
		}
		if slot.CompareAndSwap(v, pack(at, n)) {
			return false
		}
	}
}

// reserve charges every entry of r at nowNs, all or nothing. It reports
// whether r was admitted; entry counts are filled for the decision.
//
// Two passes: a read-only pre-check refuses without writing (the common
// case under overload), then a CAS pass charges. When a concurrent request
// wins the last unit between the passes, the entries already charged are
// refunded. Bound: until that refund (a few ns), those windows read up to
// one request's cost too high, so a concurrent request may be refused that
// would have fit; a window never admits beyond its limit.
func (l *local) reserve(r *Reservation, nowNs int64) bool {
	n := r.Len()
	ok := true
	var prev *subject
	var prevSub Subject
	for i := 0; i < n; i++ {
		e := r.at(i)
		e.win = windowOf(e.secs, nowNs)
		if prev != nil && e.sub == prevSub {
			e.st = prev
		} else {
			e.st = l.get(e.sub)
			prev, prevSub = e.st, e.sub
		}
		if e.kind == RPW && e.st.rpwSecs.Load() != e.secs {
			e.st.rpwSecs.Store(e.secs)
		}
		if n == 1 {
			// One window: the CAS loop below loads before it swaps, so a
			// pre-check would only add a second trip for the cache line.
			break
		}
		for {
			c, at, dead := e.st.peek(e.kind, e.win)
			if dead {
				e.st = l.regain(e.sub, e.st)
				prev = e.st
				continue
			}
			e.count, e.win = c, at
			break
		}
		if e.over() {
			ok = false
		}
	}
	if !ok {
		return false
	}
	for i := 0; i < n; i++ {
		e := r.at(i)
		for {
			c, at, charged, dead := e.st.charge(e.kind, e.win, e.cost, e.max)
			if dead {
				e.st = l.regain(e.sub, e.st)
				continue
			}
			e.count, e.win = c, at
			if !charged {
				for j := 0; j < i; j++ {
					l.refund(r.at(j))
				}
				return false
			}
			break
		}
	}
	return true
}

// refund takes back what reserve charged to e (rollback of a refused
// request). A window that rotated meanwhile has nothing to take back.
func (l *local) refund(e *entry) {
	if e.cost == 0 {
		return
	}
	if !e.st.adjust(e.kind, e.win, -e.cost) {
		e.count -= e.cost
	}
	// A tombstone means the window was swept: nothing is left to refund.
}

// settle applies actual-estimate to the token entries of a reservation
// admitted by reserve. A refund applies to the reserved window while it is
// current; extra tokens go to the reserved window, or to the current one
// once it rotated (see Limiter.Settle).
func (l *local) settle(r *Reservation, delta, nowNs int64) {
	for i, n := 0, r.Len(); i < n; i++ {
		e := r.at(i)
		if !e.kind.Tokens() {
			continue
		}
		win := e.win
		if cur := windowOf(e.secs, nowNs); cur > win {
			if delta < 0 {
				continue
			}
			win = cur
		}
		for e.st.adjust(e.kind, win, delta) {
			if delta < 0 {
				break // swept: the window is gone, and so is the refund
			}
			e.st = l.regain(e.sub, e.st)
		}
	}
}

// sweep drops the state of subjects with no live window and nothing in
// flight, and zeroes stale counters of live subjects (so a 24-bit tag can
// never alias a window 2^24 windows later).
func (l *local) sweep(nowNs int64) {
	l.subjects.Range(func(s Subject, st *subject) bool {
		if st.trySweep(nowNs) {
			l.subjects.Compute(s, func(old *subject, loaded bool) (*subject, bool) {
				return old, loaded && old == st
			})
		}
		return true
	})
}

// trySweep tombstones every slot of st if none holds a count in a current
// window and none is in flight. On any sign of life it undoes the marks
// (writers that met a tombstone wait in regain) and zeroes stale slots.
func (st *subject) trySweep(nowNs int64) bool {
	if !st.inflight.CompareAndSwap(0, inflightDead) {
		st.compact(nowNs)
		return false
	}
	for k := 0; k < numWindows; k++ {
		slot := &st.slots[k]
		v := slot.Load()
		if live(v, st.secs(Kind(k)), nowNs) || !slot.CompareAndSwap(v, tombstone) {
			for j := 0; j < k; j++ {
				st.slots[j].Store(0) // was stale: zero is the same window state
			}
			st.inflight.Store(0)
			st.compact(nowNs)
			return false
		}
	}
	return true
}

// compact zeroes stale slots of a live subject.
func (st *subject) compact(nowNs int64) {
	for k := 0; k < numWindows; k++ {
		slot := &st.slots[k]
		if v := slot.Load(); v != 0 && v != tombstone && !live(v, st.secs(Kind(k)), nowNs) {
			slot.CompareAndSwap(v, 0)
		}
	}
}

// secs returns the window length of st's slot k (0: RPW never used).
func (st *subject) secs(k Kind) int64 {
	if k == RPW {
		return st.rpwSecs.Load()
	}
	return kindSeconds[k]
}

// live reports whether slot value v holds a count of the current (or a
// newer) window of length secs.
func live(v uint64, secs, nowNs int64) bool {
	if v&countMask == 0 || secs <= 0 {
		return false
	}
	win := windowOf(secs, nowNs)
	return slotWindow(v, win) >= win
}

// windowOf returns the number of the window of length secs holding nowNs.
func windowOf(secs, nowNs int64) int64 {
	return nowNs / (secs * 1e9)
}

// windowEnd returns the end of window win of length secs, in unix ns.
func windowEnd(secs, win int64) int64 {
	return (win + 1) * secs * 1e9
}
