// Package soak drives gw with a closed-loop mix of streamed and buffered chat
// completions against the mock upstream, optionally with SIGHUP reloads, and checks
// every answer byte for byte. A truncated chunked body, a missing [DONE], a duplicated
// or reordered chunk or a wrong filler byte each make a request broken. Helpers scrape
// gw's /metrics and count its access log so that gw's own bookkeeping can be compared
// with what the callers saw.
package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Config is one soak run.
type Config struct {
	Base      string // gw base URL, e.g. http://127.0.0.1:8080/v1
	CallerKey string
	Model     string // the alias gw serves; answers carry it as their model
	// UpstreamModel is the model name gw forwards to the mock ("" = Model). gw forwards
	// the body byte for byte but for the model, and the mock's prompt_tokens is
	// max(1, len(body)/4) of what it receives, so the expected usage depends on it.
	UpstreamModel string

	Concurrency int     // closed-loop callers
	Requests    int     // total requests
	StreamShare float64 // 0..1: fraction of requests that stream; the rest are buffered
	// IncludeUsageShare is the fraction (0..1) of streams that ask
	// stream_options.include_usage; gw asks the upstream for usage either way and must
	// strip it from the others, so a mix exercises both paths.
	IncludeUsageShare float64
	Chunks            int // x-mock-chunks (≥ 1)
	ChunkSize         int // x-mock-chunk-size (≥ 1)

	ReloadEvery time.Duration // SIGHUP ReloadPID at this interval while the load runs
	ReloadPID   int           // 0: no reloads
	Timeout     time.Duration // per request; 0: 30 s
}

// MaxFailures is how many broken answers Result describes.
const MaxFailures = 5

// Result is what the callers saw.
type Result struct {
	Total    int
	OK       int         // status 200 and every byte as expected
	Broken   int         // Total - OK: transport errors, other statuses, wrong bytes
	Failures []string    // the first MaxFailures broken answers, described
	Status   map[int]int // per status as seen by the callers; 0: no response
	Streamed int
	Buffered int
	Reloads  int // SIGHUPs sent
	Elapsed  time.Duration
	// BodyBytes is the sum of the response body bytes received, broken answers included.
	BodyBytes int64
}

// kind is one of the three request shapes.
type kind int

const (
	kindBuffered kind = iota
	kindStream
	kindStreamUsage
)

var kindNames = [...]string{"buffered", "stream", "stream+usage"}

// shape is a request body and the checker of its answers.
type shape struct {
	body  []byte
	check *Checker
}

// Run sends cfg.Requests requests from cfg.Concurrency callers and checks every answer.
// The error is for a config that cannot run, or ctx ending before the run did; the
// Result is filled either way.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	shapes := cfg.shapes()
	tr := &http.Transport{
		Proxy:               nil, // loopback: never an environment proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * cfg.Concurrency,
		MaxIdleConnsPerHost: cfg.Concurrency,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // the bytes compared are the bytes gw sent
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	var next atomic.Int64
	tallies := make([]tally, cfg.Concurrency)
	fails := &failures{}
	start := time.Now()
	stopReload := cfg.startReloads()
	var wg sync.WaitGroup
	for w := range tallies {
		wg.Add(1)
		go func(t *tally) {
			defer wg.Done()
			var buf bytes.Buffer
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= cfg.Requests {
					return
				}
				k := cfg.kindOf(i)
				t.add(k, cfg.do(ctx, client, &shapes[k], k, &buf), i, fails)
			}
		}(&tallies[w])
	}
	wg.Wait()
	res := Result{Reloads: stopReload(), Elapsed: time.Since(start), Status: map[int]int{}}
	for i := range tallies {
		tallies[i].into(&res)
	}
	res.Broken = res.Total - res.OK
	res.Failures = fails.list
	return res, ctx.Err()
}

func (cfg *Config) validate() error {
	switch {
	case !strings.HasPrefix(cfg.Base, "http://"):
		return errors.New("soak: Base must be an http:// URL")
	case cfg.Model == "":
		return errors.New("soak: Model is required")
	case cfg.Concurrency < 1 || cfg.Requests < 1:
		return errors.New("soak: Concurrency and Requests must be at least 1")
	case cfg.StreamShare < 0 || cfg.StreamShare > 1 || cfg.IncludeUsageShare < 0 || cfg.IncludeUsageShare > 1:
		return errors.New("soak: StreamShare and IncludeUsageShare must be within 0..1")
	case cfg.Chunks < 1 || cfg.ChunkSize < 1:
		return errors.New("soak: Chunks and ChunkSize must be at least 1")
	case cfg.ReloadPID < 0 || cfg.ReloadPID > 0 && cfg.ReloadEvery <= 0:
		return errors.New("soak: reloads need a ReloadPID > 0 and a ReloadEvery > 0")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.UpstreamModel == "" {
		cfg.UpstreamModel = cfg.Model
	}
	return nil
}

// shapes renders the three request bodies and the checkers of their answers.
func (cfg *Config) shapes() [3]shape {
	msgs := `"messages":[{"role":"user","content":"soak: say something deterministic"}]}`
	bodies := [3]string{
		kindBuffered:    `{"model":` + quote(cfg.Model) + `,` + msgs,
		kindStream:      `{"model":` + quote(cfg.Model) + `,"stream":true,` + msgs,
		kindStreamUsage: `{"model":` + quote(cfg.Model) + `,"stream":true,"stream_options":{"include_usage":true},` + msgs,
	}
	var out [3]shape
	for k, b := range bodies {
		// The mock counts the body it receives: ours with the upstream model in place of the alias.
		upLen := len(b) - len(quote(cfg.Model)) + len(quote(cfg.UpstreamModel))
		out[k] = shape{body: []byte(b), check: NewChecker(Expect{
			Model: cfg.Model, Stream: k != int(kindBuffered), IncludeUsage: k == int(kindStreamUsage),
			Chunks: cfg.Chunks, ChunkSize: cfg.ChunkSize, PromptTokens: max(1, upLen/4),
		})}
	}
	return out
}

// kindOf spreads the shares evenly over the request indexes: request i streams when
// floor((i+1)·share) steps past floor(i·share), so any window of requests has the mix.
func (cfg *Config) kindOf(i int) kind {
	if !steps(i, cfg.StreamShare) {
		return kindBuffered
	}
	// The streams' own index, for the include_usage share among them.
	s := int(float64(i+1) * cfg.StreamShare)
	if steps(s-1, cfg.IncludeUsageShare) {
		return kindStreamUsage
	}
	return kindStream
}

func steps(i int, share float64) bool {
	return int(float64(i+1)*share) > int(float64(i)*share)
}

// outcome is one request's result.
type outcome struct {
	status int
	bytes  int
	err    error // nil: exact
}

// do sends one request and checks its answer. buf is the caller's body buffer.
func (cfg *Config) do(ctx context.Context, client *http.Client, sh *shape, k kind, buf *bytes.Buffer) outcome {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(cfg.Base, "/")+"/chat/completions", bytes.NewReader(sh.body))
	if err != nil {
		return outcome{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+cfg.CallerKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-mock-chunks", strconv.Itoa(cfg.Chunks))
	req.Header.Set("x-mock-chunk-size", strconv.Itoa(cfg.ChunkSize))
	resp, err := client.Do(req)
	if err != nil {
		return outcome{err: fmt.Errorf("no response: %w", err)}
	}
	defer resp.Body.Close()
	buf.Reset()
	_, rerr := buf.ReadFrom(resp.Body)
	o := outcome{status: resp.StatusCode, bytes: buf.Len()}
	switch {
	case resp.StatusCode != http.StatusOK:
		o.err = fmt.Errorf("status %d: %s", resp.StatusCode, snippet(buf.Bytes(), 0, 120))
	case rerr != nil:
		// A chunked body cut before its terminating chunk reads as io.ErrUnexpectedEOF.
		o.err = fmt.Errorf("body read failed after %d bytes: %w", buf.Len(), rerr)
	case k != kindBuffered && !chunked(resp):
		// A stream delimited by the connection's close cannot be told from a truncated one.
		o.err = fmt.Errorf("stream not chunked (Transfer-Encoding %v, Content-Length %d)", resp.TransferEncoding, resp.ContentLength)
	default:
		o.err = sh.check.Check(buf.Bytes())
	}
	return o
}

func chunked(resp *http.Response) bool {
	return len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked"
}

// tally is one caller's counts, merged after the run (no shared counters on the hot path).
type tally struct {
	total, ok, streamed, buffered int
	bytes                         int64
	status                        map[int]int
}

func (t *tally) add(k kind, o outcome, i int, f *failures) {
	if t.status == nil {
		t.status = map[int]int{}
	}
	t.total++
	t.status[o.status]++
	t.bytes += int64(o.bytes)
	if k == kindBuffered {
		t.buffered++
	} else {
		t.streamed++
	}
	if o.err == nil {
		t.ok++
		return
	}
	f.note("request " + strconv.Itoa(i) + " (" + kindNames[k] + "): " + o.err.Error())
}

func (t *tally) into(r *Result) {
	r.Total += t.total
	r.OK += t.ok
	r.Streamed += t.streamed
	r.Buffered += t.buffered
	r.BodyBytes += t.bytes
	for s, n := range t.status {
		r.Status[s] += n
	}
}

// failures keeps the first MaxFailures descriptions.
type failures struct {
	mu   sync.Mutex
	list []string
}

func (f *failures) note(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.list) < MaxFailures {
		f.list = append(f.list, s)
	}
}

// startReloads sends SIGHUP to cfg.ReloadPID every cfg.ReloadEvery until the returned
// function is called; that function returns the number of signals sent.
func (cfg *Config) startReloads() func() int {
	if cfg.ReloadPID == 0 {
		return func() int { return 0 }
	}
	stop, done := make(chan struct{}), make(chan int)
	go func() {
		t := time.NewTicker(cfg.ReloadEvery)
		defer t.Stop()
		sent := 0
		for {
			select {
			case <-stop:
				done <- sent
				return
			case <-t.C:
				if syscall.Kill(cfg.ReloadPID, syscall.SIGHUP) == nil {
					sent++
				}
			}
		}
	}()
	return func() int {
		close(stop)
		return <-done
	}
}

// MetricsRequests scrapes gw's /metrics and returns gw_requests_total of model, per
// status. statusURL is the base URL of the listener serving the ops endpoints (the main
// listener when gw has no status listener), or the /metrics URL itself.
func MetricsRequests(statusURL, model string) (map[int]int, error) {
	url := strings.TrimSuffix(statusURL, "/")
	if !strings.HasSuffix(url, "/metrics") {
		url += "/metrics"
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	return ParseRequestsTotal(body, model)
}

// ParseRequestsTotal reads the gw_requests_total series of model from Prometheus text.
func ParseRequestsTotal(text []byte, model string) (map[int]int, error) {
	const name = "gw_requests_total{"
	out := map[int]int{}
	for _, line := range strings.Split(string(text), "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		if end < 0 {
			return nil, fmt.Errorf("malformed series %q", line)
		}
		labels, err := parseLabels(line[len(name):end])
		if err != nil {
			return nil, fmt.Errorf("%w in %q", err, line)
		}
		if labels["model"] != model {
			continue
		}
		status, err1 := strconv.Atoi(labels["status"])
		v, err2 := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("malformed series %q", line)
		}
		out[status] += int(v)
	}
	return out, nil
}

// parseLabels reads `a="x",b="y"` with Prometheus escapes (\\, \", \n).
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 1 || len(s) < eq+2 || s[eq+1] != '"' {
			return nil, errors.New("malformed labels")
		}
		key, rest := s[:eq], s[eq+2:]
		var val strings.Builder
		i := 0
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
				if rest[i] == 'n' {
					val.WriteByte('\n')
					continue
				}
			}
			val.WriteByte(rest[i])
		}
		if i == len(rest) {
			return nil, errors.New("unterminated label value")
		}
		out[key] = val.String()
		s = strings.TrimPrefix(rest[i+1:], ",")
	}
	return out, nil
}

// accessLine is what the counts need of one access-log line (edge/accesslog.go).
type accessLine struct {
	Msg    string  `json:"msg"`
	Level  *string `json:"level"`
	Status *int    `json:"status"`
	Stream *bool   `json:"stream"`
}

// parseAccess returns the access-log lines among gw's stderr lines. An access line is a
// JSON object with "msg":"access", a status and a stream flag, and no "level": slog's
// lines have one, and non-JSON lines (Go's log package, panics) are not access lines.
func parseAccess(lines []byte) []accessLine {
	var out []accessLine
	for _, line := range bytes.Split(lines, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var a accessLine
		if json.Unmarshal(line, &a) != nil || a.Level != nil || a.Msg != "access" || a.Status == nil || a.Stream == nil {
			continue
		}
		out = append(out, a)
	}
	return out
}

// AccessLogCounts counts gw's access-log lines per status.
func AccessLogCounts(lines []byte) map[int]int {
	out := map[int]int{}
	for _, a := range parseAccess(lines) {
		out[*a.Status]++
	}
	return out
}

// AccessLogStreams counts gw's access-log lines of streamed and of buffered requests.
func AccessLogStreams(lines []byte) (streamed, buffered int) {
	for _, a := range parseAccess(lines) {
		if *a.Stream {
			streamed++
		} else {
			buffered++
		}
	}
	return streamed, buffered
}
