package usage

import "sync/atomic"

// ring is a bounded queue between the proxy and the dispatcher (the main
// queue has two, see queue): a lock-free multi-producer, single-consumer
// ring of Records (Vyukov's bounded queue). It replaces a buffered
// channel, whose lock the sender and the draining dispatcher fought over:
// under load that lock cost more than the rest of a record's emission. A producer claims a slot with one
// CAS on head, copies its record into the slot and publishes it by storing
// the slot's sequence; the consumer reads slots in order and hands each
// back by advancing its sequence one lap.
type ring struct {
	// blocks hold the slots ringBlock at a time, each allocated by the
	// first producer that reaches it: the slots hold pointers (a Record's
	// strings), so the GC reads every allocated slot on each cycle and the
	// kernel backs all of them, zeros or not. An idle gw holds no block.
	blocks []atomic.Pointer[[ringBlock]ringSlot]
	mask   uint64
	_      [48]byte
	head   atomic.Uint64 // next position to claim (producers)
	_      [56]byte
	// tail is the next position to read: written by the dispatcher only,
	// read by producers checking the queue's bound (queue.put).
	tail atomic.Uint64
	cur  *ringSlot // the slot peek found at tail, for release (the dispatcher only)
}

type ringSlot struct {
	// seq == pos: free for the producer of position pos; seq == pos+1:
	// holds the record of pos for the consumer. It is stored minus the
	// slot's index, so a fresh block is all zeros and needs no setup.
	seq atomic.Uint64
	rec Record
}

// seqAt reads the sequence of slot s, the slot of position pos.
func (r *ring) seqAt(s *ringSlot, pos uint64) uint64 { return s.seq.Load() + pos&r.mask }

// setSeq stores seq into the slot of position pos.
func (r *ring) setSeq(s *ringSlot, pos, seq uint64) { s.seq.Store(seq - pos&r.mask) }

// ringBlock is how many slots are allocated at once (a power of two;
// about 150 KB with a ~590-byte Record).
const ringBlock = 256

// newRing makes a ring of at least n slots (rounded up to a power of two;
// a ring smaller than a block uses the start of one). It allocates no slot.
func newRing(n int) *ring {
	size := 1
	for size < n {
		size <<= 1
	}
	return &ring{blocks: make([]atomic.Pointer[[ringBlock]ringSlot], max(size/ringBlock, 1)), mask: uint64(size - 1)}
}

// slot returns the slot of position pos, or nil when its block does not
// exist yet (the consumer's answer: nothing was published there).
func (r *ring) slot(pos uint64) *ringSlot {
	i := pos & r.mask
	if b := r.blocks[i/ringBlock].Load(); b != nil {
		return &b[i%ringBlock]
	}
	return nil
}

// claimSlot is slot for a producer: it allocates the block on its first
// lap. A producer that loses the race drops its block for the winner's.
func (r *ring) claimSlot(pos uint64) *ringSlot {
	if s := r.slot(pos); s != nil {
		return s
	}
	return r.grow(pos)
}

// grow is the slow path of claimSlot, out of line so the fast path inlines.
//
//go:noinline
func (r *ring) grow(pos uint64) *ringSlot {
	i := pos & r.mask
	bp := &r.blocks[i/ringBlock]
	b := new([ringBlock]ringSlot)
	if !bp.CompareAndSwap(nil, b) {
		b = bp.Load()
	}
	return &b[i%ringBlock]
}

// claim takes the next free slot and its position; ok is false when the
// ring is full. The slot is zero (release cleared it): the producer fills
// its record and hands it to the consumer with publish, which must follow
// (the consumer reads slots in order and waits at an unpublished one).
// Safe for concurrent use; it does not allocate.
func (r *ring) claim() (s *ringSlot, pos uint64, ok bool) {
	pos = r.head.Load()
	for {
		s = r.claimSlot(pos)
		switch seq := r.seqAt(s, pos); {
		case seq == pos:
			if r.head.CompareAndSwap(pos, pos+1) {
				return s, pos, true
			}
			pos = r.head.Load()
		case int64(seq-pos) < 0:
			return nil, 0, false // the slot still holds the record of the previous lap
		default:
			pos = r.head.Load() // another producer claimed pos
		}
	}
}

// publish hands the slot claim returned for pos to the consumer.
func (r *ring) publish(s *ringSlot, pos uint64) { r.setSeq(s, pos, pos+1) }

// backlog is how many positions producers have claimed past the
// consumer: the records the next drain can find, at most. Dispatcher
// goroutine only.
func (r *ring) backlog() uint64 { return r.head.Load() - r.tail.Load() }

// peek returns the next record, or nil when none is published yet. The
// record stays valid until release. Dispatcher goroutine only.
func (r *ring) peek() *Record {
	tail := r.tail.Load()
	s := r.slot(tail)
	if s == nil || r.seqAt(s, tail) != tail+1 {
		return nil
	}
	r.cur = s
	return &s.rec
}

// release hands the slot returned by peek back to the producers, clearing
// it so the ring does not keep old snapshots' strings alive.
func (r *ring) release() {
	s := r.cur
	s.rec = Record{}
	tail := r.tail.Load()
	r.setSeq(s, tail, tail+r.mask+1)
	r.tail.Store(tail + 1)
}

// queue is the main queue: a small ring that takes records while the
// dispatcher keeps up, and the full-size ring behind it for bursts.
//
// A ring's slots are used in turn, so a ring of QueueSize slots (about
// 10 MB of Records) writes each record to memory last touched a lap
// earlier, out of every CPU cache: under load that was several cache
// misses per request, paid on the request path, with or without sinks.
// The hot ring's slots are reused within milliseconds and stay cached;
// the cold ring is allocated, block by block, only when a burst reaches
// it, and takes records only while both rings together hold fewer than
// the queue's size. The common path touches the hot ring alone: a shared
// counter of queued records would cost a cache line passed between the
// producers and the dispatcher on every record.
type queue struct {
	hot, cold *ring
	coldMax   uint64 // records the cold ring may hold: the size minus the hot ring's
	cur       *ring  // the ring of the record peek returned (the dispatcher only)
}

// hotSlots is the hot ring's size: a few dispatcher ticks' records at a
// loaded gateway's rate (about 300 KB).
const hotSlots = 512

// newQueue makes a queue of n records (n >= hotSlots; the cold ring is
// rounded up to a power of two but holds n - hotSlots at most).
func newQueue(n int) *queue {
	hot := max(min(hotSlots, n/2), 1)
	return &queue{hot: newRing(hot), cold: newRing(n), coldMax: uint64(n - hot)}
}

// claim takes a zero slot of the hot ring, or of the cold one while the
// queue holds fewer than its size; ok is false when it is full. Producers
// racing past a nearly full cold ring's bound may overshoot it by one
// record each. Publish the slot with its ring's publish.
func (q *queue) claim() (r *ring, s *ringSlot, pos uint64, ok bool) {
	if s, pos, ok = q.hot.claim(); ok {
		return q.hot, s, pos, true
	}
	if q.cold.backlog() >= q.coldMax {
		return nil, nil, 0, false
	}
	s, pos, ok = q.cold.claim()
	return q.cold, s, pos, ok
}

// peek returns the next record, hot ring first, or nil. Dispatcher only.
func (q *queue) peek() *Record {
	if r := q.hot.peek(); r != nil {
		q.cur = q.hot
		return r
	}
	if r := q.cold.peek(); r != nil {
		q.cur = q.cold
		return r
	}
	return nil
}

// release hands back the slot of the record peek returned. Dispatcher only.
func (q *queue) release() { q.cur.release() }

// backlog is at most how many records the next drain finds. Dispatcher only.
func (q *queue) backlog() uint64 { return q.hot.backlog() + q.cold.backlog() }
