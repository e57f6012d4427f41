package gateway

import (
	"strconv"
	"testing"

	"gw/admin/store"
)

func put(st *State, key, body string, rev int64) {
	coll, id, ok := st.ParseKey(key)
	if !ok {
		panic("bad key " + key)
	}
	st.Put(coll, id, store.KV{Key: key, Value: []byte(body), CreateRev: rev, ModRev: rev})
}

// routesState holds n routes over a few upstreams and services, with mixed
// priorities, hosts, methods and plugins.
func routesState(n int) *State {
	st := NewState("")
	put(st, "/upstreams/u1", `{"nodes":{"127.0.0.1:8080":1,"127.0.0.2:8080":2},"type":"roundrobin"}`, 1)
	put(st, "/upstreams/u2", `{"nodes":[{"host":"backend.svc","port":443,"weight":1}],"scheme":"https"}`, 2)
	put(st, "/services/s1", `{"upstream_id":"u2","plugins":{"prometheus":{}}}`, 3)
	put(st, "/plugin_configs/p1", `{"plugins":{"limit-count":{"count":10,"time_window":60}}}`, 4)
	for i := 0; i < n; i++ {
		id := strconv.Itoa(i)
		var body string
		switch i % 4 {
		case 0:
			body = `{"id":"` + id + `","uri":"/api/` + id + `","upstream_id":"u1","methods":["GET","POST"]}`
		case 1:
			body = `{"id":"` + id + `","uris":["/v1/` + id + `/*","/v2/` + id + `"],"service_id":"s1","priority":` + strconv.Itoa(i%7) + `}`
		case 2:
			body = `{"id":"` + id + `","uri":"/p/` + id + `","hosts":["*.example.com","a.io"],"plugin_config_id":"p1","upstream":{"nodes":{"10.0.0.1:80":1}}}`
		default:
			body = `{"id":"` + id + `","uri":"/k/` + id + `","plugins":{"key-auth":{}},"upstream_id":"u1","remote_addrs":["10.0.0.0/8"],"vars":[["arg_a","==","1"]]}`
		}
		put(st, "/routes/"+id, body, int64(10+i))
	}
	return st
}

func TestCompileRoutes(t *testing.T) {
	st := routesState(100)
	s := Compile(st, 200)
	if len(s.Errors) != 0 || len(s.Routes) != 100 {
		t.Fatalf("errors %+v routes %d", s.Errors, len(s.Routes))
	}
	for i := 1; i < len(s.Routes); i++ {
		if routeBefore(s.Routes[i], s.Routes[i-1]) {
			t.Fatalf("routes out of order at %d", i)
		}
	}
	r := s.RouteByID["1"]
	if r.Upstream != s.Upstreams["u2"] || r.Service != s.Services["s1"] || r.Plugins["prometheus"] == nil || !r.URIs[0].Prefix || r.URIs[0].Path != "/v1/1/" {
		t.Fatalf("route 1 %+v", r)
	}
	if got := s.Match("GET", "x.example.com:8443", "/p/2"); got == nil || got.ID != "2" || got.Plugins["limit-count"] == nil {
		t.Fatalf("host wildcard match %+v", got)
	}
	if s.Match("GET", "example.com", "/p/2") != nil {
		t.Fatal("*.example.com matched the bare domain")
	}
	if s.Match("DELETE", "h", "/api/0") != nil || s.Match("POST", "h", "/api/0") == nil {
		t.Fatal("method filter")
	}
	if got := s.Match("GET", "h", "/v1/5/anything"); got == nil || got.ID != "5" {
		t.Fatalf("prefix match %+v", got)
	}
	if u := s.Upstreams["u2"]; u.Nodes[0].Addr != "backend.svc:443" {
		t.Fatalf("https default port: %+v", u.Nodes)
	}
}

// TestIncrementalEqualsFull: a route-only change applied incrementally
// gives the same route order and content as a full compile.
func TestIncrementalEqualsFull(t *testing.T) {
	st := routesState(200)
	s := Compile(st, 300)
	put(st, "/routes/7", `{"id":"7","uri":"/moved","upstream_id":"u1","priority":100}`, 301)
	put(st, "/routes/new", `{"id":"new","uri":"/new","upstream_id":"u1","priority":3}`, 302)
	put(st, "/routes/off", `{"id":"off","uri":"/off","upstream_id":"u1","status":0}`, 303)
	put(st, "/routes/bad", `{"id":"bad","uri":"/bad","upstream_id":"missing"}`, 304)
	st.Delete(Routes, "9")
	inc := s.WithRoutes(st, []string{"7", "new", "off", "bad", "9"}, 304)
	full := Compile(st, 304)
	if len(inc.Routes) != len(full.Routes) {
		t.Fatalf("routes: incremental %d, full %d", len(inc.Routes), len(full.Routes))
	}
	for i := range full.Routes {
		if inc.Routes[i].ID != full.Routes[i].ID {
			t.Fatalf("order differs at %d: %s vs %s", i, inc.Routes[i].ID, full.Routes[i].ID)
		}
	}
	if inc.Routes[0].ID != "7" || inc.RouteByID["9"] != nil || inc.RouteByID["off"] == nil || inc.RouteByID["off"].Enabled {
		t.Fatal("incremental content")
	}
	if len(inc.Errors) != 1 || len(full.Errors) != 1 || inc.Errors[0].Key != "/routes/bad" {
		t.Fatalf("errors: incremental %+v full %+v", inc.Errors, full.Errors)
	}
	if s.RouteByID["9"] == nil || len(s.Routes) != 200 {
		t.Fatal("the incremental compile modified the previous snapshot")
	}
}

func TestParseKey(t *testing.T) {
	st := NewState("")
	for key, want := range map[string]string{
		"/routes/1":                     "routes 1",
		"/consumers/jack":               "consumers jack",
		"/consumers/jack/credentials/c": "credentials jack/c",
		"/secrets/vault/1":              "secrets vault/1",
		"/secrets/vault":                "",
		"/routes/1/x":                   "",
		"/routes/":                      "",
		"routes/1":                      "",
		"/consumers/jack/credentials/":  "",
	} {
		c, id, ok := st.ParseKey(key)
		got := ""
		if ok {
			got = c + " " + id
		}
		if got != want {
			t.Errorf("%s: got %q; want %q", key, got, want)
		}
		if ok && st.Key(c, id) != key {
			t.Errorf("%s: Key gives %s", key, st.Key(c, id))
		}
	}
}

func TestCompileErrors(t *testing.T) {
	s := Compile(NewState(""), 0)
	for _, c := range []struct{ coll, body, want string }{
		{Routes, `{"uri":"/a","upstream":{"nodes":{"bad host:80":1}}}`, "not a host name"},
		{Routes, `{"uri":"/a","host":"bad host","plugins":{"prometheus":{}}}`, "not a host name"},
		{Routes, `{"uri":"/a","remote_addr":"300.1.1.1","plugins":{"prometheus":{}}}`, "not an IP or CIDR"},
		{Routes, `{"uri":"/a"}`, "needs an upstream"},
		{Upstreams, `{"nodes":{"a:1":1},"pass_host":"rewrite"}`, "upstream_host"},
		{SSLs, `{"sni":"a.io","cert":"x","key":"y"}`, "failed to parse cert"},
		{StreamRoutes, `{"upstream_id":"nope"}`, "not found"},
	} {
		err := s.Check(c.coll, "1", []byte(c.body))
		if err == nil || !contains([]string{err.Error()}, err.Error()) || !containsStr(err.Error(), c.want) {
			t.Errorf("%s %s: %v; want %q", c.coll, c.body, err, c.want)
		}
	}
}

func containsStr(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
