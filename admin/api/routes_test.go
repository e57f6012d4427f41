package api

import (
	"strings"
	"testing"
	"time"

	"gw/admin/store"
)

func TestAuth(t *testing.T) {
	e := newEnv(t, stores[0].open)
	for _, c := range []struct {
		name string
		hdr  []string
		path string
		code int
	}{
		{"none", []string{"X-Other", "1"}, "/gw/admin/routes", 401},
		{"wrong header", []string{"X-API-KEY", "nope"}, "/gw/admin/routes", 401},
		{"prefix of key", []string{"X-API-KEY", testKey[:4]}, "/gw/admin/routes", 401},
		{"header", []string{"X-API-KEY", testKey}, "/gw/admin/routes", 200},
		{"query", []string{"X-Other", "1"}, "/gw/admin/routes?api_key=" + testKey, 200},
		{"wrong query", []string{"X-Other", "1"}, "/gw/admin/routes?api_key=x", 401},
		{"cookie", []string{"Cookie", "X-API-KEY=" + testKey}, "/gw/admin/routes", 200},
		{"api_key cookie", []string{"Cookie", "api_key=" + testKey}, "/gw/admin/routes", 200},
	} {
		r := e.do("GET", c.path, "", c.hdr...)
		if r.code != c.code {
			t.Errorf("%s: got %d; want %d", c.name, r.code, c.code)
		}
		if c.code == 401 && r.str("error_msg") != "failed to check token" {
			t.Errorf("%s: body %s", c.name, r.body)
		}
	}
}

func TestRouteCRUD(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		e.must(201, "PUT", "/gw/admin/upstreams/1", `{"nodes":{"127.0.0.1:8080":1}}`)
		r := e.must(201, "PUT", "/gw/admin/routes/1", `{"uri":"/a","upstream_id":"1","name":"r1"}`)
		if r.str("key") != "/gw/routes/1" || r.str("value", "id") != "1" || r.str("value", "uri") != "/a" || r.str("value", "create_time") == "" {
			t.Fatalf("create answer %s", r.body)
		}
		created, ct := r.str("createdIndex"), r.str("value", "create_time")
		got := e.must(200, "GET", "/gw/admin/routes/1", "")
		if got.str("createdIndex") != created || got.str("modifiedIndex") != created || got.str("value", "name") != "r1" {
			t.Fatalf("get %s", got.body)
		}
		time.Sleep(1100 * time.Millisecond) // update_time moves on whole seconds
		r = e.must(200, "PUT", "/gw/admin/routes/1", `{"uri":"/b","upstream_id":1}`)
		if r.str("createdIndex") != created || r.str("modifiedIndex") == created || r.str("value", "create_time") != ct ||
			r.str("value", "update_time") == ct || r.get("value", "name") != nil {
			t.Fatalf("replace answer %s", r.body)
		}
		if e.holder.Load().Match("GET", "h", "/b") == nil || e.holder.Load().Match("GET", "h", "/a") != nil {
			t.Fatal("replace not applied to the snapshot")
		}
		e.fails(404, "Key not found", "GET", "/gw/admin/routes/9", "")
		p := e.must(201, "POST", "/gw/admin/routes", `{"uri":"/p","upstream_id":"1"}`)
		id := p.str("value", "id")
		if id == "" || p.str("key") != "/gw/routes/"+id {
			t.Fatalf("post answer %s", p.body)
		}
		p2 := e.must(201, "POST", "/gw/admin/routes", `{"uri":"/p2","upstream_id":"1"}`)
		if p2.str("value", "id") == id {
			t.Fatal("POST reused an ID")
		}
		e.fails(400, "wrong route id, do not need it", "POST", "/gw/admin/routes", `{"id":"x","uri":"/p3","upstream_id":"1"}`)
		e.fails(400, "wrong route id", "PUT", "/gw/admin/routes/1", `{"id":"2","uri":"/b","upstream_id":"1"}`)
		// PUT on the collection takes the ID from the body.
		e.must(201, "PUT", "/gw/admin/routes", `{"id":"c1","uri":"/c1","upstream_id":"1"}`)
		e.fails(400, "missing route id", "PUT", "/gw/admin/routes", `{"uri":"/c2","upstream_id":"1"}`)
		e.fails(400, "invalid route id", "PUT", "/gw/admin/routes/bad!id", `{"uri":"/c2","upstream_id":"1"}`)
		e.fails(400, "invalid route id", "PUT", "/gw/admin/routes/"+strings.Repeat("a", 65), `{"uri":"/c2","upstream_id":"1"}`)
		e.fails(400, "invalid request body", "PUT", "/gw/admin/routes/2", `{"uri":`)
		e.fails(400, "missing new configuration", "PUT", "/gw/admin/routes/2", ``)
		e.fails(400, "must be a JSON object", "PUT", "/gw/admin/routes/2", `[1]`)
		d := e.must(200, "DELETE", "/gw/admin/routes/1", "")
		if d.str("deleted") != "1" || d.str("key") != "/gw/routes/1" {
			t.Fatalf("delete answer %s", d.body)
		}
		if e.holder.Load().Match("GET", "h", "/b") != nil {
			t.Fatal("deleted route still in the snapshot")
		}
		e.fails(404, "Key not found", "DELETE", "/gw/admin/routes/1", "")
		e.fails(404, "not found", "GET", "/gw/admin/nothing", "")
		e.fails(405, "not supported `DELETE` method for route", "DELETE", "/gw/admin/routes", "")
		e.fails(404, "not found", "GET", "/gw/admin/routes/1/upstream", "")
	})
}

func TestRouteSchema(t *testing.T) {
	e := newEnv(t, stores[0].open)
	e.must(201, "PUT", "/gw/admin/upstreams/1", `{"nodes":{"127.0.0.1:8080":1}}`)
	long := func(n int) string { return strings.Repeat("a", n) }
	for _, c := range []struct{ body, want string }{
		{`{"upstream_id":"1"}`, `invalid configuration: property "uri" is required`},
		{`{"uri":"/a"}`, `at least one of "upstream", "upstream_id", "service_id", "plugins", "plugin_config_id", "script" is required`},
		{`{"uri":"/a","uris":["/b"],"upstream_id":"1"}`, `property "uris" cannot be used together`},
		{`{"uri":"/a","upstream_id":"1","name":"` + long(101) + `"}`, `property "name" validation failed: string too long, expected at most 100, got 101`},
		{`{"uri":"/a","upstream_id":"1","name":""}`, `string too short`},
		{`{"uri":"` + "/" + long(4096) + `","upstream_id":"1"}`, `property "uri" validation failed: string too long, expected at most 4096`},
		{`{"uri":"","upstream_id":"1"}`, `property "uri" validation failed: string too short`},
		{`{"uri":"/a","upstream_id":"1","desc":"` + long(257) + `"}`, `property "desc" validation failed: string too long`},
		{`{"uri":"/a","upstream_id":"1","labels":{"k":""}}`, `property "labels" validation failed: property "k" validation failed: string too short`},
		{`{"uri":"/a","upstream_id":"1","labels":{"k":"` + long(257) + `"}}`, `string too long, expected at most 256`},
		{`{"uri":"/a","upstream_id":"1","methods":["GET","FETCH"]}`, `property "methods" validation failed: failed to validate item 1: matches none of the enum values`},
		{`{"uri":"/a","upstream_id":"1","methods":["GET","GET"]}`, `expected unique items`},
		{`{"uri":"/a","upstream_id":"1","priority":"high"}`, `property "priority" validation failed: wrong type: expected integer, got string`},
		{`{"uri":"/a","upstream_id":"1","script":"short"}`, `property "script" validation failed: string too short, expected at least 10`},
		{`{"uri":"/a","upstream_id":"1","script":"` + long(102401) + `"}`, `string too long, expected at most 102400`},
		{`{"uri":"/a","script":"` + long(20) + `","plugins":{}}`, `property "plugins" cannot be used together`},
		{`{"uri":"/a","upstream_id":"1","filter_func":"function"}`, `property "filter_func" validation failed: string too short, expected at least 10`},
		{`{"uri":"/a","upstream_id":"1","filter_func":"xfunction(a) end"}`, `property "filter_func" validation failed: failed to match pattern`},
		{`{"uri":"/a","upstream_id":"1","status":2}`, `property "status" validation failed: matches none of the enum values`},
		{`{"uri":"/a","upstream_id":"1","colour":"red"}`, `additional properties forbidden, found colour`},
		{`{"uri":"/a","upstream_id":"1","timeout":{"connect":0,"send":1,"read":1}}`, `property "timeout" validation failed: property "connect" validation failed: expected 0.000 to be at least 0.001`},
		{`{"uri":"/a","upstream":{"type":"roundrobin"}}`, `property "upstream" validation failed: property "nodes" is required`},
		{`{"uri":"/a","upstream":{"nodes":{"a:1":1},"type":"chash"}}`, `property "upstream" validation failed: property "key" is required`},
		{`{"uri":"/a","upstream":{"nodes":{"a:1":1},"type":"chash","hash_on":"header"}}`, `property "key" is required`},
		{`{"uri":"/a","upstream":{"nodes":{"a:1":1},"pass_host":"rewrite"}}`, `property "upstream_host" is required`},
		{`{"uri":"/a","upstream":{"discovery_type":"dns"}}`, `property "service_name" is required`},
		{`{"uri":"/a","upstream":{"nodes":[{"host":"a","port":70000,"weight":1}]}}`, `property "port" validation failed: expected 70000.000 to be at most 65535.000`},
		{`{"uri":"/a","upstream":{"nodes":{"a:1":1},"retries":-1}}`, `property "retries" validation failed`},
		{`{"uri":"/a","upstream":{"nodes":{"a:1":1},"checks":{"passive":{}}}}`, `property "checks" validation failed: property "active" is required`},
		{`{"uri":"/a","remote_addr":"10.0.0.0/99","upstream_id":"1"}`, `invalid configuration: remote_addrs: "10.0.0.0/99" is not an IP or CIDR`},
		{`{"uri":"a","upstream_id":"1"}`, `uri "a": must start with /`},
		{`{"id":{"x":1},"uri":"/a","upstream_id":"1"}`, `property "id"`},
		{`{"uri":"/a","upstream_id":"1","vars":[["arg_x","=","1"]]}`, `invalid configuration: vars: cannot parse vars: unknown operator "="`},
		{`{"uri":"/a","upstream_id":"1","vars":[["nope","==","1"]]}`, `invalid configuration: vars: cannot parse vars: unknown variable "nope"`},
		{`{"uri":"/a","upstream_id":"1","vars":[["uri","~~","("]]}`, `invalid configuration: vars: cannot parse vars: error parsing regexp`},
	} {
		r := e.do("PUT", "/gw/admin/routes/r1", c.body)
		if r.code != 400 || !strings.Contains(r.str("error_msg"), c.want) {
			t.Errorf("%.80s: got %d %s; want 400 with %q", c.body, r.code, r.body, c.want)
		}
	}
	e.fails(404, "Key not found", "GET", "/gw/admin/routes/r1", "") // nothing refused was stored
	// Accepted forms.
	for _, body := range []string{
		`{"uris":["/a","/b"],"hosts":["*.example.com","a.io"],"methods":["GET","PURGE"],"upstream_id":"1","priority":-3,"remote_addrs":["10.0.0.0/8","::1"],"vars":[["arg_x","==","1"]],"enable_websocket":true,"status":0,"timeout":{"connect":0.001,"send":2,"read":3.5}}`,
		`{"uri":"/a","plugins":{"key-auth":{}}}`,
		`{"uri":"/a","script":"` + long(10) + `"}`,
		`{"uri":"/a","upstream":{"nodes":[{"host":"a.svc","port":80,"weight":1}],"type":"chash","hash_on":"consumer"}}`,
		`{"uri":"/a","upstream":{"discovery_type":"dns","service_name":"svc"}}`,
		`{"uri":"/a","upstream_id":1,"filter_func":"function(vars) return true end"}`,
	} {
		e.must(201, "PUT", "/gw/admin/routes/r1", body)
		e.must(200, "DELETE", "/gw/admin/routes/r1", "")
	}
}

func TestReferencesAndForceDelete(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		e.fails(400, "failed to fetch upstream info by upstream id [9], response code: 404", "PUT", "/gw/admin/routes/1", `{"uri":"/a","upstream_id":"9"}`)
		e.fails(400, "failed to fetch service info by service id [9], response code: 404", "PUT", "/gw/admin/routes/1", `{"uri":"/a","service_id":9}`)
		e.fails(400, "failed to fetch plugin config info by plugin_config id [9], response code: 404", "PUT", "/gw/admin/routes/1", `{"uri":"/a","plugin_config_id":"9"}`)
		e.fails(400, "failed to fetch upstream info by upstream id [9]", "PUT", "/gw/admin/services/1", `{"upstream_id":"9"}`)
		e.fails(400, "failed to fetch upstream info by upstream id [9]", "PUT", "/gw/admin/stream_routes/1", `{"upstream_id":"9"}`)

		e.must(201, "PUT", "/gw/admin/upstreams/u1", `{"nodes":{"127.0.0.1:1":1}}`)
		e.must(201, "PUT", "/gw/admin/services/s1", `{"upstream_id":"u1"}`)
		e.must(201, "PUT", "/gw/admin/plugin_configs/p1", `{"plugins":{"prometheus":{}}}`)
		e.must(201, "PUT", "/gw/admin/routes/1", `{"uri":"/a","service_id":"s1","plugin_config_id":"p1"}`)
		e.must(201, "PUT", "/gw/admin/routes/2", `{"uri":"/b","upstream_id":"u1"}`)
		e.fails(400, "can not delete this upstream, route [2] is still using it now", "DELETE", "/gw/admin/upstreams/u1", "")
		e.fails(400, "can not delete this service, route [1] is still using it now", "DELETE", "/gw/admin/services/s1", "")
		e.fails(400, "can not delete this plugin config, route [1] is still using it now", "DELETE", "/gw/admin/plugin_configs/p1", "")
		e.must(200, "DELETE", "/gw/admin/routes/2", "")
		e.fails(400, "can not delete this upstream, service [s1] is still using it now", "DELETE", "/gw/admin/upstreams/u1", "")
		e.must(200, "DELETE", "/gw/admin/plugin_configs/p1?force=true", "")
		// The route lost its plugin config: the snapshot leaves it out and
		// says why.
		snap := e.holder.Load()
		if snap.RouteByID["1"] != nil || len(snap.Errors) != 1 || !strings.Contains(snap.Errors[0].Msg, "plugin config") {
			t.Fatalf("after a forced delete: route %v, errors %+v", snap.RouteByID["1"], snap.Errors)
		}
		e.must(200, "DELETE", "/gw/admin/services/s1?force=true", "")
		e.must(200, "DELETE", "/gw/admin/upstreams/u1?force=true", "")
	})
}

func TestPatch(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		e.must(201, "PUT", "/gw/admin/routes/1", `{"uri":"/a","name":"n","desc":"d","upstream":{"nodes":{"127.0.0.1:1":1},"timeout":{"connect":1,"send":1,"read":1}},"labels":{"a":"1","b":"2"}}`)
		r := e.must(200, "PATCH", "/gw/admin/routes/1", `{"desc":null,"labels":{"b":null,"c":"3"},"upstream":{"timeout":{"read":9}},"methods":["GET"]}`)
		if r.get("value", "desc") != nil || r.str("value", "labels") != `{"a":"1","c":"3"}` || r.str("value", "name") != "n" ||
			r.str("value", "upstream", "timeout", "read") != "9" || r.str("value", "upstream", "timeout", "send") != "1" || r.str("value", "methods") != `["GET"]` {
			t.Fatalf("merge patch %s", r.body)
		}
		// The sub_path form replaces one nested value with any JSON value.
		r = e.must(200, "PATCH", "/gw/admin/routes/1/upstream/nodes", `{"127.0.0.2:2":5}`)
		if r.str("value", "upstream", "nodes") != `{"127.0.0.2:2":5}` {
			t.Fatalf("sub_path patch %s", r.body)
		}
		if u := e.holder.Load().RouteByID["1"].Upstream; len(u.Nodes) != 1 || u.Nodes[0].Addr != "127.0.0.2:2" || u.Nodes[0].Weight != 5 {
			t.Fatalf("snapshot nodes %+v", u.Nodes)
		}
		r = e.must(200, "PATCH", "/gw/admin/routes/1/uri", `"/z"`)
		if r.str("value", "uri") != "/z" {
			t.Fatalf("scalar sub_path %s", r.body)
		}
		e.fails(400, "invalid sub_path", "PATCH", "/gw/admin/routes/1/nothing/here", `1`)
		// A patch whose result is invalid changes nothing.
		before := e.must(200, "GET", "/gw/admin/routes/1", "")
		e.fails(400, `property "uri" is required`, "PATCH", "/gw/admin/routes/1", `{"uri":null}`)
		e.fails(400, "string too long", "PATCH", "/gw/admin/routes/1/name", `"`+strings.Repeat("x", 101)+`"`)
		after := e.must(200, "GET", "/gw/admin/routes/1", "")
		if string(before.body) != string(after.body) {
			t.Fatalf("refused patch changed the route:\n%s\n%s", before.body, after.body)
		}
		e.fails(400, "wrong route id", "PATCH", "/gw/admin/routes/1", `{"id":"2"}`)
		e.fails(404, "Key not found", "PATCH", "/gw/admin/routes/404", `{"uri":"/x"}`)
		e.fails(400, "must be a JSON object", "PATCH", "/gw/admin/routes/1", `"x"`)
		// Upstreams and services patch the same way.
		e.must(201, "PUT", "/gw/admin/upstreams/1", `{"nodes":{"127.0.0.1:1":1}}`)
		e.must(200, "PATCH", "/gw/admin/upstreams/1", `{"retries":2}`)
		e.must(201, "PUT", "/gw/admin/services/1", `{"upstream_id":"1"}`)
		e.must(200, "PATCH", "/gw/admin/services/1", `{"name":"svc"}`)
		if u := e.holder.Load().Upstreams["1"]; u.Retries != 2 {
			t.Fatalf("upstream patch not applied: %+v", u)
		}
	})
}

func TestTTL(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		e.fails(400, "invalid argument ttl", "PUT", "/gw/admin/routes/1?ttl=0", `{"uri":"/a","plugins":{"prometheus":{}}}`)
		e.fails(400, "invalid argument ttl", "PUT", "/gw/admin/routes/1?ttl=x", `{"uri":"/a","plugins":{"prometheus":{}}}`)
		e.must(201, "PUT", "/gw/admin/routes/1?ttl=1", `{"uri":"/a","plugins":{"prometheus":{}}}`)
		e.must(200, "GET", "/gw/admin/routes/1", "")
		if e.holder.Load().RouteByID["1"] == nil {
			t.Fatal("ttl route not compiled")
		}
		deadline := time.Now().Add(10 * time.Second)
		for e.do("GET", "/gw/admin/routes/1", "").code != 404 {
			if time.Now().After(deadline) {
				t.Fatal("ttl route never expired")
			}
			time.Sleep(50 * time.Millisecond)
		}
		for e.holder.Load().RouteByID["1"] != nil {
			if time.Now().After(deadline) {
				t.Fatal("expired route still in the snapshot")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

func TestListPagingFilters(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		e.must(201, "PUT", "/gw/admin/upstreams/1", `{"nodes":{"127.0.0.1:1":1}}`)
		e.must(201, "PUT", "/gw/admin/services/1", `{"upstream_id":"1"}`)
		empty := e.must(200, "GET", "/gw/admin/routes", "")
		if string(empty.body) != `{"total":0,"list":[]}` {
			t.Fatalf("empty list %s", empty.body)
		}
		for i := 1; i <= 25; i++ {
			n := itoa(i)
			body := `{"uri":"/r/` + n + `","name":"route-` + n + `","upstream_id":"1"}`
			switch {
			case i%5 == 0:
				body = `{"uris":["/x/` + n + `","/api/` + n + `"],"name":"api-` + n + `","service_id":"1","labels":{"env":"prod"}}`
			case i%2 == 0:
				body = `{"uri":"/r/` + n + `","name":"route-` + n + `","upstream_id":"1","labels":{"env":"dev"}}`
			}
			e.must(201, "PUT", "/gw/admin/routes/"+n, body)
		}
		all := e.must(200, "GET", "/gw/admin/routes", "")
		if all.str("total") != "25" || len(all.get("list").([]any)) != 25 || all.str("list", "0", "value", "id") != "1" || all.str("list", "24", "value", "id") != "25" {
			t.Fatalf("full list total %s", all.str("total"))
		}
		if all.str("list", "0", "key") != "/gw/routes/1" || all.str("list", "0", "createdIndex") == "" || all.str("list", "0", "value", "create_time") == "" {
			t.Fatalf("list item %s", all.str("list", "0"))
		}
		p := e.must(200, "GET", "/gw/admin/routes?page=3&page_size=10", "")
		if p.str("total") != "25" || len(p.get("list").([]any)) != 5 || p.str("list", "0", "value", "id") != "21" {
			t.Fatalf("page 3: %s", p.body)
		}
		p = e.must(200, "GET", "/gw/admin/routes?page_size=10", "")
		if len(p.get("list").([]any)) != 10 || p.str("list", "9", "value", "id") != "10" {
			t.Fatalf("page 1: %s", p.body)
		}
		p = e.must(200, "GET", "/gw/admin/routes?page=9&page_size=10", "")
		if p.str("total") != "25" || len(p.get("list").([]any)) != 0 {
			t.Fatalf("page past the end: %s", p.body)
		}
		e.fails(400, "page_size", "GET", "/gw/admin/routes?page_size=9", "")
		e.fails(400, "page_size", "GET", "/gw/admin/routes?page_size=501", "")
		e.fails(400, "page", "GET", "/gw/admin/routes?page=0&page_size=10", "")
		e.must(200, "GET", "/gw/admin/routes?page_size=500", "")
		count := func(q string) string { return e.must(200, "GET", "/gw/admin/routes?"+q, "").str("total") }
		for q, want := range map[string]string{
			"name=^api-":              "5",
			"name=route-1$":           "1",
			"name=route-(1|2)$":       "2",
			"label=env":               "15",
			"label=env:dev":           "10",
			"label=env:prod":          "5",
			"uri=^/api/":              "5",
			"uri=/r/1":                "9", // 1, 11..19 but 15
			"filter=service_id%3D1":   "5",
			"filter=upstream_id%3D1":  "20",
			"name=api&label=env:prod": "5",
			"filter=upstream_id%3D2":  "0",
			"name=api&filter=service_id%3D1&page_size=10": "5",
		} {
			if got := count(q); got != want {
				t.Errorf("%s: total %s; want %s", q, got, want)
			}
		}
		e.fails(400, "invalid argument name", "GET", "/gw/admin/routes?name=(", "")
		e.fails(400, "invalid argument filter", "GET", "/gw/admin/routes?filter=plugins%3D1", "")
	})
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func TestDuplicateRoute(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		e.must(201, "PUT", "/gw/admin/upstreams/1", `{"nodes":{"127.0.0.1:1":1}}`)
		e.must(201, "PUT", "/gw/admin/routes/1", `{"uri":"/a","methods":["GET","POST"],"upstream_id":"1"}`)
		e.fails(400, "route conflicts with route [1]", "PUT", "/gw/admin/routes/2", `{"uri":"/a","methods":["POST","GET"],"upstream_id":"1"}`)
		e.fails(400, "route conflicts with route [1]", "PUT", "/gw/admin/routes/2", `{"uris":["/b","/a"],"methods":["GET","POST"],"upstream_id":"1"}`)
		e.fails(400, "route conflicts with route [1]", "POST", "/gw/admin/routes", `{"uri":"/a","methods":["GET","POST"],"upstream_id":"1"}`)
		for i, ok := range []string{
			`{"uri":"/a","methods":["GET"],"upstream_id":"1"}`,                                    // partially overlapping methods
			`{"uri":"/a","methods":["GET","POST"],"priority":1,"upstream_id":"1"}`,                // other priority
			`{"uri":"/a/*","methods":["GET","POST"],"upstream_id":"1"}`,                           // nested path
			`{"uri":"/a","methods":["GET","POST"],"vars":[["arg_x","==","1"]],"upstream_id":"1"}`, // vars
			`{"uri":"/a","methods":["GET","POST"],"host":"a.io","upstream_id":"1"}`,               // host
		} {
			e.must(201, "PUT", "/gw/admin/routes/ok"+itoa(i), ok)
		}
		// Rewriting the route itself is not a conflict.
		e.must(200, "PUT", "/gw/admin/routes/1", `{"uri":"/a","methods":["GET","POST"],"upstream_id":"1","name":"same"}`)
	})
}

func TestValuesStoredAsSent(t *testing.T) {
	e := newEnv(t, stores[0].open)
	e.must(201, "PUT", "/gw/admin/upstreams/1", `{"nodes":{"127.0.0.1:1":1},"retry_timeout":1.50}`)
	kv, err := e.st.Get(t.Context(), "/upstreams/1")
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{`"type"`, `"scheme"`, `"pass_host"`, `"retries"`} {
		if strings.Contains(string(kv.Value), absent) {
			t.Fatalf("default %s was stored: %s", absent, kv.Value)
		}
	}
	if !strings.Contains(string(kv.Value), `"retry_timeout":1.50`) {
		t.Fatalf("number not kept as sent: %s", kv.Value)
	}
	u := e.holder.Load().Upstreams["1"]
	if u.Type != "roundrobin" || u.Scheme != "http" || u.PassHost != "pass" || u.Retries != -1 || u.Nodes[0].Addr != "127.0.0.1:1" {
		t.Fatalf("defaults not applied in the snapshot: %+v", u)
	}
}

// TestOtherWriter: a change written to the store by another process (here
// straight into the store) reaches the snapshot through the watch.
func TestOtherWriter(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		kv, err := e.st.Put(t.Context(), "/routes/w", []byte(`{"id":"w","uri":"/w","plugins":{"prometheus":{}}}`), store.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !e.runner.WaitRev(kv.ModRev, 5*time.Second) || e.holder.Load().Match("GET", "h", "/w") == nil {
			t.Fatal("a store write did not reach the snapshot")
		}
		// A stored body that does not compile is left out and reported,
		// without stopping the rest.
		kv, _ = e.st.Put(t.Context(), "/routes/bad", []byte(`{"id":"bad","uri":"/bad","upstream_id":"nope"}`), store.PutOptions{})
		e.runner.WaitRev(kv.ModRev, 5*time.Second)
		snap := e.holder.Load()
		if snap.RouteByID["bad"] != nil || len(snap.Errors) != 1 || snap.RouteByID["w"] == nil {
			t.Fatalf("bad stored route: errors %+v", snap.Errors)
		}
	})
}
