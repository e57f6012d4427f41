package usage_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/VictoriaMetrics/metrics"

	"gw/edge/usage"
	"gw/edge/usage/usagetest"
)

// newFakeClock is usagetest's clock at a fixed start.
func newFakeClock() *usagetest.FakeClock {
	return usagetest.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

// testSink records accepted batches; fail decides each send's outcome.
type testSink struct {
	mu       sync.Mutex
	sends    int
	ids      []string
	accepted [][]usage.Record
	pending  [][]usage.Record
	open     []usage.Record // the batch being encoded
	fail     func(try int) error
	block    chan struct{} // when set, Send waits for it (or ctx)
}

func (s *testSink) AppendRecord(body []byte, r *usage.Record) []byte {
	s.mu.Lock()
	s.open = append(s.open, *r)
	s.mu.Unlock()
	return usage.NDJSON{}.AppendRecord(body, r)
}

func (s *testSink) Finish(dst, body []byte, n int) ([]byte, error) {
	s.mu.Lock()
	if len(s.open) != n {
		panic("testSink: batch of " + strconv.Itoa(n) + " records, " + strconv.Itoa(len(s.open)) + " appended")
	}
	s.pending = append(s.pending, s.open)
	s.open = nil
	s.mu.Unlock()
	return append(dst, body...), nil
}

func (s *testSink) Send(ctx context.Context, b *usage.Batch) error {
	if s.block != nil {
		select {
		case <-s.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sends++
	s.ids = append(s.ids, b.ID)
	if s.fail != nil {
		if err := s.fail(s.sends); err != nil {
			return err
		}
	}
	s.accepted = append(s.accepted, s.pending[len(s.pending)-1])
	return nil
}

func (s *testSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, b := range s.accepted {
		n += len(b)
	}
	return n
}

func (s *testSink) waitCount(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if s.count() >= n {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("sink got %d events; want %d", s.count(), n)
}

func spec(name, kind, fp string, batch int, s usage.Sink) usage.SinkSpec {
	return usage.SinkSpec{Config: usage.SinkConfig{Name: name, Kind: kind, BatchSize: batch, FlushInterval: 20 * time.Millisecond,
		Retry: usage.ExporterPolicy, Fingerprint: fp}, Build: func() (usage.Sink, error) { return s, nil }}
}

func rec(i int) *usage.Record {
	return &usage.Record{OccurredAt: time.Now(), RequestID: usage.NewRequestID(), Attempt: i, AttemptKind: usage.AttemptFinal, StatusCode: 200, Model: "m"}
}

func counter(name string) uint64 { return metrics.GetOrCreateCounter(name).Get() }

func TestPipelineBatches(t *testing.T) {
	p := usage.New(usage.Options{})
	defer p.Close(time.Second)
	s := &testSink{}
	sp := spec("a", "test", "1", 10, s)
	// A flush interval far above the time 25 emits take, even on a loaded
	// machine: the first 20 records can only leave as two full batches.
	sp.Config.FlushInterval = time.Second
	p.SetSinks([]usage.SinkSpec{sp})
	for i := 1; i <= 25; i++ {
		p.Emit(rec(i))
	}
	s.waitCount(t, 25) // two full batches, then the flush interval sends 5
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.accepted) != 3 || len(s.accepted[0]) != 10 || len(s.accepted[2]) != 5 {
		t.Fatalf("batches of %d, %d, ...: %d batches", len(s.accepted[0]), len(s.accepted[len(s.accepted)-1]), len(s.accepted))
	}
	seen := map[int]bool{}
	for _, b := range s.accepted {
		for _, r := range b {
			if seen[r.Attempt] {
				t.Fatalf("event %d delivered twice", r.Attempt)
			}
			seen[r.Attempt] = true
		}
	}
}

func TestPipelineRetryThenDeliver(t *testing.T) {
	clock := newFakeClock()
	p := usage.New(usage.Options{Clock: clock})
	defer p.Close(time.Second)
	s := &testSink{fail: func(try int) error {
		switch try {
		case 1, 2, 3:
			return &usage.SendError{Status: 503, Msg: "down"}
		case 4:
			return &usage.SendError{Status: 429, RetryAfter: 7 * time.Second}
		case 5:
			return context.DeadlineExceeded // no response
		}
		return nil
	}}
	p.SetSinks([]usage.SinkSpec{spec("a", "test", "1", 3, s)})
	for i := 1; i <= 3; i++ {
		p.Emit(rec(i))
	}
	s.waitCount(t, 3)
	want := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 7 * time.Second, 3200 * time.Millisecond}
	got := clock.Waits()
	if len(got) != len(want) {
		t.Fatalf("waits %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits %v; want %v", got, want)
		}
	}
	for _, id := range s.ids {
		if id != s.ids[0] {
			t.Fatalf("resend changed the batch ID: %v", s.ids)
		}
	}
	st := p.Status()
	if len(st) != 1 || st[0].FailedBatches != 5 || st[0].SentEvents != 3 || st[0].LastError == "" || st[0].LastFailureUnix == 0 {
		t.Fatalf("status %+v", st)
	}
}

func TestPipelineRetryBudget(t *testing.T) {
	clock := newFakeClock()
	p := usage.New(usage.Options{Clock: clock})
	defer p.Close(time.Second)
	s := &testSink{fail: func(int) error { return &usage.SendError{Status: 500} }}
	p.SetSinks([]usage.SinkSpec{spec("a", "test", "1", 4, s)})
	before := counter(`gw_usage_event_drops_total{reason="retry_budget_exhausted"}`)
	for i := 1; i <= 4; i++ {
		p.Emit(rec(i))
	}
	waitDrops(t, `gw_usage_event_drops_total{reason="retry_budget_exhausted"}`, before+4)
	var total time.Duration
	for _, w := range clock.Waits() {
		if w > usage.BackoffMax {
			t.Fatalf("wait %v over the backoff cap", w)
		}
		total += w
	}
	if total != usage.ExporterRetryBudget {
		t.Fatalf("retried for %v; want %v", total, usage.ExporterRetryBudget)
	}
}

func TestPipelinePermanentError(t *testing.T) {
	p := usage.New(usage.Options{})
	defer p.Close(time.Second)
	s := &testSink{fail: func(int) error { return usage.CheckResponse(400, http.Header{}, []byte(`{"error":"bad"}`)) }}
	p.SetSinks([]usage.SinkSpec{spec("o", "otlp_http", "1", 2, s)})
	sf, perm := counter(`gw_usage_event_drops_total{reason="send_failed"}`), counter(`gw_otlp_fanout_drops_total{reason="permanent_error"}`)
	p.Emit(rec(1))
	p.Emit(rec(2))
	waitDrops(t, `gw_usage_event_drops_total{reason="send_failed"}`, sf+2)
	if got := counter(`gw_otlp_fanout_drops_total{reason="permanent_error"}`); got != perm+2 {
		t.Fatalf("permanent_error drops %d; want %d", got, perm+2)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sends != 1 {
		t.Fatalf("a permanent error was retried: %d sends", s.sends)
	}
	if st := p.Status(); st[0].LastError != `status 400: {"error":"bad"}` {
		t.Fatalf("last_error %q", st[0].LastError)
	}
}

func TestPipelineQueueFull(t *testing.T) {
	p := usage.New(usage.Options{QueueSize: 8})
	defer p.Close(time.Second)
	release := p.Stall()
	before := counter(`gw_usage_event_drops_total{reason="queue_full"}`)
	for i := 0; i < 20; i++ {
		p.Emit(rec(i))
	}
	release()
	if got := counter(`gw_usage_event_drops_total{reason="queue_full"}`); got != before+12 {
		t.Fatalf("queue_full drops %d; want %d", got-before, 12)
	}
}

func TestPipelineSinkFull(t *testing.T) {
	p := usage.New(usage.Options{})
	s := &testSink{block: make(chan struct{})}
	p.SetSinks([]usage.SinkSpec{spec("slow", "test", "1", 1, s)})
	before := counter(`gw_usage_event_drops_total{reason="sink_full"}`)
	// One event is held by the blocked send; the sink queue takes 8192;
	// the rest is dropped.
	const n = usage.SinkQueueSize + 100
	// The first event is taken into the blocked batch before the others
	// arrive: a sink's queue counts records not yet in a batch, so an
	// event still queued when the queue fills would be one drop more.
	p.Emit(rec(0))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		taken := len(s.pending)
		s.mu.Unlock()
		if taken == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first event never reached the sink")
		}
	}
	for i := 1; i < n; i++ {
		p.Emit(rec(i))
		if i%1000 == 0 {
			time.Sleep(time.Millisecond) // let the dispatcher keep up with the main queue
		}
	}
	waitDrops(t, `gw_usage_event_drops_total{reason="sink_full"}`, before+99)
	close(s.block)
	p.Close(10 * time.Second)
	if got := counter(`gw_usage_event_drops_total{reason="sink_full"}`) - before; got != 99 {
		t.Fatalf("sink_full drops %d; want 99", got)
	}
	if s.count() != usage.SinkQueueSize+1 {
		t.Fatalf("delivered %d; want %d", s.count(), usage.SinkQueueSize+1)
	}
}

func TestPipelineShutdown(t *testing.T) {
	t.Run("flushes", func(t *testing.T) {
		p := usage.New(usage.Options{})
		s := &testSink{}
		sp := spec("a", "test", "1", 100, s)
		sp.Config.FlushInterval = time.Hour // only Close sends the partial batch
		p.SetSinks([]usage.SinkSpec{sp})
		for i := 0; i < 250; i++ {
			p.Emit(rec(i))
		}
		p.Close(5 * time.Second)
		if s.count() != 250 {
			t.Fatalf("flushed %d; want 250", s.count())
		}
	})
	t.Run("bounded", func(t *testing.T) {
		p := usage.New(usage.Options{})
		s := &testSink{fail: func(int) error { return &usage.SendError{Status: 503} }}
		p.SetSinks([]usage.SinkSpec{spec("a", "test", "1", 10, s)})
		before := counter(`gw_usage_event_drops_total{reason="retry_budget_exhausted"}`)
		for i := 0; i < 30; i++ {
			p.Emit(rec(i))
		}
		start := time.Now()
		p.Close(300 * time.Millisecond)
		if el := time.Since(start); el > 3*time.Second {
			t.Fatalf("Close took %v with a 300ms grace", el)
		}
		if got := counter(`gw_usage_event_drops_total{reason="retry_budget_exhausted"}`) - before; got != 30 {
			t.Fatalf("dropped %d at shutdown; want 30", got)
		}
		p.Emit(rec(1)) // after Close: counted, never blocks or panics
	})
}

func TestPipelineReload(t *testing.T) {
	p := usage.New(usage.Options{})
	defer p.Close(time.Second)
	a1, b := &testSink{}, &testSink{}
	builds := 0
	counted := func(sp usage.SinkSpec) usage.SinkSpec {
		build := sp.Build
		sp.Build = func() (usage.Sink, error) { builds++; return build() }
		return sp
	}
	p.SetSinks([]usage.SinkSpec{counted(spec("a", "test", "v1", 1000, a1)), counted(spec("b", "test", "v1", 1000, b))})
	if builds != 2 {
		t.Fatalf("builds %d", builds)
	}
	for i := 0; i < 5; i++ {
		p.Emit(rec(i))
	}
	// Unchanged a: kept (no build). Changed settings: a new sink from the
	// next batch on. Removed b: its 5 queued events are still delivered.
	a2 := &testSink{}
	p.SetSinks([]usage.SinkSpec{counted(spec("a", "test", "v1", 1000, a1))})
	if builds != 2 {
		t.Fatalf("an unchanged sink was rebuilt")
	}
	b.waitCount(t, 5)
	a1.waitCount(t, 5)
	p.SetSinks([]usage.SinkSpec{counted(spec("a", "test", "v2", 1000, a2))})
	for i := 0; i < 3; i++ {
		p.Emit(rec(i))
	}
	a2.waitCount(t, 3)
	if a1.count() != 5 || b.count() != 5 {
		t.Fatalf("after reload: a1 %d, b %d", a1.count(), b.count())
	}
	if st := p.Status(); len(st) != 1 || st[0].Name != "a" {
		t.Fatalf("status %+v", st)
	}
}

func TestNextWait(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cp := usage.RetryPolicy{MaxAge: 30 * time.Minute, MaxResponseFailures: 8}
	f := func(pol usage.RetryPolicy, backoff, ra time.Duration, start, oldest time.Time, fails int, now time.Time, want time.Duration, give bool) {
		t.Helper()
		w, g := usage.NextWait(pol, backoff, ra, start, oldest, fails, now)
		if w != want || g != give {
			t.Fatalf("got (%v, %v); want (%v, %v)", w, g, want, give)
		}
	}
	f(usage.ExporterPolicy, time.Second, 0, t0, t0, 1, t0.Add(time.Minute), time.Second, false)
	f(usage.ExporterPolicy, time.Second, 20*time.Second, t0, t0, 1, t0, 20*time.Second, false)         // Retry-After wins
	f(usage.ExporterPolicy, time.Second, time.Hour, t0, t0, 1, t0, usage.RetryAfterMax, false)         // capped
	f(usage.ExporterPolicy, 30*time.Second, 0, t0, t0, 1, t0.Add(299*time.Second), time.Second, false) // last try at the budget's end
	f(usage.ExporterPolicy, time.Second, 0, t0, t0, 1, t0.Add(5*time.Minute), 0, true)                 // budget spent
	f(cp, time.Second, 0, t0, t0, 7, t0.Add(time.Minute), time.Second, false)                          // 7 failures: go on
	f(cp, time.Second, 0, t0, t0, 8, t0.Add(time.Minute), 0, true)                                     // 8th failure with a response
	f(cp, 30*time.Second, 0, t0.Add(29*time.Minute), t0, 1, t0.Add(29*time.Minute+50*time.Second), 10*time.Second, false)
	f(cp, time.Second, 0, t0.Add(29*time.Minute), t0, 1, t0.Add(30*time.Minute), 0, true) // oldest event 30 minutes old
	f(cp, time.Second, 0, t0, t0, 0, t0.Add(20*time.Minute), time.Second, false)          // no budget: the age rule alone
}

func waitDrops(t *testing.T, name string, want uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if counter(name) >= want {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("%s = %d; want %d", name, counter(name), want)
}

func TestSpendMetrics(t *testing.T) {
	const tokens, cost = `gw_usage_tokens_total{model="m\"x",api_key="spend-key",type="prompt"}`, `gw_usage_cost_usd_total{model="m\"x",api_key="spend-key"}`
	tok0, cost0 := counter(tokens), metrics.GetOrCreateFloatCounter(cost).Get()
	p := usage.New(usage.Options{})
	r := rec(1)
	r.Model, r.APIKeyName, r.PromptTokens, r.CompletionTokens, r.CostUSD = `m"x`, "spend-key", 10, 20, 0.25
	p.Emit(r)
	p.Emit(r)
	p.Close(time.Second)
	if got := counter(tokens) - tok0; got != 20 {
		t.Fatalf("prompt tokens %d; want 20", got)
	}
	if got := metrics.GetOrCreateFloatCounter(cost).Get() - cost0; got != 0.5 {
		t.Fatalf("cost %v; want 0.5", got)
	}
}

// TestPipelineIdleWake: after the dispatcher switched from polling to a
// blocking wait (idle), the next events are still delivered at once.
func TestPipelineIdleWake(t *testing.T) {
	p := usage.New(usage.Options{})
	defer p.Close(time.Second)
	s := &testSink{}
	p.SetSinks([]usage.SinkSpec{spec("a", "test", "1", 1, s)})
	for round := 1; round <= 3; round++ {
		time.Sleep(250 * time.Millisecond) // > 50 empty polls
		for i := 0; i < 4; i++ {
			p.Emit(rec(i))
		}
		s.waitCount(t, 4*round)
	}
}

// TestEmittedCounters: gw_usage_events_emitted_total counts every queued
// record by status (below 400 ok, else error); a record refused by a full
// queue is a drop, not an emission.
func TestEmittedCounters(t *testing.T) {
	p := usage.New(usage.Options{QueueSize: 4})
	defer p.Close(time.Second)
	release := p.Stall()
	ok0, err0 := counter(`gw_usage_events_emitted_total{status="ok"}`), counter(`gw_usage_events_emitted_total{status="error"}`)
	for i, status := range []int{200, 399, 400, 502, 200, 500} { // the last two find the queue full
		r := rec(i)
		r.StatusCode = status
		p.Emit(r)
	}
	release()
	if ok, bad := counter(`gw_usage_events_emitted_total{status="ok"}`)-ok0, counter(`gw_usage_events_emitted_total{status="error"}`)-err0; ok != 2 || bad != 2 {
		t.Fatalf("emitted ok %d, error %d; want 2 and 2", ok, bad)
	}
}

// TestFieldTruncation: an over-long operation (or protocol, or cache
// status) is cut to MaxClassLen bytes on a rune boundary before any sink
// sees it, and gw_usage_fields_truncated_total counts it.
func TestFieldTruncation(t *testing.T) {
	p := usage.New(usage.Options{})
	defer p.Close(time.Second)
	s := &testSink{}
	if errs := p.SetSinks([]usage.SinkSpec{spec("a", "test", "1", 2, s)}); len(errs) > 0 {
		t.Fatal(errs)
	}
	before := counter(`gw_usage_fields_truncated_total`)
	long, short := rec(1), rec(2)
	long.Operation = "x" + strings.Repeat("é", usage.MaxClassLen) // a 2-byte rune straddles the limit
	short.Operation = "chat.completions"
	p.Emit(long)
	p.Emit(short)
	s.waitCount(t, 2)
	s.mu.Lock()
	got := []string{s.accepted[0][0].Operation, s.accepted[0][1].Operation}
	s.mu.Unlock()
	if want := "x" + strings.Repeat("é", (usage.MaxClassLen-1)/2); got[0] != want || !utf8.ValidString(got[0]) {
		t.Fatalf("truncated operation %q (%d bytes); want %d bytes ending on a whole rune", got[0], len(got[0]), len(want))
	}
	if got[1] != "chat.completions" {
		t.Fatalf("short operation changed: %q", got[1])
	}
	if n := counter(`gw_usage_fields_truncated_total`) - before; n != 1 {
		t.Fatalf("truncations counted %d; want 1", n)
	}
}
