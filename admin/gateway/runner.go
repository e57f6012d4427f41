package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"gw/admin/store"
)

var (
	compileFull = metrics.NewPrometheusHistogram(`gw_config_apply_duration_seconds{trigger="admin_full"}`)
	compileIncr = metrics.NewPrometheusHistogram(`gw_config_apply_duration_seconds{trigger="admin_watch"}`)
)

// Runner keeps a Holder's snapshot in step with the store: it lists every
// resource once, then applies the store's Watch events in revision order,
// recompiling incrementally when a batch touches routes only. Writes made
// through any process on the same store arrive the same way.
type Runner struct {
	Store  store.Store
	Holder *Holder
	Log    *slog.Logger
	// OnApply, when set, runs after each published snapshot.
	OnApply func(*Snapshot)

	mu      sync.RWMutex
	state   *State
	applied int64
	cond    *sync.Cond
	watchMu sync.Mutex // guards cancel
	cancel  context.CancelFunc
}

// NewRunner returns a runner for the keys under root (e.g. "/gw").
func NewRunner(st store.Store, root string, h *Holder, log *slog.Logger) *Runner {
	if log == nil {
		log = slog.Default()
	}
	r := &Runner{Store: st, Holder: h, Log: log, state: NewState(root)}
	r.cond = sync.NewCond(&r.mu)
	return r
}

// Start lists the store, publishes the first snapshot, and follows the
// store's changes until ctx ends.
func (r *Runner) Start(ctx context.Context) error {
	rev, err := r.relist(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	r.watchMu.Lock()
	r.cancel = cancel
	r.watchMu.Unlock()
	go r.follow(ctx, rev)
	return nil
}

// Stop ends the watch.
func (r *Runner) Stop() {
	r.watchMu.Lock()
	defer r.watchMu.Unlock()
	if r.cancel != nil {
		r.cancel()
	}
}

// relist rebuilds the whole state from a listing and publishes it.
func (r *Runner) relist(ctx context.Context) (int64, error) {
	kvs, rev, err := r.Store.List(ctx, r.state.Root+"/")
	if err != nil {
		return 0, fmt.Errorf("cannot list the admin store: %w", err)
	}
	start := time.Now()
	st := NewState(r.state.Root)
	for _, kv := range kvs {
		if coll, id, ok := st.ParseKey(kv.Key); ok {
			st.Put(coll, id, kv)
		}
	}
	snap := Compile(st, rev)
	r.mu.Lock()
	r.state = st
	r.publish(snap, rev)
	r.mu.Unlock()
	compileFull.UpdateDuration(start)
	r.report(snap)
	return rev, nil
}

// Reload lists the store again and recompiles everything (PUT
// /plugins/reload).
func (r *Runner) Reload(ctx context.Context) error {
	_, err := r.relist(ctx)
	return err
}

func (r *Runner) publish(snap *Snapshot, rev int64) {
	r.Holder.Store(snap)
	if rev > r.applied {
		r.applied = rev
	}
	r.cond.Broadcast()
	if r.OnApply != nil {
		r.OnApply(snap)
	}
}

func (r *Runner) report(snap *Snapshot) {
	for _, e := range snap.Errors {
		r.Log.Error("stored admin resource does not compile; left out", "key", e.Key, "error", e.Msg)
	}
}

// follow applies watch batches; after a watch error (a compacted revision,
// a lost connection) it lists again and resumes from the listing.
func (r *Runner) follow(ctx context.Context, rev int64) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		ch := r.Store.Watch(ctx, r.state.Root+"/", rev+1)
		for resp := range ch {
			if resp.Err != nil {
				if !errors.Is(resp.Err, context.Canceled) {
					r.Log.Warn("admin store watch ended; listing again", "error", resp.Err.Error())
				}
				break
			}
			if len(resp.Events) > 0 {
				rev = r.apply(resp.Events)
				backoff = 100 * time.Millisecond
			}
		}
		if ctx.Err() != nil {
			return
		}
		time.Sleep(backoff)
		if backoff < 5*time.Second {
			backoff *= 2
		}
		if n, err := r.relist(ctx); err != nil {
			r.Log.Warn("cannot relist the admin store", "error", err.Error())
		} else {
			rev = n
		}
	}
}

// apply applies one batch and publishes the result; it returns the batch's
// last revision.
func (r *Runner) apply(evs []store.Event) int64 {
	start := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	rev := r.applied
	var routes []string
	onlyRoutes := true
	for _, ev := range evs {
		if ev.KV.ModRev > rev {
			rev = ev.KV.ModRev
		}
		coll := r.state.Apply(ev)
		if coll == Routes {
			_, id, _ := r.state.ParseKey(ev.KV.Key)
			routes = append(routes, id)
		} else if coll != "" {
			onlyRoutes = false
		}
	}
	prev := r.Holder.Load()
	var snap *Snapshot
	if onlyRoutes && prev != nil {
		snap = prev.WithRoutes(r.state, routes, rev)
		defer compileIncr.UpdateDuration(start)
	} else {
		snap = Compile(r.state, rev)
		defer compileFull.UpdateDuration(start)
	}
	r.publish(snap, rev)
	if len(snap.Errors) > 0 && (prev == nil || len(snap.Errors) != len(prev.Errors)) {
		r.report(snap)
	}
	return rev
}

// View runs f with the current state and snapshot under the runner's read
// lock (the admin API's reference and duplicate checks).
func (r *Runner) View(f func(st *State, snap *Snapshot)) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f(r.state, r.Holder.Load())
}

// Applied is the last store revision the published snapshot reflects.
func (r *Runner) Applied() int64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.applied
}

// WaitRev waits until the snapshot reflects store revision rev (a write of
// this process) or timeout passes; it reports whether it does.
func (r *Runner) WaitRev(rev int64, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	t := time.AfterFunc(timeout, func() {
		r.mu.Lock()
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	defer t.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.applied < rev {
		if !time.Now().Before(deadline) {
			return false
		}
		r.cond.Wait()
	}
	return true
}
