// Package storetest is the conformance suite of store.Store: every rule of
// the interface, run against each implementation (memory, embedded, etcd)
// so the management API can rely on one behaviour whatever --store says.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"gw/admin/store"
)

// TTL is the lifetime of keys in the TTL cases: etcd leases count whole
// seconds, so one second is the shortest every store honours.
const TTL = time.Second

// expiryWait bounds how long a TTL key may outlive its TTL (etcd checks
// leases every 500 ms and rounds short TTLs up to its minimum).
const expiryWait = 10 * time.Second

// Run runs the suite. open returns a new, empty store for each case and
// arranges its cleanup; a case may Close the store itself (Close must be
// idempotent).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	cases := []struct {
		name string
		f    func(t *testing.T, s store.Store)
	}{
		{"GetMissing", testGetMissing},
		{"PutGet", testPutGet},
		{"ValueExact", testValueExact},
		{"BadKey", testBadKey},
		{"MustNotExist", testMustNotExist},
		{"PrevRev", testPrevRev},
		{"Delete", testDelete},
		{"DeleteConditional", testDeleteConditional},
		{"List", testList},
		{"ListRevision", testListRevision},
		{"WatchFromNow", testWatchFromNow},
		{"WatchFromRevision", testWatchFromRevision},
		{"WatchPrefix", testWatchPrefix},
		{"WatchDelete", testWatchDelete},
		{"WatchCancel", testWatchCancel},
		{"WatchCompacted", testWatchCompacted},
		{"TTL", testTTL},
		{"TTLWatchAcrossExpiry", testTTLWatchAcrossExpiry},
		{"TTLReplaced", testTTLReplaced},
		{"ConcurrentWriters", testConcurrentWriters},
		{"ConcurrentCAS", testConcurrentCAS},
		{"Close", testClose},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.f(t, open(t))
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func put(t *testing.T, s store.Store, key, value string, opts store.PutOptions) store.KV {
	t.Helper()
	kv, err := s.Put(ctxT(t), key, []byte(value), opts)
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	if kv.Key != key || string(kv.Value) != value {
		t.Fatalf("Put(%q) returned %q=%q; want %q=%q", key, kv.Key, kv.Value, key, value)
	}
	if kv.ModRev <= 0 || kv.CreateRev <= 0 || kv.CreateRev > kv.ModRev {
		t.Fatalf("Put(%q) returned revisions create=%d mod=%d", key, kv.CreateRev, kv.ModRev)
	}
	return kv
}

func get(t *testing.T, s store.Store, key string) store.KV {
	t.Helper()
	kv, err := s.Get(ctxT(t), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return kv
}

func del(t *testing.T, s store.Store, key string) {
	t.Helper()
	if err := s.Delete(ctxT(t), key, 0); err != nil {
		t.Fatalf("Delete(%q): %v", key, err)
	}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v; want %v", what, err, want)
	}
}

func sameKV(t *testing.T, what string, got, want store.KV) {
	t.Helper()
	if got.Key != want.Key || !bytes.Equal(got.Value, want.Value) || got.CreateRev != want.CreateRev || got.ModRev != want.ModRev {
		t.Fatalf("%s: got %s; want %s", what, fmtKV(got), fmtKV(want))
	}
}

func fmtKV(kv store.KV) string {
	return fmt.Sprintf("{%q=%q create=%d mod=%d}", kv.Key, kv.Value, kv.CreateRev, kv.ModRev)
}

func fmtEvent(e store.Event) string {
	typ := "put"
	if e.Type == store.EventDelete {
		typ = "delete"
	}
	return typ + fmtKV(e.KV)
}

// watcher collects a Watch channel's events for assertions.
type watcher struct {
	t  *testing.T
	ch <-chan store.WatchResponse
}

func watch(t *testing.T, s store.Store, prefix string, fromRev int64) *watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &watcher{t: t, ch: s.Watch(ctx, prefix, fromRev)}
}

// next returns the next n events (from one or more responses), failing on
// an error response or when they do not arrive within d.
func (w *watcher) next(n int, d time.Duration) []store.Event {
	w.t.Helper()
	var evs []store.Event
	timer := time.NewTimer(d)
	defer timer.Stop()
	for len(evs) < n {
		select {
		case r, ok := <-w.ch:
			if !ok {
				w.t.Fatalf("watch channel closed after %d of %d events", len(evs), n)
			}
			if r.Err != nil {
				w.t.Fatalf("watch error after %d of %d events: %v", len(evs), n, r.Err)
			}
			evs = append(evs, r.Events...)
		case <-timer.C:
			w.t.Fatalf("watch: %d of %d events within %s: %v", len(evs), n, d, evs)
		}
	}
	if len(evs) > n {
		w.t.Fatalf("watch: got %d events; want %d: %v", len(evs), n, evs)
	}
	return evs
}

// quiet fails when an event arrives within d.
func (w *watcher) quiet(d time.Duration) {
	w.t.Helper()
	select {
	case r, ok := <-w.ch:
		if ok {
			w.t.Fatalf("unexpected watch response: events %v, error %v", r.Events, r.Err)
		}
		w.t.Fatalf("watch channel closed unexpectedly")
	case <-time.After(d):
	}
}

// end waits for an error response (when want is not nil) and the channel's
// close.
func (w *watcher) end(want error, d time.Duration) {
	w.t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case r, ok := <-w.ch:
			if !ok {
				if want != nil {
					w.t.Fatalf("watch channel closed without the %v error", want)
				}
				return
			}
			if r.Err != nil {
				if want != nil && !errors.Is(r.Err, want) {
					w.t.Fatalf("watch error %v; want %v", r.Err, want)
				}
				want = nil
			}
		case <-timer.C:
			w.t.Fatalf("watch channel not closed within %s", d)
		}
	}
}

func wantEvent(t *testing.T, got store.Event, typ store.EventType, key, value string, modRev int64) {
	t.Helper()
	if got.Type != typ || got.KV.Key != key || (typ == store.EventPut && string(got.KV.Value) != value) || (modRev > 0 && got.KV.ModRev != modRev) {
		want := store.Event{Type: typ, KV: store.KV{Key: key, Value: []byte(value), ModRev: modRev}}
		t.Fatalf("event %s; want %s", fmtEvent(got), fmtEvent(want))
	}
	if typ == store.EventDelete && len(got.KV.Value) != 0 {
		t.Fatalf("delete event %s carries a value", fmtEvent(got))
	}
}

func testGetMissing(t *testing.T, s store.Store) {
	_, err := s.Get(ctxT(t), "/routes/missing")
	wantErr(t, "Get of a missing key", err, store.ErrNotFound)
}

func testPutGet(t *testing.T, s store.Store) {
	a := put(t, s, "/routes/1", `{"uri":"/a"}`, store.PutOptions{})
	if a.CreateRev != a.ModRev {
		t.Fatalf("created key: create=%d mod=%d; want equal", a.CreateRev, a.ModRev)
	}
	if !a.Expires.IsZero() {
		t.Fatalf("key without TTL expires at %v", a.Expires)
	}
	sameKV(t, "Get after create", get(t, s, "/routes/1"), a)

	b := put(t, s, "/routes/1", `{"uri":"/b"}`, store.PutOptions{})
	if b.CreateRev != a.CreateRev || b.ModRev <= a.ModRev {
		t.Fatalf("replaced key: %s after %s; want the same CreateRev and a higher ModRev", fmtKV(b), fmtKV(a))
	}
	sameKV(t, "Get after replace", get(t, s, "/routes/1"), b)

	c := put(t, s, "/routes/2", `{}`, store.PutOptions{})
	if c.ModRev <= b.ModRev || c.CreateRev != c.ModRev {
		t.Fatalf("second key %s after %s; want a higher revision", fmtKV(c), fmtKV(b))
	}
}

func testValueExact(t *testing.T, s store.Store) {
	f := func(key string, value []byte) {
		t.Helper()
		buf := append([]byte{}, value...)
		if _, err := s.Put(ctxT(t), key, buf, store.PutOptions{}); err != nil {
			t.Fatalf("Put(%q): %v", key, err)
		}
		for i := range buf {
			buf[i] = 'X' // the store must have copied the caller's buffer
		}
		got := get(t, s, key)
		if !bytes.Equal(got.Value, value) || got.Value == nil {
			t.Fatalf("Get(%q) = %q (nil %t); want %q", key, got.Value, got.Value == nil, value)
		}
		got.Value = append(got.Value[:0], "changed"...) // nor may a reader change it
		if again := get(t, s, key); !bytes.Equal(again.Value, value) {
			t.Fatalf("Get(%q) after changing a returned value = %q; want %q", key, again.Value, value)
		}
	}
	f("/v/json", []byte(`{"b": 1,  "a": [true, null], "z": "\u00e9"}`))
	f("/v/binary", []byte{0, 1, 2, 0xff, 0xfe, '\n', 0})
	f("/v/empty", []byte{})
	f("/v/unicode/ключ", []byte("значение"))
}

func testBadKey(t *testing.T, s store.Store) {
	for _, key := range []string{"", "routes/1"} {
		if _, err := s.Put(ctxT(t), key, []byte("x"), store.PutOptions{}); err == nil {
			t.Fatalf("Put(%q) succeeded; keys are paths starting with /", key)
		}
	}
	if _, err := s.Put(ctxT(t), "/k", []byte("x"), store.PutOptions{PrevRev: -2}); err == nil {
		t.Fatalf("Put with PrevRev -2 succeeded")
	}
	if _, err := s.Put(ctxT(t), "/k", []byte("x"), store.PutOptions{TTL: -time.Second}); err == nil {
		t.Fatalf("Put with a negative TTL succeeded")
	}
	_, err := s.Get(ctxT(t), "/k")
	wantErr(t, "Get after refused puts", err, store.ErrNotFound)
}

func testMustNotExist(t *testing.T, s store.Store) {
	create := store.PutOptions{PrevRev: store.MustNotExist}
	a := put(t, s, "/ssls/1", "first", create)
	_, err := s.Put(ctxT(t), "/ssls/1", []byte("second"), create)
	wantErr(t, "create of an existing key", err, store.ErrConflict)
	sameKV(t, "Get after a refused create", get(t, s, "/ssls/1"), a)

	del(t, s, "/ssls/1")
	b := put(t, s, "/ssls/1", "third", create)
	if b.CreateRev <= a.ModRev {
		t.Fatalf("re-created key %s; want a new CreateRev above %d", fmtKV(b), a.ModRev)
	}
}

func testPrevRev(t *testing.T, s store.Store) {
	a := put(t, s, "/upstreams/1", "v1", store.PutOptions{})
	b := put(t, s, "/upstreams/1", "v2", store.PutOptions{PrevRev: a.ModRev})
	_, err := s.Put(ctxT(t), "/upstreams/1", []byte("stale"), store.PutOptions{PrevRev: a.ModRev})
	wantErr(t, "Put with a stale PrevRev", err, store.ErrConflict)
	sameKV(t, "Get after a refused put", get(t, s, "/upstreams/1"), b)

	_, err = s.Put(ctxT(t), "/upstreams/missing", []byte("x"), store.PutOptions{PrevRev: b.ModRev})
	wantErr(t, "Put with PrevRev of a missing key", err, store.ErrConflict)
	_, err = s.Get(ctxT(t), "/upstreams/missing")
	wantErr(t, "Get after a refused conditional create", err, store.ErrNotFound)

	// The revision of another key is not the key's revision.
	o := put(t, s, "/upstreams/2", "other", store.PutOptions{})
	_, err = s.Put(ctxT(t), "/upstreams/1", []byte("x"), store.PutOptions{PrevRev: o.ModRev})
	wantErr(t, "Put with another key's revision", err, store.ErrConflict)
}

func testDelete(t *testing.T, s store.Store) {
	wantErr(t, "Delete of a missing key", s.Delete(ctxT(t), "/routes/none", 0), store.ErrNotFound)
	put(t, s, "/routes/1", "x", store.PutOptions{})
	put(t, s, "/routes/10", "y", store.PutOptions{})
	del(t, s, "/routes/1")
	_, err := s.Get(ctxT(t), "/routes/1")
	wantErr(t, "Get after Delete", err, store.ErrNotFound)
	wantErr(t, "second Delete", s.Delete(ctxT(t), "/routes/1", 0), store.ErrNotFound)
	get(t, s, "/routes/10") // a delete is of one key, never a prefix
}

func testDeleteConditional(t *testing.T, s store.Store) {
	a := put(t, s, "/consumers/jack", "v1", store.PutOptions{})
	b := put(t, s, "/consumers/jack", "v2", store.PutOptions{})
	wantErr(t, "Delete with a stale revision", s.Delete(ctxT(t), "/consumers/jack", a.ModRev), store.ErrConflict)
	sameKV(t, "Get after a refused delete", get(t, s, "/consumers/jack"), b)
	if err := s.Delete(ctxT(t), "/consumers/jack", b.ModRev); err != nil {
		t.Fatalf("Delete with the current revision: %v", err)
	}
	wantErr(t, "conditional Delete of a missing key", s.Delete(ctxT(t), "/consumers/jack", b.ModRev), store.ErrNotFound)
}

func testList(t *testing.T, s store.Store) {
	kvs, _, err := s.List(ctxT(t), "/routes/")
	if err != nil || len(kvs) != 0 {
		t.Fatalf("List of an empty store = %v, %v; want nothing", kvs, err)
	}
	// Written out of order; listed in key (byte) order.
	keys := []string{"/routes/b", "/routes/a", "/routes/10", "/routes/1", "/routes/2", "/routesx/1", "/services/1", "/route"}
	written := map[string]store.KV{}
	for i, k := range keys {
		written[k] = put(t, s, k, fmt.Sprint("v", i), store.PutOptions{})
	}
	f := func(prefix string, want ...string) {
		t.Helper()
		kvs, _, err := s.List(ctxT(t), prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		var got []string
		for _, kv := range kvs {
			got = append(got, kv.Key)
			sameKV(t, "List("+prefix+") entry", kv, written[kv.Key])
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("List(%q) = %v; want %v", prefix, got, want)
		}
	}
	f("/routes/", "/routes/1", "/routes/10", "/routes/2", "/routes/a", "/routes/b")
	f("/routes", "/routes/1", "/routes/10", "/routes/2", "/routes/a", "/routes/b", "/routesx/1")
	f("/routes/1", "/routes/1", "/routes/10")
	f("/services/", "/services/1")
	f("/nothing/")
	all := append([]string{}, keys...)
	sort.Strings(all)
	f("", all...)
	f("/", all...)
}

func testListRevision(t *testing.T, s store.Store) {
	a := put(t, s, "/r/a", "1", store.PutOptions{})
	b := put(t, s, "/r/b", "2", store.PutOptions{})
	kvs, rev, err := s.List(ctxT(t), "/r/")
	if err != nil || len(kvs) != 2 {
		t.Fatalf("List = %d keys, %v", len(kvs), err)
	}
	if rev < b.ModRev {
		t.Fatalf("List revision %d below the last write %d", rev, b.ModRev)
	}
	// The revision is store-wide: a write elsewhere moves it too.
	o := put(t, s, "/other/x", "3", store.PutOptions{})
	_, rev2, err := s.List(ctxT(t), "/r/")
	if err != nil || rev2 < o.ModRev {
		t.Fatalf("List revision %d after a write at %d elsewhere (%v)", rev2, o.ModRev, err)
	}
	// A delete is a revision.
	del(t, s, "/r/a")
	_, rev3, err := s.List(ctxT(t), "/r/")
	if err != nil || rev3 <= rev2 {
		t.Fatalf("List revision %d after a delete; want above %d (%v)", rev3, rev2, err)
	}
	// Watching from List's revision+1 sees exactly the later changes.
	w := watch(t, s, "/r/", rev3+1)
	c := put(t, s, "/r/c", "4", store.PutOptions{})
	evs := w.next(1, 5*time.Second)
	wantEvent(t, evs[0], store.EventPut, "/r/c", "4", c.ModRev)
	_ = a
}

func testWatchFromNow(t *testing.T, s store.Store) {
	put(t, s, "/w/old", "before", store.PutOptions{})
	w := watch(t, s, "/w/", 0)
	// Written right after Watch returns: "from now" is when Watch was
	// called, so this must not be lost.
	a := put(t, s, "/w/a", "1", store.PutOptions{})
	b := put(t, s, "/w/a", "2", store.PutOptions{})
	evs := w.next(2, 5*time.Second)
	wantEvent(t, evs[0], store.EventPut, "/w/a", "1", a.ModRev)
	wantEvent(t, evs[1], store.EventPut, "/w/a", "2", b.ModRev)
	if evs[1].KV.CreateRev != a.ModRev {
		t.Fatalf("replace event CreateRev %d; want %d", evs[1].KV.CreateRev, a.ModRev)
	}
	w.quiet(200 * time.Millisecond)
}

func testWatchFromRevision(t *testing.T, s store.Store) {
	a := put(t, s, "/w/a", "1", store.PutOptions{})
	b := put(t, s, "/w/b", "2", store.PutOptions{})
	del(t, s, "/w/a")
	c := put(t, s, "/w/c", "3", store.PutOptions{})

	w := watch(t, s, "/w/", b.ModRev)
	evs := w.next(3, 5*time.Second)
	wantEvent(t, evs[0], store.EventPut, "/w/b", "2", b.ModRev)
	wantEvent(t, evs[1], store.EventDelete, "/w/a", "", 0)
	wantEvent(t, evs[2], store.EventPut, "/w/c", "3", c.ModRev)
	if d := evs[1].KV.ModRev; d <= b.ModRev || d >= c.ModRev {
		t.Fatalf("delete at revision %d; want between %d and %d", d, b.ModRev, c.ModRev)
	}
	// Then live changes on the same channel.
	e := put(t, s, "/w/d", "4", store.PutOptions{})
	wantEvent(t, w.next(1, 5*time.Second)[0], store.EventPut, "/w/d", "4", e.ModRev)

	// From the very first revision: every change, in order.
	all := watch(t, s, "/w/", a.ModRev).next(5, 5*time.Second)
	for i := 1; i < len(all); i++ {
		if all[i].KV.ModRev <= all[i-1].KV.ModRev {
			t.Fatalf("events out of revision order: %v", all)
		}
	}
	// From a future revision: nothing until it is reached.
	fut := watch(t, s, "/w/", e.ModRev+2)
	put(t, s, "/w/skipped", "5", store.PutOptions{})
	g := put(t, s, "/w/seen", "6", store.PutOptions{})
	wantEvent(t, fut.next(1, 5*time.Second)[0], store.EventPut, "/w/seen", "6", g.ModRev)
}

func testWatchPrefix(t *testing.T, s store.Store) {
	w := watch(t, s, "/routes/", 0)
	put(t, s, "/services/1", "s", store.PutOptions{})
	put(t, s, "/routesx/1", "x", store.PutOptions{})
	r := put(t, s, "/routes/1", "r", store.PutOptions{})
	evs := w.next(1, 5*time.Second)
	wantEvent(t, evs[0], store.EventPut, "/routes/1", "r", r.ModRev)
	w.quiet(200 * time.Millisecond)

	everything := watch(t, s, "", r.ModRev-2)
	if got := everything.next(3, 5*time.Second); got[0].KV.Key != "/services/1" || got[2].KV.Key != "/routes/1" {
		t.Fatalf("watch of every key: %v", got)
	}
}

func testWatchDelete(t *testing.T, s store.Store) {
	a := put(t, s, "/d/1", "x", store.PutOptions{})
	w := watch(t, s, "/d/", 0)
	del(t, s, "/d/1")
	ev := w.next(1, 5*time.Second)[0]
	wantEvent(t, ev, store.EventDelete, "/d/1", "", 0)
	if ev.KV.ModRev <= a.ModRev {
		t.Fatalf("delete event at revision %d; want above the put's %d", ev.KV.ModRev, a.ModRev)
	}
	b := put(t, s, "/d/1", "y", store.PutOptions{})
	if b.ModRev <= ev.KV.ModRev || b.CreateRev != b.ModRev {
		t.Fatalf("re-created key %s after the delete at %d", fmtKV(b), ev.KV.ModRev)
	}
	wantEvent(t, w.next(1, 5*time.Second)[0], store.EventPut, "/d/1", "y", b.ModRev)
}

func testWatchCancel(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{t: t, ch: s.Watch(ctx, "/c/", 0)}
	put(t, s, "/c/1", "x", store.PutOptions{})
	w.next(1, 5*time.Second)
	cancel()
	w.end(nil, 5*time.Second)
	// The store goes on working for others.
	w2 := watch(t, s, "/c/", 0)
	put(t, s, "/c/2", "y", store.PutOptions{})
	w2.next(1, 5*time.Second)
}

func testWatchCompacted(t *testing.T, s store.Store) {
	c, ok := s.(store.Compacter)
	if !ok {
		t.Fatalf("%T does not implement store.Compacter", s)
	}
	a := put(t, s, "/k/1", "a", store.PutOptions{})
	b := put(t, s, "/k/1", "b", store.PutOptions{})
	cc := put(t, s, "/k/2", "c", store.PutOptions{})
	if err := c.Compact(ctxT(t), b.ModRev); err != nil {
		t.Fatalf("Compact(%d): %v", b.ModRev, err)
	}
	watch(t, s, "/k/", a.ModRev).end(store.ErrCompacted, 5*time.Second)
	// The compaction revision itself is still there.
	evs := watch(t, s, "/k/", b.ModRev).next(2, 5*time.Second)
	wantEvent(t, evs[0], store.EventPut, "/k/1", "b", b.ModRev)
	wantEvent(t, evs[1], store.EventPut, "/k/2", "c", cc.ModRev)
	// Compacting again at or below is no error.
	if err := c.Compact(ctxT(t), a.ModRev); err != nil {
		t.Fatalf("Compact below the compacted revision: %v", err)
	}
	// Reads are unaffected.
	sameKV(t, "Get after Compact", get(t, s, "/k/1"), b)
}

func waitGone(t *testing.T, s store.Store, key string, deadline time.Time) {
	t.Helper()
	for {
		_, err := s.Get(ctxT(t), key)
		if errors.Is(err, store.ErrNotFound) {
			return
		}
		if err != nil {
			t.Fatalf("Get(%q) while waiting for its expiry: %v", key, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("key %q still there %s after its TTL", key, expiryWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func testTTL(t *testing.T, s store.Store) {
	start := time.Now()
	kv := put(t, s, "/t/1", "short", store.PutOptions{TTL: TTL})
	put(t, s, "/t/2", "forever", store.PutOptions{})
	if kv.Expires.Before(start.Add(TTL-10*time.Millisecond)) || kv.Expires.After(time.Now().Add(TTL+2*time.Second)) {
		t.Fatalf("Put with TTL %s at %v: Expires %v", TTL, start, kv.Expires)
	}
	if got := get(t, s, "/t/1"); got.Expires.IsZero() {
		t.Fatalf("Get of a TTL key: zero Expires")
	}
	waitGone(t, s, "/t/1", kv.Expires.Add(expiryWait))
	if time.Since(start) < TTL-10*time.Millisecond {
		t.Fatalf("TTL key gone after %s; want at least %s", time.Since(start), TTL)
	}
	kvs, _, err := s.List(ctxT(t), "/t/")
	if err != nil || len(kvs) != 1 || kvs[0].Key != "/t/2" {
		t.Fatalf("List after expiry = %v, %v; want /t/2 only", kvs, err)
	}
}

func testTTLWatchAcrossExpiry(t *testing.T, s store.Store) {
	live := watch(t, s, "/t/", 0)
	kv := put(t, s, "/t/1", "short", store.PutOptions{TTL: TTL})
	after := put(t, s, "/t/2", "other", store.PutOptions{})
	evs := live.next(2, 5*time.Second)
	wantEvent(t, evs[0], store.EventPut, "/t/1", "short", kv.ModRev)
	if evs[0].KV.Expires.IsZero() {
		t.Fatalf("put event of a TTL key: zero Expires")
	}
	// The expiry is a delete like any other, at its own revision.
	exp := live.next(1, TTL+expiryWait)[0]
	wantEvent(t, exp, store.EventDelete, "/t/1", "", 0)
	if exp.KV.ModRev <= after.ModRev {
		t.Fatalf("expiry at revision %d; want above %d", exp.KV.ModRev, after.ModRev)
	}
	// A watch from before the expiry, started after it, replays it.
	replay := watch(t, s, "/t/", kv.ModRev).next(3, 5*time.Second)
	wantEvent(t, replay[0], store.EventPut, "/t/1", "short", kv.ModRev)
	wantEvent(t, replay[1], store.EventPut, "/t/2", "other", after.ModRev)
	wantEvent(t, replay[2], store.EventDelete, "/t/1", "", exp.KV.ModRev)
	_, err := s.Get(ctxT(t), "/t/1")
	wantErr(t, "Get after expiry", err, store.ErrNotFound)
}

func testTTLReplaced(t *testing.T, s store.Store) {
	// A write without TTL replaces the lease: the key stays.
	a := put(t, s, "/t/keep", "ttl", store.PutOptions{TTL: TTL})
	b := put(t, s, "/t/keep", "no ttl", store.PutOptions{PrevRev: a.ModRev})
	if !b.Expires.IsZero() {
		t.Fatalf("replaced without TTL: Expires %v", b.Expires)
	}
	// A TTL key replaced by another TTL key lives by the new TTL.
	c := put(t, s, "/t/renew", "first", store.PutOptions{TTL: TTL})
	time.Sleep(TTL / 2)
	d := put(t, s, "/t/renew", "second", store.PutOptions{TTL: 4 * TTL})
	if !d.Expires.After(c.Expires) {
		t.Fatalf("renewed TTL: Expires %v not after %v", d.Expires, c.Expires)
	}
	// The first TTL has passed (with margin for etcd's lease checks) and
	// neither key went with it.
	time.Sleep(c.Expires.Sub(time.Now()) + 1500*time.Millisecond)
	sameKV(t, "key replaced without TTL, after the old TTL", get(t, s, "/t/keep"), b)
	sameKV(t, "key renewed with a longer TTL, after the old TTL", get(t, s, "/t/renew"), d)
	del(t, s, "/t/renew")
}

func testConcurrentWriters(t *testing.T, s store.Store) {
	const writers, each = 8, 25
	w := watch(t, s, "/cw/", 0)
	var (
		mu   sync.Mutex
		revs = map[int64]string{}
		wg   sync.WaitGroup
		errs = make(chan error, writers)
	)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last int64
			for j := 0; j < each; j++ {
				// Half the writers share keys, half write their own.
				key := fmt.Sprintf("/cw/%d/%d", i%2*i, j%5)
				kv, err := s.Put(context.Background(), key, []byte(fmt.Sprint(i, "-", j)), store.PutOptions{})
				if err != nil {
					errs <- err
					return
				}
				if kv.ModRev <= last {
					errs <- fmt.Errorf("writer %d: revision %d after its own %d", i, kv.ModRev, last)
					return
				}
				last = kv.ModRev
				mu.Lock()
				if other, dup := revs[kv.ModRev]; dup {
					mu.Unlock()
					errs <- fmt.Errorf("revision %d given to %s and %s", kv.ModRev, other, key)
					return
				}
				revs[kv.ModRev] = key
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	evs := w.next(writers*each, 20*time.Second)
	for i, ev := range evs {
		if i > 0 && ev.KV.ModRev <= evs[i-1].KV.ModRev {
			t.Fatalf("watch event %d at revision %d after %d", i, ev.KV.ModRev, evs[i-1].KV.ModRev)
		}
		if revs[ev.KV.ModRev] != ev.KV.Key {
			t.Fatalf("watch event %s; the write at that revision was %q", fmtEvent(ev), revs[ev.KV.ModRev])
		}
	}
}

// testConcurrentCAS: read-modify-write loops on one counter with PrevRev;
// no increment may be lost.
func testConcurrentCAS(t *testing.T, s store.Store) {
	const workers, each = 4, 15
	put(t, s, "/cas/n", "0", store.PutOptions{})
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				kv, err := s.Get(context.Background(), "/cas/n")
				if err != nil {
					errs <- err
					return
				}
				var n int
				fmt.Sscan(string(kv.Value), &n)
				_, err = s.Put(context.Background(), "/cas/n", []byte(fmt.Sprint(n+1)), store.PutOptions{PrevRev: kv.ModRev})
				switch {
				case err == nil:
					done++
				case !errors.Is(err, store.ErrConflict):
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := string(get(t, s, "/cas/n").Value); got != fmt.Sprint(workers*each) {
		t.Fatalf("counter = %s after %d increments", got, workers*each)
	}
}

func testClose(t *testing.T, s store.Store) {
	put(t, s, "/x/1", "x", store.PutOptions{})
	w := watch(t, s, "/x/", 0)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	w.end(nil, 5*time.Second)
	ctx := ctxT(t)
	_, err := s.Get(ctx, "/x/1")
	wantErr(t, "Get after Close", err, store.ErrClosed)
	_, err = s.Put(ctx, "/x/1", []byte("y"), store.PutOptions{})
	wantErr(t, "Put after Close", err, store.ErrClosed)
	wantErr(t, "Delete after Close", s.Delete(ctx, "/x/1", 0), store.ErrClosed)
	_, _, err = s.List(ctx, "/x/")
	wantErr(t, "List after Close", err, store.ErrClosed)
	after := &watcher{t: t, ch: s.Watch(ctx, "/x/", 0)}
	after.end(store.ErrClosed, 5*time.Second)
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
