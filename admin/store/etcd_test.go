package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gw/admin/store"
	"gw/admin/store/etcdtest"
	"gw/admin/store/storetest"
)

func openEtcd(t testing.TB, endpoint, prefix string) *store.Etcd {
	t.Helper()
	s, err := store.OpenEtcd(context.Background(), []string{endpoint}, prefix, 5*time.Second)
	if err != nil {
		t.Fatalf("OpenEtcd(%s, %q): %v", endpoint, prefix, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Every case starts an etcd of its own (temp data dir, free ports).
func TestEtcdConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openEtcd(t, etcdtest.Start(t).Endpoint(), "/gw")
	})
}

// The suite again with cases sharing one etcd under different prefixes:
// a store must only see its own prefix, whatever else the etcd holds and
// however its revisions move.
func TestEtcdConformanceSharedEtcd(t *testing.T) {
	srv := etcdtest.Start(t)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) store.Store {
		return openEtcd(t, srv.Endpoint(), fmt.Sprintf("/gwtest%d", n.Add(1)))
	})
}

// Two stores with different prefixes on one etcd never see each other's
// keys, even when one prefix is a string prefix of the other.
func TestEtcdPrefixIsolation(t *testing.T) {
	srv := etcdtest.Start(t)
	ctx := context.Background()
	a := openEtcd(t, srv.Endpoint(), "/gw")
	b := openEtcd(t, srv.Endpoint(), "/gw2/")
	if a.Prefix() != "/gw" || b.Prefix() != "/gw2" {
		t.Fatalf("prefixes %q, %q", a.Prefix(), b.Prefix())
	}
	wa := a.Watch(ctx, "", 0)
	if _, err := b.Put(ctx, "/routes/1", []byte("b"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	kv, err := a.Put(ctx, "/routes/1", []byte("a"), store.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kvs, _, err := a.List(ctx, "")
	if err != nil || len(kvs) != 1 || string(kvs[0].Value) != "a" {
		t.Fatalf("List under /gw: %v, %v", kvs, err)
	}
	// The key really is "/gw/routes/1" in etcd, where other tools find it.
	raw, err := a.Client().Get(ctx, "/gw/routes/1")
	if err != nil || len(raw.Kvs) != 1 || string(raw.Kvs[0].Value) != "a" || raw.Kvs[0].ModRevision != kv.ModRev {
		t.Fatalf("raw etcd key /gw/routes/1: %v, %v", raw, err)
	}
	select {
	case r := <-wa:
		if r.Err != nil || len(r.Events) != 1 || r.Events[0].KV.Key != "/routes/1" || string(r.Events[0].KV.Value) != "a" {
			t.Fatalf("watch under /gw: %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event")
	}
}

// etcd killed (SIGKILL) and restarted mid-run: the client reconnects by
// itself and every watch resumes after the last revision it delivered, so
// each change arrives exactly once, in order, including changes made
// before the watch saw them and right after etcd came back.
func TestEtcdRestartWatchResumes(t *testing.T) {
	srv := etcdtest.Start(t)
	watcher := openEtcd(t, srv.Endpoint(), "/gw")
	writer := openEtcd(t, srv.Endpoint(), "/gw")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	w1 := watcher.Watch(ctx, "/routes/", 0)
	var want []int64
	write := func(i int) {
		t.Helper()
		kv, err := writer.Put(ctx, fmt.Sprintf("/routes/%d", i), []byte(fmt.Sprint(i)), store.PutOptions{})
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		want = append(want, kv.ModRev)
	}
	for i := 0; i < 10; i++ {
		write(i)
	}
	// A second watch that has seen nothing yet when etcd dies.
	w2 := watcher.Watch(ctx, "/routes/", want[len(want)-1]+1)
	if err := writer.Delete(ctx, "/routes/0", 0); err != nil {
		t.Fatal(err)
	}
	_, delRev, err := writer.List(ctx, "/routes/")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, delRev)
	srv.Kill()

	// While etcd is down a write fails (by its context), it does not hang.
	dctx, dcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = writer.Put(dctx, "/routes/down", []byte("x"), store.PutOptions{})
	dcancel()
	if err == nil {
		t.Fatal("write succeeded with etcd down")
	}
	time.Sleep(300 * time.Millisecond)
	srv.Restart()
	// A read is retried by the client until the connection is back; then
	// writes go through at once.
	if _, err := writer.Get(ctx, "/routes/1"); err != nil {
		t.Fatalf("read after the restart: %v", err)
	}
	for i := 10; i < 20; i++ {
		write(i)
	}

	collect := func(name string, ch <-chan store.WatchResponse, want []int64) {
		t.Helper()
		var got []int64
		timeout := time.After(20 * time.Second)
		for len(got) < len(want) {
			select {
			case r, ok := <-ch:
				if !ok || r.Err != nil {
					t.Fatalf("%s: watch ended (%v) after revisions %v; want %v", name, r.Err, got, want)
				}
				for _, e := range r.Events {
					got = append(got, e.KV.ModRev)
				}
			case <-timeout:
				t.Fatalf("%s: revisions %v within 20s; want %v", name, got, want)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: revisions %v; want %v (nothing lost, nothing twice)", name, got, want)
		}
		select {
		case r := <-ch:
			t.Fatalf("%s: extra watch response %+v", name, r)
		case <-time.After(300 * time.Millisecond):
		}
	}
	collect("watch from before the writes", w1, want)
	collect("watch that had seen nothing", w2, want[10:])
}

// etcd unreachable at startup: Open fails within the dial timeout with an
// error naming the flag, instead of hanging or starting without a store.
func TestEtcdOpenUnreachable(t *testing.T) {
	start := time.Now()
	_, err := store.Open(context.Background(), store.Config{Kind: "etcd", Endpoints: []string{"http://127.0.0.1:1"}, DialTimeout: 500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "--etcd-endpoints") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("Open of an unreachable etcd: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Open took %s with a 500ms dial timeout", d)
	}
}
