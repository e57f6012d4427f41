package store_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"gw/admin/store"
	"gw/admin/store/etcdtest"
)

// A route body of a typical size.
var benchValue = []byte(`{"uri":"/v1/chat/completions","methods":["POST"],"upstream_id":"openai","plugins":{"limit-count":{"count":100,"time_window":60}},"labels":{"team":"search"}}`)

func benchStores(b *testing.B, f func(b *testing.B, s store.Store)) {
	b.Run("memory", func(b *testing.B) {
		s := store.NewMemory(0)
		defer s.Close()
		f(b, s)
	})
	b.Run("embedded", func(b *testing.B) {
		s, err := store.OpenEmbedded(b.TempDir(), 0)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		f(b, s)
	})
	b.Run("etcd", func(b *testing.B) {
		srv := etcdtest.Start(b)
		s, err := store.OpenEtcd(context.Background(), []string{srv.Endpoint()}, "/gw", 0)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		f(b, s)
	})
}

func BenchmarkPut(b *testing.B) {
	benchStores(b, func(b *testing.B, s store.Store) {
		ctx := context.Background()
		keys := make([]string, 1000)
		for i := range keys {
			keys[i] = fmt.Sprintf("/routes/%d", i)
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(benchValue)))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := s.Put(ctx, keys[i%len(keys)], benchValue, store.PutOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkGet(b *testing.B) {
	benchStores(b, func(b *testing.B, s store.Store) {
		ctx := context.Background()
		keys := fill(b, s, 1000)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := s.Get(ctx, keys[i%len(keys)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkList lists a collection of 1,000 routes (the management API's
// GET of a collection, and the data plane's start).
func BenchmarkList(b *testing.B) {
	benchStores(b, func(b *testing.B, s store.Store) {
		ctx := context.Background()
		fill(b, s, 1000)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			kvs, _, err := s.List(ctx, "/routes/")
			if err != nil || len(kvs) != 1000 {
				b.Fatalf("List: %d keys, %v", len(kvs), err)
			}
		}
	})
}

func fill(b *testing.B, s store.Store, n int) []string {
	b.Helper()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("/routes/%d", i)
		if _, err := s.Put(context.Background(), keys[i], benchValue, store.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	// A key outside the listed prefix, so List has to stop at the prefix.
	if _, err := s.Put(context.Background(), "/services/1", benchValue, store.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	return keys
}

// BenchmarkPutParallel: concurrent writers (a bulk import through the
// management API). The embedded store commits every write waiting at once
// in one transaction, so it scales with writers instead of with fsyncs.
func BenchmarkPutParallel(b *testing.B) {
	benchStores(b, func(b *testing.B, s store.Store) {
		ctx := context.Background()
		var n atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(16)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				key := "/routes/" + strconv.FormatInt(n.Add(1)%1000, 10)
				if _, err := s.Put(ctx, key, benchValue, store.PutOptions{}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
