package vars

import (
	"net"
	"testing"

	"github.com/valyala/fasthttp"
)

func testCtx() *fasthttp.RequestCtx {
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/p/q?a=1&b=two")
	ctx.Request.Header.SetHost("api.example.com:9080")
	ctx.Request.Header.Set("X-Api-Version", "3")
	ctx.Request.Header.Set("Cookie", "sid=abc; theme=dark")
	ctx.Request.Header.SetContentType("application/x-www-form-urlencoded")
	ctx.Request.SetBodyString("f=field")
	ctx.SetRemoteAddr(&net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 4321})
	return ctx
}

func TestVars(t *testing.T) {
	ctx := testCtx()
	c := &Context{RouteID: "r1", ConsumerName: "jack"}
	f := func(name, want string, defined bool) {
		t.Helper()
		v, known := Compile(name)
		if !known {
			t.Fatalf("%s: unknown", name)
		}
		got, ok := v.Append(nil, ctx, c)
		if string(got) != want || ok != defined {
			t.Errorf("$%s: got %q %v; want %q %v", name, got, ok, want, defined)
		}
	}
	f("uri", "/p/q", true)
	f("request_uri", "/p/q?a=1&b=two", true)
	f("host", "api.example.com", true)
	f("remote_addr", "192.0.2.7", true)
	f("remote_port", "4321", true)
	f("request_method", "POST", true)
	f("scheme", "http", true)
	f("query_string", "a=1&b=two", true)
	f("arg_b", "two", true)
	f("arg_none", "", false)
	f("http_x_api_version", "3", true)
	f("cookie_theme", "dark", true)
	f("post_arg_f", "field", true)
	f("route_id", "r1", true)
	f("consumer_name", "jack", true)
	f("service_id", "", false)
	if _, known := Compile("no_such_var"); known {
		t.Error("no_such_var compiled as known")
	}
}

func TestTemplate(t *testing.T) {
	ctx := testCtx()
	f := func(tmpl, want string) {
		t.Helper()
		tp, err := CompileTemplate(tmpl)
		if err != nil {
			t.Fatalf("%s: %v", tmpl, err)
		}
		if got := string(tp.Append(nil, ctx, nil)); got != want {
			t.Errorf("%s: got %q; want %q", tmpl, got, want)
		}
	}
	f("/v2$uri", "/v2/p/q")
	f("${arg_a}x", "1x")
	f("${arg_z ?? none}-$arg_b", "none-two")
	f("${arg_z}|", "|")
	f(`price \$5 $arg_a`, "price $5 1")
	f("50$", "50$")
	for _, bad := range []string{"${arg_a", "$nope", "${bad name}"} {
		if _, err := CompileTemplate(bad); err == nil {
			t.Errorf("%s compiled; want an error", bad)
		}
	}
}

func BenchmarkTemplate(b *testing.B) {
	ctx := testCtx()
	tp, _ := CompileTemplate("/v2$uri?from=${http_x_api_version ?? 1}&ip=$remote_addr")
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = tp.Append(buf[:0], ctx, nil)
	}
}
