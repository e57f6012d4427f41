package mock

import (
	"net/http"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// RecordedRequest is one request as the mock received it.
type RecordedRequest struct {
	// Seq numbers requests from 1 in arrival order; it keeps counting across ClearRequests.
	Seq    uint64    `json:"seq"`
	Time   time.Time `json:"time"`
	Method string    `json:"method"`
	// Path is the path as sent, prefixes and /knobs/ segment included.
	Path  string `json:"path"`
	Query string `json:"query,omitempty"`
	// Header uses net/http canonical names, so Header.Get works.
	Header http.Header `json:"header"`
	// Body is the raw body as sent (still compressed if it was).
	Body string `json:"body"`
}

// recorder keeps the last len(ring) requests.
type recorder struct {
	mu   sync.Mutex
	ring []RecordedRequest
	next int // ring index of the next write
	n    int // filled entries
	seq  uint64
}

func newRecorder(limit int) *recorder {
	return &recorder{ring: make([]RecordedRequest, limit)}
}

// add copies the request of ctx into the ring. The copy is taken outside the lock.
func (r *recorder) add(ctx *fasthttp.RequestCtx) {
	rr := RecordedRequest{
		Time:   time.Now(),
		Method: string(ctx.Method()),
		Path:   string(ctx.URI().PathOriginal()),
		Query:  string(ctx.URI().QueryString()),
		Header: make(http.Header),
	}
	if ctx.Request.IsBodyStream() && len(ctx.Request.Header.MultipartFormBoundary()) > 0 {
		// An upload is read by its handler as it arrives (uploads.go):
		// holding it here would cost its size in memory.
		rr.Body = "(multipart upload, streamed)"
	} else {
		rr.Body = string(ctx.Request.Body())
	}
	for k, v := range ctx.Request.Header.All() {
		name := canonicalHeader(k)
		rr.Header[name] = append(rr.Header[name], string(v))
	}

	r.mu.Lock()
	r.seq++
	rr.Seq = r.seq
	r.ring[r.next] = rr
	r.next = (r.next + 1) % len(r.ring)
	if r.n < len(r.ring) {
		r.n++
	}
	r.mu.Unlock()
}

// snapshot returns the recorded requests, oldest first.
func (r *recorder) snapshot() []RecordedRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]RecordedRequest, 0, r.n)
	start := (r.next - r.n + len(r.ring)) % len(r.ring)
	for i := 0; i < r.n; i++ {
		out = append(out, r.ring[(start+i)%len(r.ring)])
	}
	return out
}

func (r *recorder) clear() {
	r.mu.Lock()
	clear(r.ring)
	r.next, r.n = 0, 0
	r.mu.Unlock()
}
