package store_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"gw/admin/store"
)

func TestOpenErrors(t *testing.T) {
	f := func(cfg store.Config, want ...string) {
		t.Helper()
		s, err := store.Open(context.Background(), cfg)
		if err == nil {
			_ = s.Close()
			t.Fatalf("Open(%+v) succeeded; want an error mentioning %q", cfg, want)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("Open(%+v) = %q; want it to mention %q", cfg, err, w)
			}
		}
	}
	f(store.Config{Kind: "redis"}, "--store", `"redis"`, "embedded, etcd or memory")
	f(store.Config{Kind: "etcd"}, "--etcd-endpoints", "empty")
	f(store.Config{Kind: "etcd", Endpoints: []string{" , "}}, "--etcd-endpoints", "empty")
	f(store.Config{Kind: "etcd", Endpoints: []string{"grpc://127.0.0.1:2379"}}, "--etcd-endpoints", "scheme")
	f(store.Config{Kind: "etcd", Endpoints: []string{"http://127.0.0.1:2379/v3"}}, "--etcd-endpoints", "no path")
	f(store.Config{Kind: "etcd", Endpoints: []string{"127.0.0.1"}}, "--etcd-endpoints", "host:port")
	f(store.Config{Kind: "etcd", Endpoints: []string{"http://127.0.0.1:2379"}, Prefix: "gw"}, "--etcd-prefix", "start with /")
}

func TestParseEndpoints(t *testing.T) {
	got, err := store.ParseEndpoints([]string{"http://a:2379, https://b:2379", "c:2379"})
	if err != nil || strings.Join(got, " ") != "http://a:2379 https://b:2379 c:2379" {
		t.Fatalf("ParseEndpoints = %q, %v", got, err)
	}
}

func TestOpenKinds(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []store.Config{
		{Kind: "memory"},
		{Kind: "embedded", DataDir: filepath.Join(t.TempDir(), "a", "b")},
		{DataDir: t.TempDir()}, // embedded is the default
	} {
		s, err := store.Open(ctx, cfg)
		if err != nil {
			t.Fatalf("Open(%+v): %v", cfg, err)
		}
		want := "*store.Memory"
		if cfg.Kind != "memory" {
			want = "*store.Embedded"
		}
		if got := typeName(s); got != want {
			t.Fatalf("Open(%+v) = %s; want %s", cfg, got, want)
		}
		if _, err := s.Put(ctx, "/k", []byte("v"), store.PutOptions{}); err != nil {
			t.Fatalf("Put on %s: %v", want, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func typeName(s store.Store) string {
	switch s.(type) {
	case *store.Memory:
		return "*store.Memory"
	case *store.Embedded:
		return "*store.Embedded"
	case *store.Etcd:
		return "*store.Etcd"
	}
	return "?"
}
