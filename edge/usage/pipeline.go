package usage

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// Queue sizes (spec "Limits").
const (
	// QueueSize is the ring between the proxy and the dispatcher (spec
	// "Limits": 16384). An idle gw holds none of it (ring.go allocates
	// its slots a block at a time, on the first lap); under load its
	// 9.4 MB are, about what the per-sink queues saved when they began
	// holding chunks (4.7 MB each).
	QueueSize     = 16384
	SinkQueueSize = 8192 // per sink
)

// dispatchEvery is how often the dispatcher moves queued events to the
// sinks' queues.
const dispatchEvery = 2 * time.Millisecond

// idleTicks empty polls (100 ms) switch the dispatcher to a blocking wait.
const idleTicks = 50

// Drop reasons of gw_usage_event_drops_total.
const (
	DropSendFailed     = "send_failed"            // a receiver refused a batch for good (permanent error)
	DropRetryExhausted = "retry_budget_exhausted" // retries (or the shutdown grace) ran out
	DropQueueFull      = "queue_full"             // the proxy → dispatcher queue was full
	DropSinkFull       = "sink_full"              // one sink's queue was full
)

var (
	dropSendFailed   = metrics.NewCounter(`gw_usage_event_drops_total{reason="send_failed"}`)
	dropRetry        = metrics.NewCounter(`gw_usage_event_drops_total{reason="retry_budget_exhausted"}`)
	dropQueueFull    = metrics.NewCounter(`gw_usage_event_drops_total{reason="queue_full"}`)
	dropSinkFull     = metrics.NewCounter(`gw_usage_event_drops_total{reason="sink_full"}`)
	emittedOK        = metrics.NewCounter(`gw_usage_events_emitted_total{status="ok"}`)
	emittedErr       = metrics.NewCounter(`gw_usage_events_emitted_total{status="error"}`)
	rejectedTotal    = metrics.NewCounter(`gw_usage_events_rejected_total`)
	otlpPermanent    = metrics.NewCounter(`gw_otlp_fanout_drops_total{reason="permanent_error"}`)
	truncationsTotal = metrics.NewCounter(`gw_usage_fields_truncated_total`)
)

func dropCounter(reason string) *metrics.Counter {
	switch reason {
	case DropSendFailed:
		return dropSendFailed
	case DropQueueFull:
		return dropQueueFull
	case DropSinkFull:
		return dropSinkFull
	}
	return dropRetry
}

// Clock is time as the retry rules see it; tests inject one.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Sink is one destination of batches: an exporter or the control plane.
// Its methods run on the sink's own goroutine, one batch at a time.
//
// A batch is encoded record by record as the records reach the sink's
// goroutine, not when it is full: a record is read while it is still in
// the CPU's caches (copying records into a batch and encoding them later
// read each one cold, which cost more than encoding it), and a batch that
// is retried for minutes holds its payload only, not the records and the
// configuration strings they point at.
type Sink interface {
	// AppendRecord appends the encoding of r to body, the batch's records
	// so far (empty for its first record).
	AppendRecord(body []byte, r *Record) []byte
	// Finish appends to dst the payload of the batch whose n records body
	// holds (framing, compression). When dst is empty it may return body
	// itself, or write past body's end.
	Finish(dst, body []byte, n int) ([]byte, error)
	// Send delivers one encoded batch. A *SendError says how it failed;
	// any other error is a retryable failure without a response.
	Send(ctx context.Context, b *Batch) error
}

// Encoder encodes whole batches with one sink, as its goroutine does
// (tests, benchmarks, tools); it reuses its scratch between calls.
type Encoder struct {
	Sink Sink
	body []byte
}

// Encode appends the payload of recs to dst.
func (e *Encoder) Encode(dst []byte, recs []Record) ([]byte, error) {
	body := e.body[:0]
	for i := range recs {
		body = e.Sink.AppendRecord(body, &recs[i])
	}
	e.body = body
	return e.Sink.Finish(dst, body, len(recs))
}

// Batch is one encoded batch; a resend carries the same ID and payload.
type Batch struct {
	ID      string // UUIDv4
	Payload []byte
	Count   int
	Oldest  time.Time // earliest occurred_at
	Newest  time.Time // latest occurred_at
}

// SinkConfig is one sink's identity, batching and retry rules.
type SinkConfig struct {
	Name          string // unique among sinks (exporter name, or "control_plane")
	Kind          string // exporter kind or "control_plane"
	BatchSize     int
	FlushInterval time.Duration
	Retry         RetryPolicy
	// Fingerprint identifies the settings the sink was built from; a reload
	// with the same fingerprint keeps the running sink.
	Fingerprint string
}

// Pipeline is the usage-event pipeline: Emit → queue → dispatcher →
// per-sink queues → batches. Create with New; Close flushes.
type Pipeline struct {
	in     *queue
	wake   chan struct{} // a producer's nudge to a parked dispatcher
	parked atomic.Bool   // the dispatcher waits on wake, not the clock
	ctl    chan func(map[string]*worker)
	stop   chan time.Time // deadline of the final flush
	done   chan struct{}
	closed atomic.Bool
	log    *slog.Logger
	clock  Clock

	mu       sync.Mutex
	workers  map[string]*worker // owned by the dispatcher; read under mu for status
	retired  []*worker          // removed by a reload, still delivering their queue
	lastWarn time.Time
	spend    spendMetrics // dispatcher goroutine only

	observer atomic.Pointer[func(*Record)] // nil: none (see Observe)
}

// Options tune a pipeline (tests shorten the backoff).
type Options struct {
	Logger    *slog.Logger
	Clock     Clock
	QueueSize int // default QueueSize
}

// New starts a pipeline with no sinks.
func New(opt Options) *Pipeline {
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Clock == nil {
		opt.Clock = realClock{}
	}
	if opt.QueueSize <= 0 {
		opt.QueueSize = QueueSize
	}
	p := &Pipeline{
		in: newQueue(opt.QueueSize), wake: make(chan struct{}, 1), ctl: make(chan func(map[string]*worker)), stop: make(chan time.Time),
		done: make(chan struct{}), log: opt.Logger, clock: opt.Clock, workers: map[string]*worker{}, spend: spendMetrics{},
	}
	go p.dispatch()
	return p
}

// Emit queues a copy of r without blocking; a full queue drops it and
// counts the drop. Safe for concurrent use; it does not allocate.
func (p *Pipeline) Emit(r *Record) {
	if s, ok := p.Claim(); ok {
		*s.Record = *r
		p.Publish(s)
	}
}

// Slot is a record's place in the queue, taken by Claim.
type Slot struct {
	Record *Record // zero when claimed; the producer fills it in place
	r      *ring
	s      *ringSlot
	pos    uint64
}

// Claim takes a zero record in the queue without blocking, for the caller
// to fill in place and hand over with Publish: a record is about 600
// bytes, and building it in the queue saves building it elsewhere and
// copying it (a third of an emission's cost). ok is false when the queue
// is full or shutting down; the drop is counted. The dispatcher reads the
// queue in order and waits at a claimed slot, so Publish must follow at
// once and always: defer it where filling the record could panic. Safe
// for concurrent use; it does not allocate.
func (p *Pipeline) Claim() (Slot, bool) {
	if p.closed.Load() {
		dropRetry.Inc() // after shutdown began: nothing will send it
		return Slot{}, false
	}
	r, s, pos, ok := p.in.claim()
	if !ok {
		dropQueueFull.Inc()
		return Slot{}, false
	}
	return Slot{Record: &s.rec, r: r, s: s, pos: pos}, true
}

// Publish hands a claimed record to the dispatcher.
func (p *Pipeline) Publish(s Slot) {
	status := s.Record.StatusCode // read before the dispatcher may clear it
	s.r.publish(s.s, s.pos)
	if status < 400 {
		emittedOK.Inc()
	} else {
		emittedErr.Inc()
	}
	// Only a parked dispatcher needs a wake-up; a polling one finds the
	// record on its next tick. publish precedes this load, and the
	// dispatcher sets parked before its last look at the ring, so one of
	// the two always sees the other.
	if p.parked.Load() {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// SinkSpec is a sink to run: its config and a constructor called only when
// the sink is new or its fingerprint changed.
type SinkSpec struct {
	Config SinkConfig
	Build  func() (Sink, error)
}

// SetSinks makes specs the running sink set. A sink whose name and
// fingerprint are unchanged keeps running untouched; a changed one gets its
// new settings from its next batch on; a removed one stops taking events,
// delivers what it already queued and exits. Errors of Build are returned
// per sink name; a failing sink keeps its previous settings if it had any.
func (p *Pipeline) SetSinks(specs []SinkSpec) map[string]error {
	errs := map[string]error{}
	built := make(map[string]Sink, len(specs))
	p.mu.Lock()
	for _, s := range specs {
		w := p.workers[s.Config.Name]
		if w != nil && w.cfg.Load().Fingerprint == s.Config.Fingerprint {
			continue
		}
		sk, err := s.Build()
		if err != nil {
			errs[s.Config.Name] = err
			continue
		}
		built[s.Config.Name] = sk
	}
	p.mu.Unlock()
	done := make(chan struct{})
	apply := func(ws map[string]*worker) {
		defer close(done)
		keep := make(map[string]bool, len(specs))
		for _, s := range specs {
			cfg := s.Config
			keep[cfg.Name] = true
			w := ws[cfg.Name]
			sk, ok := built[cfg.Name]
			switch {
			case w == nil && ok:
				ws[cfg.Name] = p.startWorker(cfg, sk)
			case w != nil && ok:
				w.swap(cfg, sk) // from the next batch on
			}
		}
		for name, w := range ws {
			if !keep[name] {
				delete(ws, name)
				p.retired = append(p.retired, w)
				w.retire()
			}
		}
	}
	select {
	case p.ctl <- apply:
		<-done
	case <-p.done:
	}
	return errs
}

// Close stops taking events and flushes: queued events are delivered until
// grace runs out; what is left then is dropped and counted
// (retry_budget_exhausted).
func (p *Pipeline) Close(grace time.Duration) {
	if p.closed.Swap(true) {
		<-p.done
		return
	}
	p.stop <- time.Now().Add(grace)
	<-p.done
}

// dispatch moves events from the main queue to every sink's queue.
func (p *Pipeline) dispatch() {
	defer close(p.done)
	var list []*worker
	relist := func() {
		list = list[:0]
		for _, w := range p.workers {
			list = append(list, w)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].name < list[j].name })
	}
	// While events flow the dispatcher polls the queue instead of blocking
	// on it: a sender then never has to wake a parked receiver (a futex
	// call on the request path), it only copies its record into the
	// ring. At 8192 slots per 2 ms the queue holds 4 M events/s before
	// it drops. After idleTicks empty polls it blocks instead, so an idle
	// gateway does not wake 500 times a second; the first event after a
	// pause pays one wake-up.
	tick := time.NewTicker(dispatchEvery)
	defer tick.Stop()
	idle := 0
	for {
		var wake chan struct{} // nil (never ready) while polling
		var tc <-chan time.Time = tick.C
		if idle >= idleTicks {
			if !p.parked.Swap(true) {
				// Idle: the pooled chunks go (workers stop pooling).
				for _, w := range list {
					w.dropFree()
				}
			}
			if p.in.peek() != nil { // published before parked was visible
				p.parked.Store(false)
				p.drainIn(list, false)
				idle = 0
				continue
			}
			wake, tc = p.wake, nil
		}
		select {
		case <-tc:
			// A parked dispatcher has no tick to hand held chunks over:
			// the last tick before parking gives them all.
			if p.drainIn(list, idle+1 >= idleTicks) == 0 {
				idle++
			} else {
				idle = 0
			}
		case <-wake:
			p.parked.Store(false)
			p.drainIn(list, false)
			idle = 0
		case f := <-p.ctl:
			// Events queued before the change go to the sinks of their time.
			p.drainIn(list, true)
			p.mu.Lock()
			f(p.workers)
			relist()
			p.mu.Unlock()
		case deadline := <-p.stop:
			p.drainIn(list, true)
			var wg sync.WaitGroup
			p.mu.Lock()
			for _, w := range p.workers {
				wg.Add(1)
				go func(w *worker) { defer wg.Done(); w.shutdown(deadline) }(w)
			}
			for _, w := range p.retired {
				wg.Add(1)
				go func(w *worker) { defer wg.Done(); w.finish(deadline) }(w)
			}
			p.mu.Unlock()
			wg.Wait()
			// Emits that raced with the closed flag.
			for p.in.peek() != nil {
				p.in.release()
				dropRetry.Inc()
			}
			return
		}
	}
}

// drainIn fans out what the main queue holds now and returns how many.
// Each sink's records gather in one chunk that is handed over when it is
// big enough or old enough (see worker.handOff), or now when force is set.
func (p *Pipeline) drainIn(list []*worker, force bool) int {
	n := 0
	for r := p.in.peek(); r != nil; r = p.in.peek() {
		p.fanout(r, list)
		p.in.release()
		n++
	}
	now := time.Now()
	for _, w := range list {
		w.handOff(now, force)
	}
	return n
}

// Observe hands every record to fn on the dispatcher goroutine, after
// normalisation and before the sinks get their copies; nil stops it. fn
// must be quick and must not keep r: it runs off the request path but
// delays every sink while it runs. The status page's traffic view uses it.
func (p *Pipeline) Observe(fn func(*Record)) {
	if fn == nil {
		p.observer.Store(nil)
		return
	}
	p.observer.Store(&fn)
}

func (p *Pipeline) fanout(r *Record, list []*worker) {
	p.normalize(r)
	p.spend.add(r)
	if fn := p.observer.Load(); fn != nil {
		(*fn)(r)
	}
	for _, w := range list {
		w.add(r)
	}
}

// normalize fills derived values and bounds the classification fields.
func (p *Pipeline) normalize(r *Record) {
	if r.ErrorMessage == "" && r.ErrorClass != "" {
		r.ErrorMessage = ClassMessage(r.ErrorClass)
	}
	if r.CacheStatus == "" {
		r.CacheStatus = CacheNone
	}
	p.bound("inbound_protocol", &r.InboundProtocol)
	p.bound("operation", &r.Operation)
	p.bound("cache_status", &r.CacheStatus)
}

func (p *Pipeline) bound(field string, v *string) {
	if len(*v) <= MaxClassLen {
		return
	}
	*v = truncateUTF8(*v, MaxClassLen)
	truncationsTotal.Inc()
	// One warning a minute at most: a misconfigured value repeats on
	// every request.
	if now := time.Now(); now.Sub(p.lastWarn) >= time.Minute {
		p.lastWarn = now
		p.log.Warn("usage event field truncated", "field", field, "max_bytes", MaxClassLen, "kept", *v)
	}
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n]
}

// SinkStatus is one sink's health, served at /status/exporters.
type SinkStatus struct {
	Name            string `json:"name"`
	Kind            string `json:"kind"`
	Queued          int    `json:"queued"`
	SentBatches     int64  `json:"sent_batches"`
	SentEvents      int64  `json:"sent_events"`
	FailedBatches   int64  `json:"failed_batches"`
	DroppedEvents   int64  `json:"dropped_events"`
	LastError       string `json:"last_error"`
	LastFailureUnix int64  `json:"last_failure_unix"`
	LastSuccessUnix int64  `json:"last_success_unix"`
}

// Flush makes the dispatcher hand everything the main queue holds to the
// sinks' queues now (and each sink its held chunk) instead of at its next
// poll, and returns when it has; sending stays with the sinks.
func (p *Pipeline) Flush() {
	select {
	case p.ctl <- func(map[string]*worker) {}:
	case <-p.done:
	}
}

// Status returns every running sink's health, by name.
func (p *Pipeline) Status() []SinkStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]SinkStatus, 0, len(p.workers))
	for _, w := range p.workers {
		out = append(out, w.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
