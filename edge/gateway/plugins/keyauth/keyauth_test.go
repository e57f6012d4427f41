package keyauth

import (
	"encoding/json"
	"testing"

	"github.com/valyala/fasthttp"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/plugin"
	"gw/edge/gateway/vars"
)

func TestRewrite(t *testing.T) {
	jack, anon := &admingw.Consumer{Username: "jack"}, &admingw.Consumer{Username: "anon"}
	env := &plugin.Env{Snap: &admingw.Snapshot{
		Consumers: map[string]*admingw.Consumer{"jack": jack, "anon": anon},
		Auth:      map[string]map[string]*admingw.Consumer{Name: {"k1": jack}},
	}}
	f := func(conf, uri, header string, code int, consumer, wantURI string, headerKept bool) {
		t.Helper()
		p, err := New(json.RawMessage(conf), env, "route/1")
		if err != nil {
			t.Fatal(err)
		}
		r := &fasthttp.RequestCtx{}
		r.Request.SetRequestURI(uri)
		if header != "" {
			r.Request.Header.Set("apikey", header)
		}
		c := &plugin.Ctx{}
		c.Reset(r, &vars.Context{})
		p.Rewrite(c)
		if r.Response.StatusCode() != code || c.Vars.ConsumerName != consumer {
			t.Fatalf("%s %s %q: got %d %q; want %d %q", conf, uri, header, r.Response.StatusCode(), c.Vars.ConsumerName, code, consumer)
		}
		if wantURI != "" && string(r.Request.URI().RequestURI()) != wantURI {
			t.Fatalf("uri %q; want %q", r.Request.URI().RequestURI(), wantURI)
		}
		if header != "" && (r.Request.Header.Peek("apikey") != nil) != headerKept {
			t.Fatalf("apikey header kept=%v; want %v", !headerKept, headerKept)
		}
	}
	f(`{}`, "/a", "k1", 200, "jack", "", true)
	f(`{}`, "/a?apikey=k1", "", 200, "jack", "/a?apikey=k1", false)
	f(`{}`, "/a", "bad", 401, "", "", true)
	f(`{}`, "/a", "", 401, "", "", false)
	f(`{"hide_credentials":true}`, "/a", "k1", 200, "jack", "", false)
	f(`{"hide_credentials":true}`, "/a?x=1&apikey=k1&y=2", "", 200, "jack", "/a?x=1&y=2", false)
	f(`{"query":"key","header":"x-key"}`, "/a?key=k1", "", 200, "jack", "", false)
	f(`{"anonymous_consumer":"anon"}`, "/a", "", 200, "anon", "", false)
	f(`{"anonymous_consumer":"anon"}`, "/a", "k1", 200, "jack", "", true)
}
