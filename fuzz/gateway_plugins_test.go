package fuzz

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net"
	"testing"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/plugin"
	"gw/edge/gateway/plugins/basicauth"
	_ "gw/edge/gateway/plugins/builtin"
	"gw/edge/gateway/plugins/httplogger"
	"gw/edge/gateway/plugins/limitcount"
	"gw/edge/gateway/plugins/proxyrewrite"
	"gw/edge/gateway/vars"
)

// FuzzGatewayBasicAuthHeader: any Authorization value parses or fails
// without panicking; a parsed one is the base64 of "user:password" with
// the user free of colons.
func FuzzGatewayBasicAuthHeader(f *testing.F) {
	for _, s := range []string{"Basic " + base64.StdEncoding.EncodeToString([]byte("jack:p:w")), "Basic ", "basic Og==", "Basic !!", "Bearer x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		user, pass, _, err := basicauth.ParseHeader([]byte(h), nil)
		if err != nil {
			return
		}
		if bytes.IndexByte(user, ':') >= 0 {
			t.Fatalf("user %q holds a colon", user)
		}
		enc := base64.StdEncoding.EncodeToString(append(append(append([]byte{}, user...), ':'), pass...))
		if !bytes.HasSuffix(bytes.TrimRight([]byte(h), " "), []byte(enc)) {
			t.Fatalf("%q parsed to %q:%q, which encodes to %s", h, user, pass, enc)
		}
	})
}

// FuzzGatewayProxyRewrite: any configuration compiles or is refused, and a
// compiled one rewrites any request without panicking.
func FuzzGatewayProxyRewrite(f *testing.F) {
	for _, s := range []string{`{"uri":"/v2$uri"}`, `{"regex_uri":["^/(.*)","/x/$1"]}`, `{"headers":{"add":{"X":["a","$uri"]},"set":{"Y":1},"remove":["Z"]}}`,
		`{"uri":"/${arg_a ?? b}","host":"h"}`, `{"regex_uri":["(a*)*b","$0$1$2${x}"]}`} {
		f.Add(s, "/p/q?a=1")
	}
	f.Fuzz(func(t *testing.T, conf, uri string) {
		p, err := proxyrewrite.New(json.RawMessage(conf), &plugin.Env{}, "route/f")
		if err != nil {
			return
		}
		r := &fasthttp.RequestCtx{}
		r.Request.SetRequestURI(uri)
		r.SetRemoteAddr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		c := &plugin.Ctx{}
		c.Reset(r, &vars.Context{RouteID: "f"})
		p.Rewrite(c)
	})
}

// FuzzGatewayRateInfo: the rate_limiting_info key encoder always writes a
// JSON string that decodes back to its input (for valid UTF-8).
func FuzzGatewayRateInfo(f *testing.F) {
	for _, s := range []string{"10.0.0.1", `a"b\c`, "\x00\x1f", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := limitcount.AppendJSONString(nil, []byte(s))
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q encoded to invalid JSON %s: %v", s, out, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("%q round-tripped to %q", s, back)
		}
	})
}

// FuzzGatewayPluginChain: any plugins object (the _meta forms included)
// compiles or is refused without panicking.
func FuzzGatewayPluginChain(f *testing.F) {
	for _, s := range []string{`{"key-auth":{"_meta":{"disable":true}}}`, `{"proxy-rewrite":{"uri":"/a","_meta":{"priority":1,"filter":[["arg_x","==","1"]]}}}`,
		`{"limit-count":{"count":1,"time_window":3}}`, `{"error-page":{"_meta":{"filter":[["OR",["uri","~~","^/a"]]]}}}`} {
		f.Add(s)
	}
	shared := plugin.NewShared()
	f.Cleanup(func() {
		shared.Each(func(_ string, v any) {
			if c, ok := v.(interface{ Close() }); ok {
				c.Close()
			}
		})
	})
	f.Fuzz(func(t *testing.T, s string) {
		var ps admingw.Plugins
		if json.Unmarshal([]byte(s), &ps) != nil {
			return
		}
		for _, raw := range ps {
			if bytes.Contains(raw, []byte("redis")) {
				return // no network from a fuzz target
			}
		}
		env := &plugin.Env{Snap: &admingw.Snapshot{}, Shared: shared}
		ch, err := plugin.Compile(ps, env, "route/f", false)
		if err != nil {
			return
		}
		r := &fasthttp.RequestCtx{}
		r.Request.SetRequestURI("/a?x=1")
		r.SetRemoteAddr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		c := &plugin.Ctx{}
		c.Reset(r, &vars.Context{RouteID: "f"})
		if ch.RunRewrite(c) {
			ch.RunAccess(c)
		}
		ch.RunHeaderFilter(c)
		ch.RunBodyFilter(c)
		ch.RunLog(c)
	})
}

// FuzzGatewayLogFormat: any log_format compiles or is refused without
// panicking.
func FuzzGatewayLogFormat(f *testing.F) {
	for _, s := range []string{"$status", "${request_time}", "x$uri${arg_a ?? b}", "\\$", "${", "$rate_limiting_info"} {
		f.Add("k", s)
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		_ = httplogger.CompileFormat(map[string]string{k: v})
	})
}
