package usage

import (
	"reflect"
	"strconv"
	"sync"
	"testing"
)

// put is a producer with its record built: claim, copy, publish.
func (r *ring) put(rec *Record) bool {
	s, pos, ok := r.claim()
	if ok {
		s.rec = *rec
		r.publish(s, pos)
	}
	return ok
}

// put is ring.put on the queue's claim.
func (q *queue) put(rec *Record) bool {
	r, s, pos, ok := q.claim()
	if ok {
		s.rec = *rec
		r.publish(s, pos)
	}
	return ok
}

// TestRingFullAndOrder: a ring takes exactly its (power-of-two) capacity,
// refuses the next record, and hands records back in order, slot by slot.
func TestRingFullAndOrder(t *testing.T) {
	r := newRing(6) // rounded up to 8
	for i := 0; i < 8; i++ {
		if !r.put(&Record{Attempt: i}) {
			t.Fatalf("put %d refused below capacity", i)
		}
	}
	if r.put(&Record{Attempt: 99}) {
		t.Fatal("a full ring took a record")
	}
	for lap := 0; lap < 3; lap++ {
		for i := 0; i < 8; i++ {
			rec := r.peek()
			if rec == nil || rec.Attempt != lap*8+i {
				t.Fatalf("lap %d slot %d: got %+v", lap, i, rec)
			}
			r.release()
			if !r.put(&Record{Attempt: (lap+1)*8 + i}) {
				t.Fatalf("lap %d: a released slot was not reusable", lap)
			}
		}
	}
}

// TestRingClaimHoldsOrder: a claimed slot is zero, and the consumer waits
// at it until it is published, even when later slots are published first.
func TestRingClaimHoldsOrder(t *testing.T) {
	r := newRing(2)
	for i := range 2 {
		r.put(&Record{Attempt: 1, ErrorClass: "x"})
		if r.peek() == nil {
			t.Fatalf("record %d not published", i)
		}
		r.release() // the slot is cleared for its next lap
	}
	s1, p1, _ := r.claim() // both slots on their second lap
	s2, p2, _ := r.claim()
	if !reflect.DeepEqual(s1.rec, Record{}) || !reflect.DeepEqual(s2.rec, Record{}) {
		t.Fatalf("claimed slots not zero: %+v, %+v", s1.rec, s2.rec)
	}
	s2.rec.Attempt = 3
	r.publish(s2, p2)
	if rec := r.peek(); rec != nil {
		t.Fatalf("read past an unpublished slot: %+v", rec)
	}
	s1.rec.Attempt = 2
	r.publish(s1, p1)
	for _, want := range []int{2, 3} {
		rec := r.peek()
		if rec == nil || rec.Attempt != want {
			t.Fatalf("got %+v, want attempt %d", rec, want)
		}
		r.release()
	}
}

// TestRingConcurrent: records of many producers each arrive exactly once
// (run with -race: the slot sequence is the only synchronisation), in a
// ring within one block and in one of several blocks the producers race to
// allocate.
func TestRingConcurrent(t *testing.T) {
	for _, size := range []int{64, 4 * ringBlock} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			const producers, per = 4, 20000
			r := newRing(size)
			var wg sync.WaitGroup
			for p := 0; p < producers; p++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < per; i++ {
						rec := Record{Attempt: p*per + i, ErrorClass: "x"}
						for !r.put(&rec) {
						}
					}
				}()
			}
			seen := make([]bool, producers*per)
			for got := 0; got < producers*per; {
				rec := r.peek()
				if rec == nil {
					continue
				}
				if seen[rec.Attempt] || rec.ErrorClass != "x" {
					t.Fatalf("record %d twice or torn: %+v", rec.Attempt, rec)
				}
				seen[rec.Attempt] = true
				r.release()
				got++
			}
			wg.Wait()
			if r.peek() != nil {
				t.Fatal("records beyond those put")
			}
		})
	}
}

// TestRingBlocksOnDemand: a fresh ring holds no slot; a put allocates the
// block of its position only, and the consumer never allocates one.
func TestRingBlocksOnDemand(t *testing.T) {
	r := newRing(QueueSize)
	count := func() (n int) {
		for i := range r.blocks {
			if r.blocks[i].Load() != nil {
				n++
			}
		}
		return n
	}
	if got := count(); got != 0 {
		t.Fatalf("fresh ring: %d blocks; want 0", got)
	}
	if r.peek() != nil || count() != 0 {
		t.Fatal("peek on a fresh ring allocated or found a record")
	}
	for i := 0; i < ringBlock+1; i++ {
		if !r.put(&Record{Attempt: i}) {
			t.Fatalf("put %d refused", i)
		}
	}
	if got := count(); got != 2 {
		t.Fatalf("after %d puts: %d blocks; want 2", ringBlock+1, got)
	}
	for i := 0; i < ringBlock+1; i++ {
		rec := r.peek()
		if rec == nil || rec.Attempt != i {
			t.Fatalf("record %d: got %v", i, rec)
		}
		r.release()
	}
	if r.peek() != nil || count() != 2 {
		t.Fatal("the consumer allocated a block or found a record past the last")
	}
}

// TestQueueSpillAndBound: the queue fills its hot ring first, spills to
// the cold ring, refuses records past its size, and returns every record
// once; the cold ring holds no block until the hot ring overflows.
func TestQueueSpillAndBound(t *testing.T) {
	const size = 4 * ringBlock
	q := newQueue(size)
	coldBlocks := func() (n int) {
		for i := range q.cold.blocks {
			if q.cold.blocks[i].Load() != nil {
				n++
			}
		}
		return n
	}
	for i := 0; i < hotSlots; i++ {
		if !q.put(&Record{Attempt: i}) {
			t.Fatalf("put %d refused", i)
		}
	}
	if n := coldBlocks(); n != 0 {
		t.Fatalf("%d records in a %d-slot hot ring: %d cold blocks; want 0", hotSlots, hotSlots, n)
	}
	for i := hotSlots; i < size; i++ {
		if !q.put(&Record{Attempt: i}) {
			t.Fatalf("put %d refused below the size", i)
		}
	}
	if q.put(&Record{Attempt: -1}) {
		t.Fatal("a full queue took a record")
	}
	seen := make([]bool, size)
	for i := 0; i < size/2; i++ {
		rec := q.peek()
		if rec == nil || seen[rec.Attempt] {
			t.Fatalf("record %d: got %v", i, rec)
		}
		seen[rec.Attempt] = true
		q.release()
	}
	// Freed room is usable again, up to the size.
	for i := 0; i < size/2; i++ {
		if !q.put(&Record{Attempt: size + i}) {
			t.Fatalf("put after release %d refused", i)
		}
	}
	if q.put(&Record{Attempt: -1}) {
		t.Fatal("a full queue took a record")
	}
	seen = append(seen, make([]bool, size/2)...)
	for rec := q.peek(); rec != nil; rec = q.peek() {
		if seen[rec.Attempt] {
			t.Fatalf("record %d twice", rec.Attempt)
		}
		seen[rec.Attempt] = true
		q.release()
	}
	for i, ok := range seen {
		if !ok {
			t.Fatalf("record %d lost", i)
		}
	}
	if q.backlog() != 0 {
		t.Fatalf("empty queue has a backlog of %d", q.backlog())
	}
}

// TestQueueConcurrent: records of many producers each arrive exactly once
// through both rings (run with -race).
func TestQueueConcurrent(t *testing.T) {
	const producers, per = 4, 20000
	q := newQueue(2 * hotSlots)
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				rec := Record{Attempt: p*per + i}
				for !q.put(&rec) {
				}
			}
		}()
	}
	seen := make([]bool, producers*per)
	for got := 0; got < producers*per; {
		rec := q.peek()
		if rec == nil {
			continue
		}
		if seen[rec.Attempt] {
			t.Fatalf("record %d twice", rec.Attempt)
		}
		seen[rec.Attempt] = true
		q.release()
		got++
	}
	wg.Wait()
	if q.peek() != nil || q.backlog() != 0 {
		t.Fatal("records left after all were read")
	}
}

// BenchmarkRingPutPeek is one record through the ring on one goroutine:
// put, peek, release (the producer's and the dispatcher's per-record cost).
func BenchmarkRingPutPeek(b *testing.B) {
	r := newRing(QueueSize)
	rec := &Record{Attempt: 1}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if !r.put(rec) {
			b.Fatal("full")
		}
		if r.peek() == nil {
			b.Fatal("empty")
		}
		r.release()
	}
}
