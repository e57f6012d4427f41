//go:build !race

package usage_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"gw/edge/usage"
)

func TestEmitAllocs(t *testing.T) {
	p := usage.New(usage.Options{})
	defer p.Close(time.Second)
	r := sampleRecords()[1]
	if n := testing.AllocsPerRun(1000, func() { p.Emit(&r) }); n != 0 {
		t.Fatalf("Emit allocates %v per record; want 0", n)
	}
	buf := usage.AppendJSON(nil, &r)
	if n := testing.AllocsPerRun(1000, func() { buf = usage.AppendJSON(buf[:0], &r) }); n != 0 {
		t.Fatalf("AppendJSON allocates %v per record into a reused buffer; want 0", n)
	}
}

// gateSink is a discardSink whose sends wait while gate is locked.
type gateSink struct {
	discardSink
	gate sync.Mutex
}

func (s *gateSink) Send(context.Context, *usage.Batch) error {
	s.gate.Lock()
	defer s.gate.Unlock()
	return nil
}

// TestFanoutReusesChunks: backlogs of changing sizes, some bigger than a
// chunk, recycle the sinks' chunks instead of allocating new ones (a
// chunk sized for each drain's backlog cost ~1 KB per record here).
func TestFanoutReusesChunks(t *testing.T) {
	sinks := []*gateSink{{}, {}}
	p := startSinks(t, 128, sinks[0], sinks[1])
	defer p.Close(time.Second)
	r := sampleRecords()[1]
	var emitted int64
	deadline := time.Now().Add(10 * time.Second)
	// round queues n records while the dispatcher is stalled (one drain's
	// backlog) and waits for the sinks; n is a multiple of the batch size.
	round := func(n int) {
		release := p.Stall()
		for i := 0; i < n; i++ {
			p.Emit(&r)
		}
		release()
		emitted += int64(n)
		for min(sinks[0].records.Load(), sinks[1].records.Load()) < emitted {
			if time.Now().After(deadline) {
				t.Fatal("records not delivered")
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	// The first rounds allocate the chunks and the cold ring's blocks
	// (each big round's 3,584 records past the hot ring reach new ones).
	// In the first, the sinks' sends wait until the dispatcher has handed
	// the whole round over: every chunk a round needs is allocated then,
	// however the workers keep up later.
	for _, s := range sinks {
		s.gate.Lock()
	}
	release := p.Stall()
	for i := 0; i < 4096; i++ {
		p.Emit(&r)
	}
	release()
	for _, st := range p.Status() {
		for st.Queued < 4096-128 { // all but the batch being sent
			if time.Now().After(deadline) {
				t.Fatalf("round not handed over: %+v", st)
			}
			time.Sleep(100 * time.Microsecond)
			st = statusOf(p, st.Name)
		}
	}
	for _, s := range sinks {
		s.gate.Unlock()
	}
	emitted = 4096
	for i := 0; i < 6; i++ {
		round(256)
		round(4096)
	}
	const rounds = 5
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for i := 0; i < rounds; i++ {
		round(256)
		round(4096)
	}
	runtime.ReadMemStats(&m1)
	if per := (m1.TotalAlloc - m0.TotalAlloc) / (rounds * (256 + 4096)); per > 64 {
		t.Fatalf("fan-out allocates %d B per record; want chunks reused", per)
	}
}

func statusOf(p *usage.Pipeline, name string) usage.SinkStatus {
	for _, st := range p.Status() {
		if st.Name == name {
			return st
		}
	}
	return usage.SinkStatus{}
}
