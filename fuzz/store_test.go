package fuzz

import (
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"gw/admin/store"
)

// FuzzStoreEmbeddedFile: whatever the embedded store's file holds (a
// damaged disk, a file from another version), opening it returns an error
// or a working store, never a panic, and a working store keeps counting
// revisions from the stored one.
func FuzzStoreEmbeddedFile(f *testing.F) {
	rec := func(create, mod, exp uint64, value string) []byte {
		b := make([]byte, 24+len(value))
		binary.BigEndian.PutUint64(b[0:], create)
		binary.BigEndian.PutUint64(b[8:], mod)
		binary.BigEndian.PutUint64(b[16:], exp)
		copy(b[24:], value)
		return b
	}
	rev := func(r uint64) []byte { return binary.BigEndian.AppendUint64(nil, r) }
	f.Add([]byte("1"), rev(3), []byte("/routes/1"), rec(1, 3, 0, `{"uri":"/"}`))
	f.Add([]byte("1"), rev(3), []byte("/routes/1"), rec(1, 3, 1, `x`)) // a lease long past
	f.Add([]byte("1"), rev(1<<63), []byte("/k"), rec(1<<63, 1<<63, 1<<63, ``))
	f.Add([]byte("2"), rev(3), []byte("/k"), rec(1, 1, 0, ``))
	f.Add([]byte("1"), []byte{1, 2}, []byte("/k"), []byte{0, 1})
	f.Add([]byte("1"), rev(0), []byte("k"), rec(0, 0, 0, ``))
	f.Fuzz(func(t *testing.T, format, revRec, key, value []byte) {
		if len(key) == 0 || len(key) > 1024 {
			return
		}
		dir := t.TempDir()
		db, err := bolt.Open(filepath.Join(dir, "gw.db"), 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			meta, _ := tx.CreateBucket([]byte("meta"))
			kv, _ := tx.CreateBucket([]byte("kv"))
			if len(format) > 0 {
				_ = meta.Put([]byte("format"), format)
			}
			if len(revRec) > 0 {
				_ = meta.Put([]byte("rev"), revRec)
			}
			return kv.Put(key, value)
		})
		if err != nil {
			t.Fatal(err)
		}
		_ = db.Close()

		s, err := store.OpenEmbedded(dir, 0)
		if err != nil {
			return
		}
		defer s.Close()
		ctx := context.Background()
		if _, err := s.Get(ctx, string(key)); err != nil && !errors.Is(err, store.ErrNotFound) && !strings.Contains(err.Error(), "corrupt") {
			t.Fatalf("Get: %v", err)
		}
		kvs, before, _ := s.List(ctx, "")
		for _, kv := range kvs {
			if kv.ModRev > before {
				t.Fatalf("List at revision %d holds %q at revision %d", before, kv.Key, kv.ModRev)
			}
		}
		kv, err := s.Put(ctx, "/fuzz", []byte("v"), store.PutOptions{})
		if err != nil {
			t.Fatalf("Put on an opened store: %v", err)
		}
		if kv.ModRev <= before && before >= 0 && before < 1<<62 {
			t.Fatalf("Put at revision %d after the stored revision %d", kv.ModRev, before)
		}
	})
}

// FuzzStoreParseEndpoints: --etcd-endpoints parsing never panics, and what
// it accepts parses again to the same list.
func FuzzStoreParseEndpoints(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:2379", "https://a:1,b:2", " , ", "grpc://x:1", "http://[::1]:2379", "http://h:1/p", ":", "h:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		eps, err := store.ParseEndpoints([]string{in})
		if err != nil {
			return
		}
		for _, ep := range eps {
			if ep == "" || strings.Contains(ep, ",") {
				t.Fatalf("accepted endpoint %q from %q", ep, in)
			}
		}
		again, err := store.ParseEndpoints(eps)
		if err != nil || strings.Join(again, ",") != strings.Join(eps, ",") {
			t.Fatalf("ParseEndpoints(%q) = %q, then %q (%v)", in, eps, again, err)
		}
	})
}
