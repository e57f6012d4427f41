package load

import (
	"math/bits"
	"runtime"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry: 1 µs to 60 s at 3 significant digits, about 140 KB each.
const (
	histMin     = 1
	histMax     = int64(MaxLatency / time.Microsecond)
	histSigFigs = 3
)

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMin, histMax, histSigFigs)
}

// recordUS records d in µs, clamped to [0, histMax]. Values out of range cannot fail.
func recordUS(h *hdrhistogram.Histogram, d time.Duration) {
	_ = h.RecordValue(clampUS(int64(d / time.Microsecond)))
}

func clampUS(v int64) int64 {
	return min(max(v, 0), histMax)
}

// errClass is the outcome class of one request.
type errClass uint8

const (
	classOK        errClass = iota
	classStatus             // non-2xx answer; the code is in sample.status
	classTransport          // dial, reset, cut stream, malformed response
	classTimeout            // Config.Timeout or a dial timeout
	numClasses
)

// sample is what one request records. Times are offsets from the run's origin.
type sample struct {
	origin time.Duration // due time (open loop) or send time (closed loop): latencies start here
	sent   time.Duration // when the request actually went out
	done   time.Duration

	class   errClass
	status  int
	err     error  // set for classTransport and classTimeout
	errBody []byte // start of a non-2xx body; valid until the worker's next request

	// Streams only.
	headers time.Duration // response headers read
	token   time.Duration // first content chunk; < 0 if none
	events  int64         // data events, the terminator excluded
	chunks  int64         // data events with content (chat: non-empty choices[].delta.content)
	sawDone bool          // the terminator ([DONE], message_stop, response.completed) arrived
}

// shard is one lock's worth of figures. Workers are spread over a few shards so that
// recording does not serialize on one mutex; Result merges them.
type shard struct {
	mu sync.Mutex

	latency   *hdrhistogram.Histogram // total time, from origin
	sendDelay *hdrhistogram.Histogram // sent - due, open loop only
	ttfb      *hdrhistogram.Histogram // streams only, from origin
	ttft      *hdrhistogram.Histogram
	gap       *hdrhistogram.Histogram

	requests, successes int64
	late                int64
	status              [600]int64 // non-2xx answers by code; index 0 holds codes out of range
	transport, timeout  int64
	samples             [numClasses]string // first error message (body for classStatus) of each class
	sampleStatus        int                // the code of samples[classStatus]

	streams, streamsDone, noToken int64
	events, chunks                int64
	minChunks, maxChunks          int64

	lastSend, lastDone time.Duration
}

func newShard(open, stream bool) *shard {
	s := &shard{latency: newHist(), minChunks: -1}
	if open {
		s.sendDelay = newHist()
	}
	if stream {
		s.ttfb, s.ttft, s.gap = newHist(), newHist(), newHist()
	}
	return s
}

// record adds one finished request. gaps are the stream's inter-event gaps in µs.
// lateThreshold applies to open loop only.
func (s *shard) record(smp *sample, gaps []int64, lateThreshold time.Duration) {
	s.mu.Lock()
	s.requests++
	s.lastSend = max(s.lastSend, smp.sent)
	s.lastDone = max(s.lastDone, smp.done)
	if s.sendDelay != nil {
		delay := smp.sent - smp.origin
		recordUS(s.sendDelay, delay)
		if delay > lateThreshold {
			s.late++
		}
	}
	switch smp.class {
	case classOK:
		s.successes++
		recordUS(s.latency, smp.done-smp.origin)
		if s.ttfb != nil {
			s.recordStream(smp, gaps)
		}
	case classStatus:
		code := smp.status
		if code < 0 || code >= len(s.status) {
			code = 0
		}
		s.status[code]++
		if s.sampleStatus == 0 {
			s.samples[classStatus] = string(smp.errBody)
			s.sampleStatus = smp.status
		}
	case classTransport:
		s.transport++
		s.sample(classTransport, smp.err)
	case classTimeout:
		s.timeout++
		s.sample(classTimeout, smp.err)
	default:
		panic("BUG: load: unknown error class")
	}
	s.mu.Unlock()
}

func (s *shard) recordStream(smp *sample, gaps []int64) {
	s.streams++
	recordUS(s.ttfb, smp.headers-smp.origin)
	if smp.token >= 0 {
		recordUS(s.ttft, smp.token-smp.origin)
	} else {
		s.noToken++
	}
	if smp.sawDone {
		s.streamsDone++
	}
	s.events += smp.events
	s.chunks += smp.chunks
	if s.minChunks < 0 || smp.chunks < s.minChunks {
		s.minChunks = smp.chunks
	}
	s.maxChunks = max(s.maxChunks, smp.chunks)
	for _, g := range gaps {
		_ = s.gap.RecordValue(clampUS(g))
	}
}

func (s *shard) sample(c errClass, err error) {
	if s.samples[c] == "" && err != nil {
		s.samples[c] = err.Error()
	}
}

// recorder spreads workers over shards.
type recorder struct {
	shards []*shard
	mask   int
}

func newRecorder(open, stream bool) *recorder {
	// Two shards per P, a power of two, at most 16: enough that two running workers
	// rarely share one, few enough that merging stays cheap (each shard holds up to five
	// 140 KB histograms).
	n := 1 << bits.Len(uint(2*runtime.GOMAXPROCS(0)-1))
	n = min(n, 16)
	r := &recorder{shards: make([]*shard, n), mask: n - 1}
	for i := range r.shards {
		r.shards[i] = newShard(open, stream)
	}
	return r
}

// shardFor returns the shard of worker id.
func (r *recorder) shardFor(id int) *shard { return r.shards[id&r.mask] }

// merge folds every shard into one. Call it once all workers are done.
func (r *recorder) merge() *shard {
	out := r.shards[0]
	for _, s := range r.shards[1:] {
		out.latency.Merge(s.latency)
		if out.sendDelay != nil {
			out.sendDelay.Merge(s.sendDelay)
		}
		if out.ttfb != nil {
			out.ttfb.Merge(s.ttfb)
			out.ttft.Merge(s.ttft)
			out.gap.Merge(s.gap)
		}
		out.requests += s.requests
		out.successes += s.successes
		out.late += s.late
		for i, n := range s.status {
			out.status[i] += n
		}
		out.transport += s.transport
		out.timeout += s.timeout
		for _, c := range [...]errClass{classTransport, classTimeout} {
			if out.samples[c] == "" {
				out.samples[c] = s.samples[c]
			}
		}
		if out.sampleStatus == 0 {
			out.samples[classStatus], out.sampleStatus = s.samples[classStatus], s.sampleStatus
		}
		out.streams += s.streams
		out.streamsDone += s.streamsDone
		out.noToken += s.noToken
		out.events += s.events
		out.chunks += s.chunks
		if s.minChunks >= 0 && (out.minChunks < 0 || s.minChunks < out.minChunks) {
			out.minChunks = s.minChunks
		}
		out.maxChunks = max(out.maxChunks, s.maxChunks)
		out.lastSend = max(out.lastSend, s.lastSend)
		out.lastDone = max(out.lastDone, s.lastDone)
	}
	r.shards = r.shards[:1]
	return out
}
