package errorpage

import (
	"encoding/json"
	"testing"

	"github.com/valyala/fasthttp"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/plugin"
	"gw/edge/gateway/vars"
)

func TestHeaderFilter(t *testing.T) {
	f := func(meta string, generated bool, code int, wantBody string) {
		t.Helper()
		env := &plugin.Env{Snap: &admingw.Snapshot{PluginMetadata: map[string]json.RawMessage{}}}
		if meta != "" {
			env.Snap.PluginMetadata[Name] = json.RawMessage(meta)
		}
		p, err := New(json.RawMessage(`{}`), env, "global_rule/1")
		if err != nil {
			t.Fatal(err)
		}
		r := &fasthttp.RequestCtx{}
		c := &plugin.Ctx{}
		c.Reset(r, &vars.Context{})
		c.Reply(code, []byte("orig"))
		c.Generated = generated
		p.HeaderFilter(c)
		if got := string(r.Response.Body()); got != wantBody {
			t.Fatalf("%s generated=%v %d: body %q; want %q", meta, generated, code, got, wantBody)
		}
	}
	on := `{"enable":true,"error_404":{"body":"nf"},"error_502":{"body":"bg","content_type":"text/plain"}}`
	f(on, true, 404, "nf")
	f(on, true, 502, "bg")
	f(on, true, 503, "orig")  // no page configured
	f(on, false, 404, "orig") // upstream answers are never changed
	f(on, true, 401, "orig")
	f(`{"enable":false,"error_404":{"body":"nf"}}`, true, 404, "orig")
	f("", true, 404, "orig")
}
