package custom

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// pool holds warm runtimes of one guardrail: module evaluated, entry points
// held, so a hook call is a function call, not a VM start. At most max
// runtimes exist at once; a call that finds none idle and no room to start
// one waits for one, inside its own deadline.
type pool struct {
	cfg *config
	// idle runtimes, ready to use. Its capacity is max, so a put never blocks.
	idle chan *jsRuntime
	// slots holds one token per runtime that may still be started.
	slots chan struct{}

	mu      sync.Mutex // orders put, retire and close
	closed  bool
	retired bool // the snapshot that compiled it was replaced: keep nothing warm

	started atomic.Int64 // runtimes started over the pool's life
}

func newPool(cfg *config, max int, first *jsRuntime) *pool {
	p := &pool{cfg: cfg, idle: make(chan *jsRuntime, max), slots: make(chan struct{}, max)}
	for range max - 1 {
		p.slots <- struct{}{}
	}
	p.idle <- first
	p.started.Store(1)
	return p
}

// get returns a runtime for exclusive use; the caller must put it back.
func (p *pool) get(ctx context.Context, deadline time.Time) (*jsRuntime, error) {
	if p.isClosed() {
		return nil, ErrClosed
	}
	// Fast path - a warm runtime is idle.
	select {
	case r := <-p.idle:
		return p.checkOpen(r)
	default:
	}
	// Slow path - start one if there is room, else wait for one.
	select {
	case <-p.slots:
		return p.start(deadline)
	default:
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case r := <-p.idle:
		return p.checkOpen(r)
	case <-p.slots:
		return p.start(deadline)
	case <-t.C:
		return nil, ErrTimeout
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *pool) checkOpen(r *jsRuntime) (*jsRuntime, error) {
	if p.isClosed() {
		r.close()
		return nil, ErrClosed
	}
	return r, nil
}

func (p *pool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// start builds a runtime in a free slot for a call that must end by
// deadline. The script already loaded once in New, so a failure here is
// unusual (too little of the call's time left, a top-level that behaves
// differently per run, or memory); the slot is given back.
func (p *pool) start(deadline time.Time) (*jsRuntime, error) {
	if p.isClosed() {
		p.slots <- struct{}{}
		return nil, ErrClosed
	}
	p.started.Add(1)
	r, err := newRuntime(p.cfg, deadline)
	if err != nil {
		p.slots <- struct{}{}
		return nil, err
	}
	return r, nil
}

// put returns r after a call. A broken runtime (interrupted, out of
// memory, engine error) is closed, and a replacement is started in the
// background so the next call finds a warm runtime rather than paying a
// cold start inside its own timeout.
func (p *pool) put(r *jsRuntime, broken bool) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		r.close()
		return
	}
	if p.retired {
		p.mu.Unlock()
		r.close()
		p.slots <- struct{}{}
		return
	}
	if !broken {
		p.idle <- r
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	r.close()
	go p.refill()
}

// refill starts a runtime in the slot of a discarded one.
func (p *pool) refill() {
	p.mu.Lock()
	stop := p.closed || p.retired
	p.mu.Unlock()
	if stop {
		p.slots <- struct{}{}
		return
	}
	p.started.Add(1)
	r, err := newRuntime(p.cfg, time.Now().Add(p.cfg.timeout))
	if err != nil {
		p.slots <- struct{}{} // a later call tries again
		return
	}
	p.put(r, false)
}

// close closes the idle runtimes; runtimes in use are closed when put back.
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	for {
		select {
		case r := <-p.idle:
			r.close()
		default:
			return
		}
	}
}

// retire frees the idle runtimes of a pool whose snapshot was replaced.
// The pool keeps working for calls still made through that snapshot: each
// starts a runtime in a free slot and closes it afterwards, so nothing stays
// warm (each runtime may hold up to max_memory_bytes outside the Go heap,
// which the collector does not see).
func (p *pool) retire() {
	p.mu.Lock()
	p.retired = true
	p.mu.Unlock()
	for {
		select {
		case r := <-p.idle:
			r.close()
			p.slots <- struct{}{}
		default:
			return
		}
	}
}
