package proxyrewrite

import (
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/edge/gateway/plugin"
	"gw/edge/gateway/vars"
)

func TestRewrite(t *testing.T) {
	f := func(conf, uri, wantURI, wantHeaders string) {
		t.Helper()
		p, err := New(json.RawMessage(conf), &plugin.Env{}, "route/1")
		if err != nil {
			if wantURI != "error" {
				t.Fatalf("%s: %v", conf, err)
			}
			return
		}
		if wantURI == "error" {
			t.Fatalf("%s accepted", conf)
		}
		r := &fasthttp.RequestCtx{}
		r.Request.SetRequestURI(uri)
		r.Request.Header.SetHost("client.example")
		r.Request.Header.Set("X-Old", "o")
		r.SetRemoteAddr(&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3)})
		c := &plugin.Ctx{}
		c.Reset(r, &vars.Context{RouteID: "r1", ConsumerName: "jack"})
		if !p.Rewrite(c) {
			t.Fatal("rewrite answered")
		}
		if got := string(r.Request.RequestURI()); got != wantURI {
			t.Errorf("%s: uri %q; want %q", conf, got, wantURI)
		}
		var hs []string
		for _, kv := range strings.Split(wantHeaders, ";") {
			if kv == "" {
				continue
			}
			name, want, _ := strings.Cut(kv, "=")
			var got []string
			for _, v := range r.Request.Header.PeekAll(name) {
				got = append(got, string(v))
			}
			if strings.Join(got, ",") != want {
				hs = append(hs, name+"="+strings.Join(got, ",")+" want "+want)
			}
		}
		if len(hs) > 0 {
			t.Errorf("%s: %v", conf, hs)
		}
	}
	f(`{"uri":"/v2$uri"}`, "/a/b?x=1", "/v2/a/b?x=1", "")
	f(`{"uri":"/q?fixed=1"}`, "/a?x=1", "/q?fixed=1", "")
	f(`{"uri":"/${arg_id ?? none}/${route_id}"}`, "/a?x=1", "/none/r1?x=1", "")
	f(`{"uri":"/\\$uri"}`, "/a", "/$uri", "")
	f(`{"regex_uri":["^/api/(.*)","/v1/$1"]}`, "/api/x/y?k=v", "/v1/x/y?k=v", "")
	f(`{"regex_uri":["^/nomatch/(.*)","/v1/$1"]}`, "/api/x", "/api/x", "")
	f(`{"uri":"/u","regex_uri":["^/(.*)","/r/$1"]}`, "/x", "/u", "") // uri wins
	f(`{"headers":{"add":{"X-A":["1","2"]},"set":{"X-Old":"$consumer_name","X-N":3},"remove":["X-Gone"]}}`, "/a", "/a", "X-A=1,2;X-Old=jack;X-N=3")
	f(`{"headers":{"set":{"X-Ip":"$remote_addr","X-Two":["a","b"]}}}`, "/a", "/a", "X-Ip=10.1.2.3;X-Two=a,b")
	f(`{"method":"POST"}`, "/a", "/a", "")
	f(`{"uri":"/$nosuchvar"}`, "/a", "error", "")
	f(`{"regex_uri":["(unclosed","/x"]}`, "/a", "error", "")
	f(`{"regex_uri":["^/a"]}`, "/a", "error", "")
	f(`{"scheme":"https"}`, "/a", "error", "")
	f(`{"use_real_request_uri_unsafe":true}`, "/a", "error", "")
}

func TestHost(t *testing.T) {
	p, err := New(json.RawMessage(`{"host":"up.internal"}`), &plugin.Env{}, "route/1")
	if err != nil {
		t.Fatal(err)
	}
	r := &fasthttp.RequestCtx{}
	r.Request.SetRequestURI("/a")
	c := &plugin.Ctx{}
	c.Reset(r, &vars.Context{})
	p.Rewrite(c)
	if string(c.HostOverride()) != "up.internal" {
		t.Fatalf("host override %q", c.HostOverride())
	}
	c.Reset(r, &vars.Context{})
	if c.HostOverride() != nil {
		t.Fatal("host override survives Reset")
	}
}
