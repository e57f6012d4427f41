// Package statusui is gw's live status page (/ui on the status listener):
// the traffic collector fed by the usage pipeline, the embedded static
// bundle and the server-sent-events writer. What the page shows is
// assembled by the edge package (edge/ops_ui.go), which owns the sources.
package statusui

import (
	"math"
	"sort"
	"sync"
	"time"

	"gw/edge/usage"
)

const (
	// Window is how many seconds of traffic the page plots.
	Window = 120
	// TargetWindow is the span of the per-target request counts.
	TargetWindow = 60
	// RecentErrors is how many failed requests the page lists.
	RecentErrors = 50
	// maxPairs bounds the per-(alias, target) table: aliases come from the
	// config, but a config with thousands of them must not grow it forever.
	maxPairs = 4096
	// buckets of the latency histogram: bound i is 50 µs × 1.5^i, so 32
	// buckets reach about 4 hours; quantiles are read at a bucket's bound.
	buckets = 32
)

var bounds = func() (b [buckets]time.Duration) {
	v := float64(50 * time.Microsecond)
	for i := range b {
		b[i] = time.Duration(v)
		v *= 1.5
	}
	return b
}()

// Collector keeps the last Window seconds of finished requests as the
// usage pipeline reports them: requests, errors and a latency histogram per
// second, requests per (alias, target) over the last minute, and the last
// failed requests. Observe runs on the pipeline's dispatcher goroutine, so
// the request path pays nothing for the page.
type Collector struct {
	mu     sync.Mutex
	secs   [Window]second
	pairs  map[pair]*pairStat
	errs   [RecentErrors]ErrorEntry
	nErr   int // total errors recorded; errs[(nErr-1)%RecentErrors] is the newest
	now    func() time.Time
	totals struct{ requests, errors int64 }
}

type second struct {
	unix     int64
	requests int64
	errors   int64
	hist     [buckets]int32
}

type pair struct{ alias, target string }

type pairStat struct {
	secs [TargetWindow]struct {
		unix           int64
		requests, errs int32
	}
}

// ErrorEntry is one failed request as the page lists it. It carries no
// message text: an upstream's error message can quote the caller's input.
type ErrorEntry struct {
	At          time.Time `json:"at"`
	RequestID   string    `json:"request_id"`
	Status      int       `json:"status"`
	Class       string    `json:"class,omitempty"`
	Model       string    `json:"model"`
	Target      string    `json:"target,omitempty"`
	ProviderKey string    `json:"provider_key,omitempty"`
	APIKey      string    `json:"api_key,omitempty"`
}

// NewCollector returns an empty collector on the wall clock.
func NewCollector() *Collector { return &Collector{pairs: map[pair]*pairStat{}, now: time.Now} }

// Observe counts one record: final attempts only (a failed-over attempt
// counts on its target, not as a request), keyed by when it finished.
func (c *Collector) Observe(r *usage.Record) {
	at := r.OccurredAt
	if at.IsZero() {
		at = c.now()
	}
	sec := at.Unix()
	failed := r.StatusCode >= 400 || r.StatusCode == 0
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Model != "" {
		c.countPair(r.Model, r.TargetModel, sec, failed)
	}
	if r.AttemptKind == usage.AttemptFailed {
		return
	}
	s := &c.secs[sec%Window]
	if s.unix != sec {
		*s = second{unix: sec}
	}
	s.requests++
	c.totals.requests++
	i := 0
	for i < buckets-1 && r.Latency > bounds[i] {
		i++
	}
	s.hist[i]++
	if failed {
		s.errors++
		c.totals.errors++
		c.errs[c.nErr%RecentErrors] = ErrorEntry{At: at.UTC(), RequestID: r.RequestID.String(), Status: r.StatusCode, Class: r.ErrorClass,
			Model: r.Model, Target: r.TargetModel, ProviderKey: r.ProviderKey, APIKey: r.APIKeyName}
		c.nErr++
	}
}

func (c *Collector) countPair(alias, target string, sec int64, failed bool) {
	if target == "" {
		target = alias
	}
	ps := c.pairs[pair{alias, target}]
	if ps == nil {
		if len(c.pairs) >= maxPairs {
			return
		}
		ps = &pairStat{}
		c.pairs[pair{alias, target}] = ps
	}
	b := &ps.secs[sec%TargetWindow]
	if b.unix != sec {
		b.unix, b.requests, b.errs = sec, 0, 0
	}
	b.requests++
	if failed {
		b.errs++
	}
}

// Traffic is the per-second series of the last Window seconds, oldest
// first, ending with the last complete second.
type Traffic struct {
	Seconds  []int64   `json:"seconds"`
	Requests []int64   `json:"requests"`
	Errors   []int64   `json:"errors"`
	P50MS    []float64 `json:"p50_ms"`
	P99MS    []float64 `json:"p99_ms"`
	Total    int64     `json:"total_requests"`
	TotalErr int64     `json:"total_errors"`
}

// PairCount is one (alias, target)'s traffic over the last TargetWindow seconds.
type PairCount struct {
	Requests int64 `json:"requests_60s"`
	Errors   int64 `json:"errors_60s"`
}

// Snapshot copies what the page shows at now.
func (c *Collector) Snapshot(now time.Time) (t Traffic, pairs map[[2]string]PairCount, errs []ErrorEntry) {
	end := now.Unix() - 1 // the current second is still filling
	c.mu.Lock()
	defer c.mu.Unlock()
	t = Traffic{Seconds: make([]int64, 0, Window), Requests: make([]int64, 0, Window), Errors: make([]int64, 0, Window),
		P50MS: make([]float64, 0, Window), P99MS: make([]float64, 0, Window), Total: c.totals.requests, TotalErr: c.totals.errors}
	for sec := end - Window + 1; sec <= end; sec++ {
		s := &c.secs[((sec%Window)+Window)%Window]
		t.Seconds = append(t.Seconds, sec)
		if s.unix != sec {
			t.Requests, t.Errors = append(t.Requests, 0), append(t.Errors, 0)
			t.P50MS, t.P99MS = append(t.P50MS, 0), append(t.P99MS, 0)
			continue
		}
		t.Requests, t.Errors = append(t.Requests, s.requests), append(t.Errors, s.errors)
		t.P50MS, t.P99MS = append(t.P50MS, quantileMS(&s.hist, s.requests, 0.50)), append(t.P99MS, quantileMS(&s.hist, s.requests, 0.99))
	}
	pairs = make(map[[2]string]PairCount, len(c.pairs))
	for k, ps := range c.pairs {
		var pc PairCount
		for i := range ps.secs {
			if b := &ps.secs[i]; b.unix > end-TargetWindow && b.unix <= end+1 {
				pc.Requests += int64(b.requests)
				pc.Errors += int64(b.errs)
			}
		}
		pairs[[2]string{k.alias, k.target}] = pc
	}
	n := min(c.nErr, RecentErrors)
	errs = make([]ErrorEntry, 0, n)
	for i := 0; i < n; i++ { // newest first
		errs = append(errs, c.errs[(c.nErr-1-i)%RecentErrors])
	}
	return t, pairs, errs
}

// quantileMS reads quantile q of a second's histogram at the upper bound
// of the bucket that holds it, in milliseconds.
func quantileMS(h *[buckets]int32, n int64, q float64) float64 {
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n))) // nearest rank
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for i, c := range h {
		seen += int64(c)
		if seen >= rank {
			return float64(bounds[i]) / float64(time.Millisecond)
		}
	}
	return float64(bounds[buckets-1]) / float64(time.Millisecond)
}

// SortedPairs lists pairs' keys in a stable order (tests, rendering).
func SortedPairs(m map[[2]string]PairCount) [][2]string {
	keys := make([][2]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	return keys
}
