package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"gw/sse"
	"gw/sse/rawjson"
)

// Run performs the load run cfg describes and returns its figures. It returns an error
// only for an invalid cfg: failed requests are counted in the Result. When ctx is done
// Run stops sending, waits for the requests in flight (each bounded by cfg.Timeout) and
// returns what it measured so far, with Result.Interrupted set.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	r, err := newRunner(cfg, nil)
	if err != nil {
		return nil, err
	}
	return r.run(ctx), nil
}

// runner is the state of one run, shared read-only by its workers.
type runner struct {
	cfg  Config // defaults applied
	spec *formatSpec
	hc   *fasthttp.HostClient
	tmpl *fasthttp.Request
	clk  clock
	rec  *recorder

	window time.Duration // measuring starts at origin + window (the warmup)
	end    time.Duration // no request starts at or after origin + end

	work     <-chan time.Duration // open loop: due times for parked workers
	stopped  atomic.Bool          // ctx done: closed-loop workers stop
	wg       sync.WaitGroup
	workerID atomic.Int64 // workers started so far
}

// newRunner validates cfg and prepares the client and the request template. dial
// replaces the TCP dialer (in-memory benchmarks); nil dials TCP.
func newRunner(cfg Config, dial fasthttp.DialFunc) (*runner, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("cannot run load: %w", err)
	}
	spec := cfg.Format.spec()
	t, err := parseTarget(cfg.Target, spec.path)
	if err != nil {
		return nil, fmt.Errorf("cannot run load: %w", err)
	}
	tmpl, err := newRequestTemplate(&cfg, t)
	if err != nil {
		return nil, fmt.Errorf("cannot run load: %w", err)
	}
	if cfg.Model == "" {
		// Echo the body's own model in the Result.
		if raw, kind, ok := rawjson.Get(tmpl.Body(), "model"); ok && kind == rawjson.String {
			if m, err := rawjson.AppendUnquote(nil, raw); err == nil {
				cfg.Model = string(m)
			}
		}
	}
	return &runner{
		cfg:    cfg,
		spec:   spec,
		hc:     newClient(&cfg, t, dial),
		tmpl:   tmpl,
		rec:    newRecorder(cfg.Mode() == OpenLoop, cfg.Stream),
		window: cfg.Warmup,
		end:    cfg.Warmup + cfg.Duration,
	}, nil
}

func (r *runner) run(ctx context.Context) *Result {
	cpu0 := readCPU()
	clk := newRealClock()
	defer clk.close()
	r.clk = clk
	started := time.Now()

	finished := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			r.stopped.Store(true)
		case <-finished:
		}
	}()

	switch r.cfg.Mode() {
	case OpenLoop:
		r.runOpen(ctx)
	default:
		r.runClosed()
	}
	r.wg.Wait()
	close(finished)
	wall := r.clk.now()
	cpu := readCPU().sub(cpu0)
	r.hc.CloseIdleConnections()

	return r.result(started, wall, cpu, ctx.Err() != nil)
}

func (r *runner) runOpen(ctx context.Context) {
	p := newPool(r.cfg.Connections, ctx.Done(), func(due time.Duration) {
		r.wg.Add(1)
		go r.openWorker(due)
	})
	r.work = p.work
	s := openLoop{rate: r.cfg.Rate, end: r.end}
	s.run(ctx, r.clk, p.fire)
	p.close()
}

// openWorker sends first, then every due time the pool hands it, until the pool closes.
func (r *runner) openWorker(first time.Duration) {
	defer r.wg.Done()
	w := r.newWorker()
	defer w.release()
	for due, ok := first, true; ok; due, ok = <-r.work {
		w.do(due, due >= r.window)
	}
}

func (r *runner) runClosed() {
	for range r.cfg.Connections {
		r.wg.Add(1)
		go r.closedWorker()
	}
}

// closedWorker sends back to back until the end of the run.
func (r *runner) closedWorker() {
	defer r.wg.Done()
	w := r.newWorker()
	defer w.release()
	for !r.stopped.Load() {
		t := r.clk.now()
		if t >= r.end {
			return
		}
		w.do(t, t >= r.window)
	}
}

// worker owns everything one request needs, so the steady state allocates nothing but
// what fasthttp does.
type worker struct {
	r     *runner
	shard *shard

	req  fasthttp.Request
	resp fasthttp.Response
	sr   *sse.Reader // streams only
	gaps []int64     // inter-event gaps of the current stream, µs
	body []byte      // start of a non-2xx stream body
}

func (r *runner) newWorker() *worker {
	id := int(r.workerID.Add(1))
	w := &worker{r: r, shard: r.rec.shardFor(id)}
	r.tmpl.CopyTo(&w.req)
	w.req.SetTimeout(r.cfg.Timeout)
	if r.cfg.Stream {
		w.sr = sse.AcquireReader(nil)
	}
	return w
}

func (w *worker) release() {
	if w.sr != nil {
		sse.ReleaseReader(w.sr)
		w.sr = nil
	}
}

// errStreamCut is the transport error of a chunked stream whose connection closed
// before the terminating chunk.
var errStreamCut = errors.New("load: the server closed the connection in the middle of the stream")

// maxErrBody is how much of a non-2xx body is kept as the error sample.
const maxErrBody = 512

// do sends one request whose latencies count from origin, and records it when record is
// set (warmup requests are not).
func (w *worker) do(origin time.Duration, record bool) {
	clk := w.r.clk
	smp := sample{origin: origin, token: -1}
	smp.sent = clk.now()
	err := w.r.hc.Do(&w.req, &w.resp)
	smp.headers = clk.now()
	w.gaps = w.gaps[:0]
	switch {
	case err != nil:
		smp.fail(err)
	case w.r.cfg.Stream:
		w.readStream(&smp)
	default:
		if code := w.resp.StatusCode(); code < 200 || code > 299 {
			smp.class, smp.status = classStatus, code
			body := w.resp.Body()
			smp.errBody = body[:min(len(body), maxErrBody)]
		}
	}
	smp.done = clk.now()
	if record {
		w.shard.record(&smp, w.gaps, w.r.cfg.LateThreshold)
	}
	smp.errBody = nil
}

// readStream consumes the streamed body of w.resp and closes it.
func (w *worker) readStream(smp *sample) {
	body := w.resp.BodyStream()
	if body == nil {
		return
	}
	var err error
	if code := w.resp.StatusCode(); code < 200 || code > 299 {
		smp.class, smp.status = classStatus, code
		n, _ := io.ReadFull(body, w.errBodyBuf())
		smp.errBody = w.body[:n]
		_, err = io.Copy(io.Discard, body)
	} else {
		w.sr.Reset(body)
		w.gaps, err = readEvents(w.sr, w.r.clk, w.r.spec.classify, smp, w.gaps)
		w.sr.Reset(nil)
		if err == nil && peerClosed(&w.resp) {
			err = errStreamCut
			// fasthttp takes the cut for the end and would pool the dead connection.
			w.resp.SetConnectionClose()
		}
	}
	// Closing before EOF (an error) discards the connection; after EOF it is reused.
	_ = w.resp.CloseBodyStream()
	if err != nil && smp.class == classOK {
		smp.fail(err)
	}
}

func (w *worker) errBodyBuf() []byte {
	if w.body == nil {
		w.body = make([]byte, maxErrBody)
	}
	return w.body
}

// fail classifies a transport-level error.
func (smp *sample) fail(err error) {
	smp.err = err
	smp.class = classTransport
	if isTimeout(err) {
		smp.class = classTimeout
	}
}

func isTimeout(err error) bool {
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
