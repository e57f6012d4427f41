package httplogger

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/plugin"
	"gw/edge/gateway/vars"
)

func TestCompileFormat(t *testing.T) {
	f := func(format map[string]string, ok bool) {
		t.Helper()
		if err := CompileFormat(format); (err == nil) != ok {
			t.Fatalf("%v: err %v; want ok=%v", format, err, ok)
		}
	}
	f(map[string]string{"a": "$status", "b": "${request_time}", "c": "x-$uri", "d": "${arg_a ?? 1}"}, true)
	f(map[string]string{"a": "$nosuchvar"}, false)
	f(map[string]string{"a": "${unclosed"}, false)
}

// TestPendingLimit: entries beyond max_pending_entries are dropped and
// counted; the rest are sent as one JSON array.
func TestPendingLimit(t *testing.T) {
	got := make(chan string, 4)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- string(b)
	}))
	defer recv.Close()
	shared := plugin.NewShared()
	env := &plugin.Env{Snap: &admingw.Snapshot{}, Shared: shared}
	p, err := New(json.RawMessage(`{"uri":"`+recv.URL+`","name":"pending-test","max_pending_entries":2,"inactive_timeout":1,"log_format":{"u":"$uri","s":"$status"}}`), env, "route/1")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		r := &fasthttp.RequestCtx{}
		r.Request.SetRequestURI("/a")
		r.SetRemoteAddr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		r.SetStatusCode(204)
		c := &plugin.Ctx{}
		c.Reset(r, &vars.Context{})
		p.Log(c)
	}
	lg := p.(*logger)
	if d := lg.b.dropped.Get(); d != 3 {
		t.Errorf("dropped %d; want 3", d)
	}
	select {
	case b := <-got:
		if b != `[{"s":204,"u":"/a"},{"s":204,"u":"/a"}]` {
			t.Errorf("batch %s", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no batch")
	}
	shared.Each(func(_ string, v any) { v.(interface{ Close() }).Close() })
	if n := lg.b.pending.Load(); n != 0 {
		t.Errorf("pending %d after the send", n)
	}
	if _, err := New(json.RawMessage(`{"uri":"http://x","include_req_body_expr":[["a","==","b"]]}`), env, "route/1"); err == nil {
		t.Error("include_req_body_expr accepted")
	}
}
