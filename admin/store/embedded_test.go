package store_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gw/admin/store"
	"gw/admin/store/storetest"
)

func openEmbedded(t *testing.T, dir string) *store.Embedded {
	t.Helper()
	s, err := store.OpenEmbedded(dir, 0)
	if err != nil {
		t.Fatalf("OpenEmbedded(%q): %v", dir, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestEmbeddedConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openEmbedded(t, t.TempDir()) })
}

func TestEmbeddedHistoryBound(t *testing.T) {
	s, err := store.OpenEmbedded(t.TempDir(), 8)
	if err != nil {
		t.Fatal(err)
	}
	testHistoryBound(t, s)
}

// Keys, values and revisions survive Close and a new Open; the revision
// goes on from where it was, and a watch from before the restart is
// ErrCompacted (the history was in memory), never a silent gap.
func TestEmbeddedRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openEmbedded(t, dir)
	a, err := s.Put(ctx, "/routes/1", []byte(`{"uri":"/a"}`), store.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Put(ctx, "/routes/1", []byte(`{"uri":"/b"}`), store.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "/routes/2", []byte(`x`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "/routes/2", 0); err != nil {
		t.Fatal(err)
	}
	_, revBefore, _ := s.List(ctx, "/")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openEmbedded(t, dir)
	got, err := s.Get(ctx, "/routes/1")
	if err != nil || string(got.Value) != `{"uri":"/b"}` || got.CreateRev != a.CreateRev || got.ModRev != b.ModRev {
		t.Fatalf("after restart: %+v, %v; want %+v", got, err, b)
	}
	if _, err := s.Get(ctx, "/routes/2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted key after restart: %v", err)
	}
	kvs, rev, err := s.List(ctx, "/")
	if err != nil || len(kvs) != 1 || rev != revBefore {
		t.Fatalf("List after restart: %d keys at revision %d (%v); want 1 at %d", len(kvs), rev, err, revBefore)
	}
	c, err := s.Put(ctx, "/routes/3", []byte(`y`), store.PutOptions{})
	if err != nil || c.ModRev != revBefore+1 {
		t.Fatalf("first write after restart at revision %d (%v); want %d", c.ModRev, err, revBefore+1)
	}
	r := <-s.Watch(ctx, "/", b.ModRev)
	if !errors.Is(r.Err, store.ErrCompacted) {
		t.Fatalf("watch from before the restart: %v; want ErrCompacted", r.Err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r = <-s.Watch(wctx, "/", revBefore+1)
	if r.Err != nil || len(r.Events) != 1 || r.Events[0].KV.Key != "/routes/3" {
		t.Fatalf("watch from the first revision after the restart: %+v", r)
	}
}

// TTL leases are persisted: one that ran out while the store was closed is
// gone as soon as it opens again (a delete at a new revision); one still
// running expires on time after the restart.
func TestEmbeddedTTLAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openEmbedded(t, dir)
	short, err := s.Put(ctx, "/t/short", []byte("1"), store.PutOptions{TTL: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	long, err := s.Put(ctx, "/t/long", []byte("2"), store.PutOptions{TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Past the short lease. At reopen the expiry goroutine may pop it
	// first; Open and Get must still not serve it (ci14 saw it served:
	// popping and deleting were two steps then).
	time.Sleep(time.Until(short.Expires) + 50*time.Millisecond)

	s = openEmbedded(t, dir)
	if _, err := s.Get(ctx, "/t/short"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("key whose TTL ran out while closed: %v; want ErrNotFound", err)
	}
	kv, err := s.Get(ctx, "/t/long")
	if err != nil || !kv.Expires.Equal(long.Expires) {
		t.Fatalf("running lease after restart: %+v, %v; want Expires %v", kv, err, long.Expires)
	}
	_, rev, _ := s.List(ctx, "/")
	if rev != long.ModRev+1 {
		t.Fatalf("revision after the expiry at open: %d; want %d", rev, long.ModRev+1)
	}
	w := s.Watch(ctx, "/t/", 0)
	select {
	case r := <-w:
		if r.Err != nil || len(r.Events) != 1 || r.Events[0].Type != store.EventDelete || r.Events[0].KV.Key != "/t/long" {
			t.Fatalf("expiry after restart: %+v", r)
		}
		if late := time.Since(long.Expires); late < 0 || late > time.Second {
			t.Fatalf("expired %s after its TTL", late)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no expiry event for the running lease")
	}
}

func TestEmbeddedDirectoryLock(t *testing.T) {
	dir := t.TempDir()
	openEmbedded(t, dir)
	_, err := store.OpenEmbedded(dir, 0)
	if err == nil {
		t.Fatal("second OpenEmbedded of one directory succeeded")
	}
	for _, want := range []string{dir, "--data-dir", "in use by another gw process"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("lock error %q does not mention %q", err, want)
		}
	}
}

// TestEmbeddedLockHolder is the other process of TestEmbeddedLockAcrossProcesses.
func TestEmbeddedLockHolder(t *testing.T) {
	dir := os.Getenv("GW_STORE_LOCK_DIR")
	if dir == "" {
		t.Skip("helper process of TestEmbeddedLockAcrossProcesses")
	}
	s, err := store.OpenEmbedded(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	os.Stdout.WriteString("LOCKED\n")
	time.Sleep(time.Minute) // killed by the parent
}

// A second process on the same directory fails with a clear error, and
// the lock goes with the process (a crash leaves no stale lock).
func TestEmbeddedLockAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestEmbeddedLockHolder$", "-test.v")
	cmd.Env = append(os.Environ(), "GW_STORE_LOCK_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	buf := make([]byte, 4096)
	var seen strings.Builder
	for !strings.Contains(seen.String(), "LOCKED") {
		n, err := out.Read(buf)
		if err != nil {
			t.Fatalf("helper process: %v (output %q)", err, seen.String())
		}
		seen.Write(buf[:n])
	}
	_, err = store.OpenEmbedded(dir, 0)
	if err == nil || !strings.Contains(err.Error(), "in use by another gw process (pid ") {
		t.Fatalf("open while another process holds the directory: %v", err)
	}
	_ = cmd.Process.Kill() // SIGKILL: no Close, no unlock
	_ = cmd.Wait()
	s, err := store.OpenEmbedded(dir, 0)
	if err != nil {
		t.Fatalf("open after the holder was killed: %v", err)
	}
	_ = s.Close()
}

func TestEmbeddedBadDataDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := store.OpenEmbedded(filepath.Join(file, "sub"), 0)
	if err == nil || !strings.Contains(err.Error(), "--data-dir") {
		t.Fatalf("data dir under a file: %v; want an error naming --data-dir", err)
	}
}
