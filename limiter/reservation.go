package limiter

import "time"

// inlineEntries windows fit in a Reservation without allocating; more
// spill to a slice that Reset keeps for reuse.
const inlineEntries = 16

// Reservation is one request's charge against a set of windows: built with
// Add/AddLimits, admitted by Limiter.Reserve, finished by Limiter.Settle.
// It remembers which windows were charged and with how much, so Settle
// adjusts exactly those.
//
// A Reservation is owned by one request at a time; it is not safe for
// concurrent use. Keep it in the request's pooled state and call Reset
// before reuse. The zero value is ready.
type Reservation struct {
	n      int
	inline [inlineEntries]entry
	spill  []entry

	tokens int64 // the estimate charged to token windows
	state  resState
	shared bool // charged to the shared store
}

type resState uint8

const (
	resOpen resState = iota // being built
	resHeld                 // admitted; Settle pending
	resDone                 // refused (nothing charged) or settled
)

type entry struct {
	sub   Subject
	kind  Kind
	secs  int64 // window length in seconds
	max   int64
	cost  int64 // requested: 1 for request windows, the estimate for token windows
	win   int64 // window number checked / charged
	count int64 // count after the charge, or the count that refused it
	st    *subject
}

// over reports whether the entry's count refuses its cost.
func (e *entry) over() bool {
	need := e.cost
	if need < 1 {
		need = 1
	}
	return e.count+need > e.max
}

// Add puts the window kind of subject s with limit max into r. max <= 0
// (unlimited) and limits above the counters' range (about 1.1e12) are
// ignored. Adding the same subject and kind twice keeps the smaller limit:
// both describe one counter. Add panics on Concurrency (use Acquire) and
// after Reserve.
func (r *Reservation) Add(s Subject, k Kind, max int64) {
	if int(k) >= numWindows || k == RPW {
		panic("BUG: limiter: Reservation.Add with a non-window kind; use Limiter.Acquire or AddWindow")
	}
	r.add(s, k, kindSeconds[k], max)
}

// AddWindow puts a request window of length w (whole seconds, 1 s to
// MaxWindow) for subject s with limit max into r. The four standard lengths
// are RPS, RPM, RPH and RPD; any other is RPW, counted the same way (fixed,
// aligned to the Unix epoch). A subject has one RPW counter: its windows of
// other lengths must use other subjects (AddWindow panics on two in one
// reservation). It panics on a length out of range, as Add on misuse.
func (r *Reservation) AddWindow(s Subject, w time.Duration, max int64) {
	if w < time.Second || w > MaxWindow || w%time.Second != 0 {
		panic("BUG: limiter: AddWindow length out of range or not whole seconds")
	}
	if k, ok := WindowKind(w, false); ok {
		r.add(s, k, kindSeconds[k], max)
		return
	}
	r.add(s, RPW, int64(w/time.Second), max)
}

func (r *Reservation) add(s Subject, k Kind, secs, max int64) {
	if r.state != resOpen {
		panic("BUG: limiter: Reservation.Add after Reserve; call Reset first")
	}
	if max <= 0 || max >= countMax {
		return
	}
	for i := 0; i < r.n; i++ {
		if e := r.at(i); e.kind == k && e.sub == s {
			if e.secs != secs {
				panic("BUG: limiter: two RPW lengths for one subject")
			}
			if max < e.max {
				e.max = max
			}
			return
		}
	}
	var e *entry
	if r.n < inlineEntries {
		e = &r.inline[r.n]
	} else {
		r.spill = append(r.spill, entry{})
		e = &r.spill[len(r.spill)-1]
	}
	r.n++
	// Field by field: a composite literal is built on the stack with 8-byte
	// stores and copied with 16-byte loads, a store-forwarding stall that
	// cost ~10 ns per Add.
	e.sub, e.kind, e.secs, e.max = s, k, secs, max
	e.cost, e.win, e.count, e.st = 0, 0, 0, nil
}

// AddLimits adds every window of l (Concurrency aside) for subject s.
func (r *Reservation) AddLimits(s Subject, l Limits) {
	r.Add(s, RPS, l.RPS)
	r.Add(s, RPM, l.RPM)
	r.Add(s, RPH, l.RPH)
	r.Add(s, RPD, l.RPD)
	r.Add(s, TPM, l.TPM)
	r.Add(s, TPD, l.TPD)
}

// Len returns the number of windows in r.
func (r *Reservation) Len() int { return r.n }

// Tokens returns the estimate Reserve charged to the token windows.
func (r *Reservation) Tokens() int64 { return r.tokens }

// Shared reports whether Reserve charged the shared store (false: the
// local store, alone or as the degraded fallback).
func (r *Reservation) Shared() bool { return r.shared }

// Reset empties r for reuse. A reservation admitted and not yet settled
// is abandoned: its estimate stays charged until the window ends.
func (r *Reservation) Reset() {
	for i := 0; i < r.n && i < inlineEntries; i++ {
		r.inline[i] = entry{}
	}
	clear(r.spill)
	r.spill = r.spill[:0]
	r.n, r.tokens, r.state, r.shared = 0, 0, resOpen, false
}

func (r *Reservation) at(i int) *entry {
	if i < inlineEntries {
		return &r.inline[i]
	}
	return &r.spill[i-inlineEntries]
}

// prepare stamps the cost of every entry before a reserve.
func (r *Reservation) prepare(tokens int64) {
	if tokens < 0 {
		tokens = 0
	} else if tokens > countMax {
		tokens = countMax
	}
	r.tokens = tokens
	for i := 0; i < r.n; i++ {
		e := r.at(i)
		if e.kind.Tokens() {
			e.cost = tokens
		} else {
			e.cost = 1
		}
		e.count, e.win, e.st = 0, 0, nil
	}
}
