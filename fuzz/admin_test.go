package fuzz

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/admin/api"
	"gw/admin/gateway"
	"gw/admin/store"
)

var adminSeeds = []string{
	`{"uri":"/a","upstream_id":"1"}`,
	`{"uris":["/a","/b/*"],"hosts":["*.x.io"],"methods":["GET"],"upstream":{"nodes":{"127.0.0.1:80":1},"type":"chash","key":"remote_addr"}}`,
	`{"uri":"/a","plugins":{"limit-count":{"count":1,"time_window":1},"ai-proxy-multi":{"instances":[{"name":"a","provider":"openai","weight":1}]}}}`,
	`{"nodes":[{"host":"a","port":1,"weight":1}],"checks":{"active":{}}}`,
	`{"username":"jack","plugins":{"key-auth":{"key":"k"}}}`,
	`{"sni":"a.io","cert":"$secret://vault/1/c","key":"$env://K"}`,
	`{"uri":null,"labels":{"a":null}}`,
	`{"server_port":1,"remote_addr":"::1/128"}`,
	`[1,2]`, `"x"`, `{"a":{"b":{"c":[{}]}}}`, `{"id":1e400}`,
}

// FuzzAdminSchemas: schema validation of any body never panics.
func FuzzAdminSchemas(f *testing.F) {
	for _, s := range adminSeeds {
		f.Add(s)
	}
	sch, err := api.LoadSchemas()
	if err != nil {
		f.Fatal(err)
	}
	names := []string{"route", "service", "upstream", "consumer", "credential", "plugin_config", "global_rule", "stream_route", "ssl", "secrets/vault", "secrets/aws", "secrets/gcp"}
	f.Fuzz(func(t *testing.T, body string) {
		for _, n := range names {
			_ = sch.Validate(n, []byte(body))
		}
	})
}

// FuzzAdminWrites: any body through the real handler (PUT, PATCH, the
// sub_path form, POST) over a memory store never panics, and never answers
// 5xx: a bad body is a 4xx.
func FuzzAdminWrites(f *testing.F) {
	for _, s := range adminSeeds {
		f.Add(s)
	}
	st := store.NewMemory(0)
	h := &gateway.Holder{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := gateway.NewRunner(st, "", h, log)
	if err := r.Start(context.Background()); err != nil {
		f.Fatal(err)
	}
	srv, err := api.New(api.Config{Store: st, Runner: r, Key: "k", Log: log})
	if err != nil {
		f.Fatal(err)
	}
	do := func(method, path, body string) int {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(method)
		ctx.Request.SetRequestURI(path)
		ctx.Request.Header.Set("X-API-KEY", "k")
		ctx.Request.SetBodyString(body)
		srv.Handler(&ctx)
		return ctx.Response.StatusCode()
	}
	do("PUT", "/gw/admin/upstreams/1", `{"nodes":{"127.0.0.1:1":1}}`)
	do("PUT", "/gw/admin/routes/p", `{"uri":"/p","upstream":{"nodes":{"127.0.0.1:1":1}}}`)
	f.Fuzz(func(t *testing.T, body string) {
		for _, c := range []struct{ method, path string }{
			{"PUT", "/gw/admin/routes/f"}, {"POST", "/gw/admin/routes"}, {"PATCH", "/gw/admin/routes/p"},
			{"PATCH", "/gw/admin/routes/p/upstream/nodes"}, {"PUT", "/gw/admin/upstreams/f"}, {"PUT", "/gw/admin/consumers/f"},
			{"PUT", "/gw/admin/ssls/f"}, {"PUT", "/gw/admin/stream_routes/f"}, {"PUT", "/gw/admin/plugin_metadata/http-logger"},
			{"PUT", "/gw/admin/secrets/gcp/f"}, {"PUT", "/gw/admin/global_rules/f"},
		} {
			if code := do(c.method, c.path, body); code >= 500 {
				t.Fatalf("%s %s %q: %d", c.method, c.path, body, code)
			}
		}
		do("PUT", "/gw/admin/routes/p", `{"uri":"/p","upstream":{"nodes":{"127.0.0.1:1":1}}}`)
	})
}
