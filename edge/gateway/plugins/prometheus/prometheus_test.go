package prometheus

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/plugin"
	"gw/edge/gateway/vars"
)

func TestCheckDisabled(t *testing.T) {
	f := func(d map[string][]string, ok bool) {
		t.Helper()
		if err := CheckDisabled(d); (err == nil) != ok {
			t.Fatalf("%v: %v; want ok=%v", d, err, ok)
		}
	}
	f(map[string][]string{"http_status": {"node", "consumer"}}, true)
	f(map[string][]string{"http_latency": {"type"}}, false)
	f(map[string][]string{"bandwidth": {"nope"}}, false)
	f(map[string][]string{"other": {"node"}}, false)
}

func TestLog(t *testing.T) {
	env := &plugin.Env{Shared: plugin.NewShared(), Snap: &admingw.Snapshot{PluginMetadata: map[string]json.RawMessage{
		Name: json.RawMessage(`{"prefix":"ptest_","disabled_labels":{"http_status":["node","service"]}}`),
	}}}
	p, err := New(json.RawMessage(`{}`), env, "route/1")
	if err != nil {
		t.Fatal(err)
	}
	r := &fasthttp.RequestCtx{}
	r.Request.SetRequestURI("/a")
	r.SetStatusCode(201)
	r.SetBodyString("hello")
	c := &plugin.Ctx{}
	c.Reset(r, &vars.Context{RouteID: "r1", ConsumerName: "jack"})
	c.Upstream = "10.0.0.1:80"
	p.Log(c)
	if n := testing.AllocsPerRun(100, func() { p.Log(c) }); n != 0 {
		t.Errorf("known series: %v allocs", n)
	}
	var buf bytes.Buffer
	metrics.WritePrometheus(&buf, false)
	for _, want := range []string{`ptest_http_status{code="201",route="r1",consumer="jack"} 102`, `ptest_bandwidth{type="egress",route="r1",service="",consumer="jack",node="10.0.0.1:80"}`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
