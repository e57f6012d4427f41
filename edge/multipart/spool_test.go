package multipart

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSpoolFileLeavesNothing: the spill file is unlinked while the request
// runs and its descriptor is closed by Release.
func TestSpoolFileLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	in, ctype := build(t, testBoundary, file("file", "a.wav", payload(100<<10, 1)), text("model", "m"))
	r, err := Acquire(bytes.NewReader(in), []byte(ctype), Limits{SpoolMemBytes: 16 << 10, TempDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Prepare("model"); err != nil {
		t.Fatal(err)
	}
	if r.spool.file == nil {
		t.Fatal("the file part did not spill to disk")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("spill file visible in %s: %v", dir, ents)
	}
	f := r.spool.file
	Release(r)
	if _, err := f.Stat(); err == nil {
		t.Fatal("spill file still open after Release")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Fatalf("files left: %v", m)
	}
}

// TestSpoolError: a temp directory that cannot be used fails with ErrSpool
// (the gateway's fault, not the caller's).
func TestSpoolError(t *testing.T) {
	in, ctype := build(t, testBoundary, file("file", "a.wav", payload(100<<10, 1)), text("model", "m"))
	_, err := run(t, bytes.NewReader(in), ctype, Limits{SpoolMemBytes: 16 << 10, TempDir: "/nonexistent/gw-multipart"}, []string{"model"}, nil)
	if !errors.Is(err, ErrSpool) {
		t.Fatalf("err = %v; want ErrSpool", err)
	}
}
