package limiter

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
)

// Poll runs the background work now (probe, warning, sweep).
func (l *Limiter) Poll() { l.poll() }

// NowNs returns the limiter's clock reading in unix ns.
func (l *Limiter) NowNs() int64 { return l.now() }

// Sweep drops idle subjects now, whatever SweepInterval says.
func (l *Limiter) Sweep() { l.local.sweep(l.now()) }

// Subjects returns the number of subjects with local state.
func (l *Limiter) Subjects() int { return l.local.subjects.Size() }

// ErrFake is what a failing FakeBackend returns.
var ErrFake = errors.New("fake: connection refused")

// FakeBackend is a shared store in memory whose calls fail on demand.
// Its counters are a plain map under a mutex: exact, like the Lua scripts.
type FakeBackend struct {
	Down     atomic.Bool  // every call fails
	Reserves atomic.Int64 // successful reserve calls
	Pings    atomic.Int64
	mu       sync.Mutex
	counts   map[string]int64
}

// WithFake makes cfg use a fake shared store; dials fail while DialDown.
func WithFake(cfg Config, fb *FakeBackend, dialDown *atomic.Bool) Config {
	if cfg.Redis == nil {
		cfg.Redis = &RedisConfig{Addr: "fake"}
	}
	cfg.dial = func() (backend, error) {
		if dialDown != nil && dialDown.Load() {
			return nil, ErrFake
		}
		return fb, nil
	}
	return cfg
}

func (f *FakeBackend) key(e *entry, win int64) string {
	return string(e.sub.AppendKey(nil)) + "/" + kindNames[e.kind] + strconv.FormatInt(e.secs, 10) + "/" + strconv.FormatInt(win, 10)
}

func (f *FakeBackend) reserve(r *Reservation, nowNs int64) (bool, error) {
	if f.Down.Load() {
		return false, ErrFake
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts == nil {
		f.counts = map[string]int64{}
	}
	ok := true
	for i := 0; i < r.Len(); i++ {
		e := r.at(i)
		e.win = windowOf(e.secs, nowNs)
		e.count = f.counts[f.key(e, e.win)]
		if e.over() {
			ok = false
		}
	}
	if ok {
		for i := 0; i < r.Len(); i++ {
			e := r.at(i)
			e.count += e.cost
			f.counts[f.key(e, e.win)] = e.count
		}
	}
	f.Reserves.Add(1)
	return ok, nil
}

func (f *FakeBackend) settle(r *Reservation, delta, nowNs int64) error {
	if f.Down.Load() {
		return ErrFake
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := 0; i < r.Len(); i++ {
		e := r.at(i)
		if !e.kind.Tokens() {
			continue
		}
		win := e.win
		if cur := windowOf(e.secs, nowNs); cur > win {
			if delta < 0 {
				continue
			}
			win = cur
		}
		k := f.key(e, win)
		f.counts[k] = max(f.counts[k]+delta, 0)
	}
	return nil
}

func (f *FakeBackend) ping() error {
	f.Pings.Add(1)
	if f.Down.Load() {
		return ErrFake
	}
	return nil
}

func (f *FakeBackend) close() {}

// KeySlot is keySlot (Redis Cluster's hash slot).
var KeySlot = keySlot
