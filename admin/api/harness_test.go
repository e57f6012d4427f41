package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/gateway"
	"gw/admin/store"
	"gw/admin/store/etcdtest"
)

const testKey = "test-admin-key"

// stores are the implementations every API test runs against.
var stores = []struct {
	name string
	open func(t *testing.T) store.Store
}{
	{"memory", func(t *testing.T) store.Store { return store.NewMemory(0) }},
	{"embedded", func(t *testing.T) store.Store {
		s, err := store.OpenEmbedded(t.TempDir(), 0)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	// etcd: a real etcd process per test (skipped when etcd is not
	// installed; make deps installs it).
	{"etcd", func(t *testing.T) store.Store {
		srv := etcdtest.Start(t)
		s, err := store.OpenEtcd(context.Background(), []string{srv.Endpoint()}, "/gw", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

// env is one API over one store, with its runner following the store.
type env struct {
	t      *testing.T
	st     store.Store
	srv    *Server
	runner *gateway.Runner
	holder *gateway.Holder
}

func newEnv(t *testing.T, open func(t *testing.T) store.Store) *env {
	t.Helper()
	st := open(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := &gateway.Holder{}
	r := gateway.NewRunner(st, storeRoot, h, log)
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Store: st, Runner: r, Key: testKey, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		r.Stop()
		st.Close()
	})
	return &env{t: t, st: st, srv: srv, runner: r, holder: h}
}

// resp is one answer.
type resp struct {
	code int
	body []byte
	m    map[string]any
}

func (r resp) str(path ...string) string {
	v := r.get(path...)
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func (r resp) get(path ...string) any {
	var cur any = r.m
	for _, p := range path {
		switch n := cur.(type) {
		case map[string]any:
			cur = n[p]
		case []any:
			i := 0
			for _, c := range p {
				i = i*10 + int(c-'0')
			}
			if i >= len(n) {
				return nil
			}
			cur = n[i]
		default:
			return nil
		}
	}
	return cur
}

func (e *env) do(method, path, body string, hdr ...string) resp {
	e.t.Helper()
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(path)
	if len(hdr) == 0 {
		ctx.Request.Header.Set("X-API-KEY", testKey)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		ctx.Request.Header.Set(hdr[i], hdr[i+1])
	}
	if body != "" {
		ctx.Request.SetBodyString(body)
	}
	e.srv.Handler(&ctx)
	r := resp{code: ctx.Response.StatusCode(), body: append([]byte(nil), ctx.Response.Body()...)}
	dec := json.NewDecoder(strings.NewReader(string(r.body)))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) == nil {
		r.m, _ = v.(map[string]any)
	}
	return r
}

// must checks the status and returns the answer.
func (e *env) must(code int, method, path, body string) resp {
	e.t.Helper()
	r := e.do(method, path, body)
	if r.code != code {
		e.t.Fatalf("%s %s: got %d; want %d\n%s", method, path, r.code, code, r.body)
	}
	return r
}

// fails checks an error answer's status and that error_msg contains want.
func (e *env) fails(code int, want, method, path, body string) resp {
	e.t.Helper()
	r := e.do(method, path, body)
	if r.code != code || !strings.Contains(r.str("error_msg"), want) {
		e.t.Fatalf("%s %s: got %d %s; want %d with %q", method, path, r.code, r.body, code, want)
	}
	return r
}

func forEachStore(t *testing.T, f func(t *testing.T, e *env)) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) { f(t, newEnv(t, s.open)) })
	}
}
