package usage

import (
	"sync"
	"testing"
)

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

// TestRingConcurrent: records of many producers each arrive exactly once
// (run with -race: the slot sequence is the only synchronisation).
func TestRingConcurrent(t *testing.T) {
	const producers, per = 4, 20000
	r := newRing(64)
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
}
