package usage

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// Backoff bounds (spec "Limits").
const (
	BackoffMin    = 200 * time.Millisecond
	BackoffMax    = 30 * time.Second
	RetryAfterMax = 30 * time.Second
	// ExporterRetryBudget is how long an exporter retries one batch.
	ExporterRetryBudget = 5 * time.Minute
)

// RetryPolicy decides when a failing batch is given up. Zero fields do not
// apply.
type RetryPolicy struct {
	Budget              time.Duration // since the batch's first send
	MaxAge              time.Duration // since the batch's oldest event
	MaxResponseFailures int           // consecutive failures that had a response
	BackoffMin          time.Duration // default BackoffMin
	BackoffMax          time.Duration // default BackoffMax
}

// ExporterPolicy is the exporters' rule: retry a batch for 5 minutes.
var ExporterPolicy = RetryPolicy{Budget: ExporterRetryBudget}

// SendError is a failed send. Status 0 means no response arrived.
type SendError struct {
	Status     int
	RetryAfter time.Duration // from the response, already capped
	Permanent  bool          // resending cannot succeed: drop the batch now
	Rejected   int           // events the receiver refused (gw_usage_events_rejected_total)
	Msg        string        // short, secret-free description for /status/exporters
}

func (e *SendError) Error() string {
	if e.Status == 0 {
		return e.Msg
	}
	if e.Msg == "" {
		return "status " + strconv.Itoa(e.Status)
	}
	return "status " + strconv.Itoa(e.Status) + ": " + e.Msg
}

// worker runs one sink: its queue, batching and retries.
//
// The dispatcher hands records over in chunks instead of one channel send
// per record: a send and a receive per record per sink cost more than the
// rest of the fan-out, and each wake-up of a parked worker costs the
// scheduler more than that. A chunk is handed over when it holds a
// batch's worth (up to chunkCap records) or its first record is
// handOffHold old, not at every 2 ms drain: at moderate load that is one
// worker wake-up per batch instead of one per drain.
//
// Chunks have one size (chunkCap records) and go round between the
// dispatcher and the worker through free: a drain bigger than a chunk
// fills several, so a loaded dispatcher allocates nothing (a chunk sized
// for each drain's backlog was a new multi-hundred-KB object, zeroed,
// scanned and freed by the GC, every few drains). queued counts the
// records handed over and not yet taken into a batch, held those still in
// the dispatcher's chunk; the per-sink bound (SinkQueueSize) covers both,
// the same as a channel of records.
type worker struct {
	name   string
	ch     chan []Record // chunks of records; never more chunks than queued records
	free   chan []Record // emptied chunks back to the dispatcher (see trimFree)
	queued atomic.Int64  // records in ch (or in the chunk being taken apart)
	held   atomic.Int64  // len(pend) after the last drain (for status)
	pend   []Record      // the dispatcher's chunk, not yet handed over
	since  time.Time     // when pend got its first record
	p      *Pipeline
	cfg    atomic.Pointer[SinkConfig]
	sink   atomic.Pointer[sinkBox]
	quit   chan time.Time // shutdown (deadline) or retirement (zero time)
	hard   context.Context
	kill   context.CancelFunc
	exit   chan struct{}
	stats  sinkStats
	buf    []byte

	// freeLow is the fewest chunks free held after add took one since
	// trimmed: chunks the dispatcher did not need (see trimFree).
	freeLow int
	trimmed time.Time
	// stale is how many records of a previous round pend's array holds:
	// a pooled chunk comes back uncleared (clearing every record cost
	// more than copying it), the dispatcher overwrites them as it fills
	// the chunk and clears those left over when it hands the chunk on, so
	// no old record keeps its strings alive past a trim (pooled chunks) or
	// a hand-off (the chunk's tail).
	stale int
}

type sinkBox struct{ s Sink }

type sinkStats struct {
	sentBatches, sentEvents, failedBatches, dropped atomic.Int64
	lastFailure, lastSuccess                        atomic.Int64
	mu                                              sync.Mutex
	lastError                                       string
}

func (p *Pipeline) startWorker(cfg SinkConfig, s Sink) *worker {
	w := &worker{name: cfg.Name, ch: make(chan []Record, SinkQueueSize), free: make(chan []Record, maxFreeChunks), p: p,
		quit: make(chan time.Time, 1), exit: make(chan struct{})}
	w.hard, w.kill = context.WithCancel(context.Background())
	w.swap(cfg, s)
	go w.run()
	return w
}

// swap installs new settings; the batch being sent keeps the old ones.
func (w *worker) swap(cfg SinkConfig, s Sink) {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 1
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = time.Second
	}
	w.cfg.Store(&cfg)
	w.sink.Store(&sinkBox{s})
}

// retire delivers what is queued (under the normal retry rules), then exits.
func (w *worker) retire() { w.quit <- time.Time{} }

// shutdown delivers what it can before deadline and drops the rest.
func (w *worker) shutdown(deadline time.Time) {
	w.quit <- deadline
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-w.exit:
	case <-t.C:
		w.kill() // abort the send in flight; run counts what is left
		<-w.exit
	}
}

// finish waits for a retired worker until deadline, then aborts it.
func (w *worker) finish(deadline time.Time) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-w.exit:
	case <-t.C:
		w.kill()
		<-w.exit
	}
}

func (w *worker) run() {
	defer close(w.exit)
	cfg := w.cfg.Load()
	var open openBatch
	var timer *time.Timer
	var timerC <-chan time.Time
	flush := func() {
		if timer != nil {
			timer.Stop()
			timer, timerC = nil, nil
		}
		if open.n > 0 {
			w.deliver(&open)
			open.reset()
		}
	}
	recycle := func(chunk []Record) {
		if w.p.parked.Load() {
			return // the pipeline is idle: the GC takes the chunk
		}
		// Not cleared: the dispatcher overwrites the records it reuses
		// and clears the rest (see stale).
		select {
		case w.free <- chunk:
		default:
		}
	}
	// take encodes a chunk's records into the open batch. A record leaves
	// queued when it joins the batch, before a full batch is delivered, so
	// the queue bound counts exactly what waits behind the batch in flight.
	take := func(chunk []Record, timed bool) {
		cfg = w.cfg.Load()
		taken := 0
		for i := range chunk {
			open.add(w, &chunk[i])
			taken++
			if open.n >= cfg.BatchSize {
				w.queued.Add(-int64(taken))
				taken = 0
				if i == len(chunk)-1 {
					// The chunk is used up: back to the dispatcher before
					// the send, which may take a while, so that it need not
					// allocate a new one meanwhile.
					recycle(chunk)
					chunk = nil
				}
				flush()
				cfg = w.cfg.Load()
			} else if timed && timer == nil {
				timer = time.NewTimer(cfg.FlushInterval)
				timerC = timer.C
			}
		}
		w.queued.Add(-int64(taken))
		if chunk != nil {
			recycle(chunk)
		}
	}
	for {
		select {
		case chunk := <-w.ch:
			take(chunk, true)
		case <-timerC:
			timer, timerC = nil, nil
			flush()
		case <-w.quit:
			// Deliver the rest in full batches. After a hard stop (the
			// shutdown grace ran out) deliver drops instead of sending.
			for {
				select {
				case chunk := <-w.ch:
					take(chunk, false)
					continue
				default:
				}
				break
			}
			flush()
			return
		}
	}
}

// openBatch is the batch a worker is filling: its records encoded so far
// by the sink that was current at its first record, which also encodes
// the rest and sends it (a reloaded sink takes over at the next batch).
type openBatch struct {
	sink           Sink
	body           []byte
	n              int
	oldest, newest time.Time
}

func (b *openBatch) add(w *worker, r *Record) {
	if b.n == 0 {
		b.sink = w.sink.Load().s
		b.oldest, b.newest = r.OccurredAt, r.OccurredAt
	} else if c := r.OccurredAt.Compare(b.newest); c > 0 {
		// Records come mostly in time order: one comparison for a record
		// as new as the newest or newer.
		b.newest = r.OccurredAt
	} else if c < 0 && r.OccurredAt.Before(b.oldest) {
		b.oldest = r.OccurredAt
	}
	b.body = b.sink.AppendRecord(b.body, r)
	b.n++
}

func (b *openBatch) reset() {
	b.sink, b.body, b.n = nil, b.body[:0], 0
	// A burst's big body is let go once batches are small again.
	if cap(b.body) > maxKeptBody {
		b.body = nil
	}
}

// maxKeptBody bounds the encoded-batch buffer a worker keeps between
// batches.
const maxKeptBody = 4 << 20

// add appends a copy of r to the dispatcher's chunk for this sink, or
// counts a sink_full drop when the sink's queue is full. Dispatcher only.
func (w *worker) add(r *Record) {
	if w.queued.Load()+int64(len(w.pend)) >= SinkQueueSize {
		dropSinkFull.Inc()
		w.stats.dropped.Add(1)
		return
	}
	if len(w.pend) == cap(w.pend) && w.pend != nil {
		// A full chunk goes now: appending would copy every record again.
		w.queued.Add(int64(len(w.pend)))
		w.send()
	}
	if w.pend == nil {
		w.since = time.Now()
		select {
		case c := <-w.free:
			w.pend, w.stale = c[:0], len(c)
			w.freeLow = min(w.freeLow, len(w.free))
		default:
			w.pend = make([]Record, 0, chunkCap)
			w.freeLow = 0
		}
	}
	// Not append(w.pend, *r): that copies *r to the stack first, then
	// into the chunk (pend has room: a full chunk went above).
	n := len(w.pend)
	w.pend = w.pend[:n+1]
	w.pend[n] = *r
}

// chunkCap is a chunk's capacity: a 2 ms drain at 128k records/s (about
// 150 KB). maxFreeChunks is enough chunks to hold a full sink queue, so
// a sink's backlog, however big, recycles its chunks instead of
// allocating; trimFree lets go of those a steady load no longer needs.
const (
	chunkCap      = 256
	maxFreeChunks = SinkQueueSize/chunkCap + 2
)

// trimEvery is how often the dispatcher lets go of the pooled chunks
// that no drain since the last trim needed.
const trimEvery = time.Second

// trimFree drops the chunks free held throughout the last trimEvery
// (the fewest it held when add took a chunk): a burst's chunks go once
// the load is steady again. A parked dispatcher lets all of them go (see
// dispatch). Dispatcher only.
func (w *worker) trimFree(now time.Time) {
	if now.Sub(w.trimmed) < trimEvery {
		return
	}
	for ; w.freeLow > 0; w.freeLow-- {
		select {
		case <-w.free:
		default:
		}
	}
	w.trimmed, w.freeLow = now, len(w.free)
}

// dropFree lets go of every pooled chunk. Dispatcher only.
func (w *worker) dropFree() {
	for {
		select {
		case <-w.free:
		default:
			w.freeLow = 0
			return
		}
	}
}

// handOffHold is how long a chunk may wait at the dispatcher for more
// records (at most a fifth of the sink's flush interval).
const handOffHold = 20 * time.Millisecond

// handOff sends the chunk to the worker when force is set, when it holds
// a batch's worth of records (up to chunkCap), or when its first record
// waited handOffHold. Dispatcher only.
func (w *worker) handOff(now time.Time, force bool) {
	w.trimFree(now)
	n := len(w.pend)
	if n == 0 {
		w.held.Store(0)
		return
	}
	if !force {
		cfg := w.cfg.Load()
		if n < min(cfg.BatchSize, chunkCap) && now.Sub(w.since) < min(handOffHold, cfg.FlushInterval/5) {
			w.held.Store(int64(n))
			return
		}
	}
	w.queued.Add(int64(n))
	w.held.Store(0)
	w.send()
}

// send puts pend, already counted in queued, on the worker's channel.
func (w *worker) send() {
	n := len(w.pend)
	if n < w.stale {
		clear(w.pend[n:w.stale])
	}
	w.stale = 0
	select {
	case w.ch <- w.pend:
	default:
		// Unreachable: ch holds SinkQueueSize chunks of at least one
		// record and queued stays at most SinkQueueSize. Counted, not
		// lost silently, should that ever change.
		w.queued.Add(-int64(n))
		dropSinkFull.Add(n)
		w.stats.dropped.Add(int64(n))
		clear(w.pend)
	}
	w.pend = nil
}

// deliver finishes the open batch and sends it until it is accepted or
// the retry policy gives it up.
func (w *worker) deliver(open *openBatch) {
	cfg := w.cfg.Load()
	n := open.n
	if w.hard.Err() != nil {
		w.drop(n, DropRetryExhausted)
		return
	}
	payload, err := open.sink.Finish(w.buf[:0], open.body, n)
	if err != nil {
		w.fail(&SendError{Msg: "cannot encode batch: " + err.Error()})
		w.drop(n, DropSendFailed)
		return
	}
	switch {
	case len(payload) > 0 && len(open.body) > 0 && &payload[0] == &open.body[0]:
		// The payload is the body itself (NDJSON): w.buf stays apart.
	case cap(payload) > maxKeptBody:
		w.buf = nil
	default:
		w.buf = payload[:0]
	}
	b := &Batch{ID: uuid.NewString(), Payload: payload, Count: n, Oldest: open.oldest, Newest: open.newest}
	sink := open.sink
	pol := cfg.Retry
	backoff := pol.BackoffMin
	if backoff <= 0 {
		backoff = BackoffMin
	}
	maxBackoff := pol.BackoffMax
	if maxBackoff <= 0 {
		maxBackoff = BackoffMax
	}
	clock := w.p.clock
	start := clock.Now()
	respFails := 0
	for {
		err := sink.Send(w.hard, b)
		if err == nil {
			w.stats.sentBatches.Add(1)
			w.stats.sentEvents.Add(int64(n))
			w.stats.lastSuccess.Store(time.Now().Unix())
			return
		}
		var se *SendError
		if !errors.As(err, &se) {
			se = &SendError{Msg: err.Error()}
		}
		w.fail(se)
		if se.Rejected > 0 {
			rejectedTotal.Add(se.Rejected)
		}
		if se.Permanent {
			if cfg.Kind == "otlp_http" {
				otlpPermanent.Add(n)
			}
			w.drop(n, DropSendFailed)
			return
		}
		if w.hard.Err() != nil {
			w.drop(n, DropRetryExhausted)
			return
		}
		if se.Status != 0 {
			respFails++
		}
		wait, give := nextWait(pol, backoff, se.RetryAfter, start, b.Oldest, respFails, clock.Now())
		if give {
			w.drop(n, DropRetryExhausted)
			return
		}
		select {
		case <-clock.After(wait):
		case <-w.hard.Done():
			w.drop(n, DropRetryExhausted)
			return
		}
		if backoff *= 2; backoff > maxBackoff {
			backoff = maxBackoff
		}
	}
}

// nextWait applies the retry policy after a failure at now: how long to
// wait before the next send, or give up. The wait is the backoff, or the
// receiver's Retry-After (capped at RetryAfterMax) when it gave one, cut
// so the last try still falls inside the budget and age limits.
func nextWait(pol RetryPolicy, backoff, retryAfter time.Duration, start, oldest time.Time, respFails int, now time.Time) (time.Duration, bool) {
	if pol.MaxResponseFailures > 0 && respFails >= pol.MaxResponseFailures {
		return 0, true
	}
	wait := backoff
	if retryAfter > 0 {
		wait = min(retryAfter, RetryAfterMax)
	}
	for _, limit := range []struct {
		on  bool
		end time.Time
	}{{pol.Budget > 0, start.Add(pol.Budget)}, {pol.MaxAge > 0, oldest.Add(pol.MaxAge)}} {
		if !limit.on {
			continue
		}
		left := limit.end.Sub(now)
		if left <= 0 {
			return 0, true
		}
		wait = min(wait, left)
	}
	return wait, false
}

func (w *worker) fail(se *SendError) {
	w.stats.failedBatches.Add(1)
	w.stats.lastFailure.Store(time.Now().Unix())
	w.stats.mu.Lock()
	w.stats.lastError = se.Error()
	w.stats.mu.Unlock()
}

func (w *worker) drop(n int, reason string) {
	dropCounter(reason).Add(n)
	w.stats.dropped.Add(int64(n))
	w.p.log.Warn("usage batch dropped", "sink", w.name, "events", n, "reason", reason)
}

func (w *worker) status() SinkStatus {
	cfg := w.cfg.Load()
	w.stats.mu.Lock()
	last := w.stats.lastError
	w.stats.mu.Unlock()
	return SinkStatus{
		Name: w.name, Kind: cfg.Kind, Queued: int(w.queued.Load() + w.held.Load()),
		SentBatches: w.stats.sentBatches.Load(), SentEvents: w.stats.sentEvents.Load(),
		FailedBatches: w.stats.failedBatches.Load(), DroppedEvents: w.stats.dropped.Load(),
		LastError: last, LastFailureUnix: w.stats.lastFailure.Load(), LastSuccessUnix: w.stats.lastSuccess.Load(),
	}
}
