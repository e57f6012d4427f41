package basicauth

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/plugin"
	"gw/edge/gateway/vars"
)

func TestParseHeader(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	f := func(h, user, pass string, ok bool) {
		t.Helper()
		u, p, _, err := ParseHeader([]byte(h), nil)
		if (err == nil) != ok || string(u) != user || string(p) != pass {
			t.Fatalf("%q: got %q %q %v; want %q %q ok=%v", h, u, p, err, user, pass, ok)
		}
	}
	f("Basic "+b64("jack:secret"), "jack", "secret", true)
	f("basic "+b64("jack:a:b:c"), "jack", "a:b:c", true) // after the first colon
	f("BASIC  "+b64("jack:"), "jack", "", true)
	f("Basic "+b64(":pw"), "", "pw", true)
	f("Basic "+b64("nocolon"), "", "", false)
	f("Basic !!!", "", "", false)
	f("Basic Ok0=", "", "M", true)
	f("Basic Ok1=", "", "", false)     // non-zero padding bits: a second spelling
	f("Basic Og\r\n==", "", "", false) // the decoder would skip CR LF
	f("Bearer "+b64("jack:secret"), "", "", false)
	f("Basic", "", "", false)
	f("", "", "", false)
}

func TestRewrite(t *testing.T) {
	jack := &admingw.Consumer{Username: "jack"}
	snap := &admingw.Snapshot{
		Consumers: map[string]*admingw.Consumer{"jack": jack},
		Auth:      map[string]map[string]*admingw.Consumer{Name: {"jack": jack, "nopw": jack}},
		AuthConf: map[string]map[string]json.RawMessage{Name: {
			"jack": json.RawMessage(`{"username":"jack","password":"p:w"}`),
			"nopw": json.RawMessage(`{"username":"nopw","password":""}`),
		}},
	}
	env := &plugin.Env{Snap: snap}
	f := func(conf, auth string, code int, consumer string) {
		t.Helper()
		p, err := New(json.RawMessage(conf), env, "route/1")
		if err != nil {
			t.Fatal(err)
		}
		r := &fasthttp.RequestCtx{}
		r.SetRemoteAddr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if auth != "" {
			r.Request.Header.Set("Authorization", auth)
		}
		c := &plugin.Ctx{}
		c.Reset(r, &vars.Context{})
		p.Rewrite(c)
		if r.Response.StatusCode() != code || c.Vars.ConsumerName != consumer {
			t.Fatalf("%s %q: got %d %q; want %d %q", conf, auth, r.Response.StatusCode(), c.Vars.ConsumerName, code, consumer)
		}
	}
	basic := func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(s)) }
	f(`{}`, basic("jack:p:w"), 200, "jack")
	f(`{}`, basic("jack:p"), 401, "")
	f(`{}`, basic("jack:"), 401, "")
	f(`{}`, basic("nopw:"), 401, "") // an empty stored password never matches
	f(`{}`, basic("ghost:x"), 401, "")
	f(`{}`, "", 401, "")
	f(`{"anonymous_consumer":"jack"}`, "", 200, "jack")
	if _, err := New(json.RawMessage(`{"anonymous_consumer":"ghost"}`), env, "route/1"); err == nil {
		t.Fatal("unknown anonymous_consumer accepted")
	}
}
