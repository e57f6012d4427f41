package main

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// echoBackend answers every request with its method, Host and URI on the
// first line and each request header ("Name: v1|v2") on the next ones; the
// path /status/404 answers the backend's own 404.
func echoBackend(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/status/404" {
			w.WriteHeader(404)
			io.WriteString(w, "backend 404")
			return
		}
		var sb strings.Builder
		sb.WriteString(r.Method + " " + r.Host + " " + r.URL.RequestURI() + "\n")
		names := make([]string, 0, len(r.Header))
		for n := range r.Header {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			sb.WriteString(n + ": " + strings.Join(r.Header[n], "|") + "\n")
		}
		io.WriteString(w, sb.String())
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

type gwResp struct {
	code int
	hdr  http.Header
	body string
}

// do sends one data-plane request; headers are name/value pairs ("Host"
// sets the request's host).
func (g *adminGW) do(t *testing.T, method, path string, headers ...string) gwResp {
	t.Helper()
	req, err := http.NewRequest(method, g.gateway+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return gwResp{code: resp.StatusCode, hdr: resp.Header, body: string(b)}
}

func (r gwResp) has(line string) bool {
	for _, l := range strings.Split(r.body, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

func (r gwResp) want(t *testing.T, code int, lines ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("got %d %q; want %d", r.code, r.body, code)
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "!") {
			if strings.Contains(r.body, l[1:]) {
				t.Errorf("body has %q; want it gone:\n%s", l[1:], r.body)
			}
			continue
		}
		if !r.has(l) && !(strings.HasPrefix(l, "=") && r.body == l[1:]) {
			t.Errorf("body lacks %q:\n%s", l, r.body)
		}
	}
}

// r0values returns the sorted values the backend saw for header name.
func r0values(r gwResp, name string) string {
	for _, l := range strings.Split(r.body, "\n") {
		if v, ok := strings.CutPrefix(l, name+": "); ok {
			vs := strings.Split(v, "|")
			sort.Strings(vs)
			return strings.Join(vs, ",")
		}
	}
	return ""
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func TestPluginsE2E(t *testing.T) {
	start := time.Now()
	g := startAdminGW(t, "--data-dir", t.TempDir())
	be := echoBackend(t)
	echoAddr := be
	g.want(t, 201, "PUT", "/upstreams/echo", `{"nodes":{"`+be+`":1}}`)
	up := `"upstream_id":"echo"`
	be = strings.TrimPrefix(g.gateway, "http://") // pass_host: the client's Host

	g.want(t, 201, "PUT", "/consumers", `{"username":"jack","plugins":{"key-auth":{"key":"jack-key"},"basic-auth":{"username":"jack","password":"p:ss"}}}`)
	g.want(t, 201, "PUT", "/consumers/jack/credentials/second", `{"plugins":{"key-auth":{"key":"jack-key-2"}}}`)
	g.want(t, 201, "PUT", "/consumers", `{"username":"lim","plugins":{"key-auth":{"key":"lim-key"},"limit-count":{"count":2,"time_window":60,"rejected_code":429}}}`)
	g.want(t, 201, "PUT", "/consumers", `{"username":"jwtuser","plugins":{"jwt-auth":{"key":"jwt-key","secret":"jwt-secret-0123456789"}}}`)

	t.Run("key-auth", func(t *testing.T) {
		g.want(t, 201, "PUT", "/routes/ka", `{"uri":"/ka","plugins":{"key-auth":{},"proxy-rewrite":{"headers":{"set":{"X-Consumer":"$consumer_name"}}}},`+up+`}`)
		g.want(t, 201, "PUT", "/routes/kah", `{"uri":"/kah","plugins":{"key-auth":{"hide_credentials":true,"header":"x-key","query":"k"}},`+up+`}`)
		r := g.do(t, "GET", "/ka")
		r.want(t, 401, `={"message":"Missing API key in request"}`)
		g.do(t, "GET", "/ka", "apikey", "nope").want(t, 401, `={"message":"Invalid API key in request"}`)
		g.do(t, "GET", "/ka", "apikey", "jack-key").want(t, 200, "X-Consumer: jack", "Apikey: jack-key")
		g.do(t, "GET", "/ka?apikey=jack-key-2").want(t, 200, "X-Consumer: jack")
		g.do(t, "GET", "/kah?a=1&k=jack-key").want(t, 200, "GET "+be+" /kah?a=1", "!jack-key")
		g.do(t, "GET", "/kah", "X-Key", "jack-key").want(t, 200, "!X-Key", "!jack-key")
		g.do(t, "GET", "/kah", "apikey", "jack-key").want(t, 401)
	})

	t.Run("meta-disable", func(t *testing.T) {
		g.want(t, 201, "PUT", "/routes/off", `{"uri":"/off","plugins":{"key-auth":{"_meta":{"disable":true}}},`+up+`}`)
		g.do(t, "GET", "/off").want(t, 200, "GET "+be+" /off")
	})

	t.Run("basic-auth", func(t *testing.T) {
		g.want(t, 201, "PUT", "/routes/ba", `{"uri":"/ba","plugins":{"basic-auth":{"hide_credentials":true},"proxy-rewrite":{"headers":{"set":{"X-Consumer":"$consumer_name"}}}},`+up+`}`)
		g.do(t, "GET", "/ba").want(t, 401, `={"message":"Missing authorization in request"}`)
		g.do(t, "GET", "/ba", "Authorization", "Bearer x").want(t, 401, `={"message":"Invalid authorization in request"}`)
		g.do(t, "GET", "/ba", "Authorization", basic("jack", "p")).want(t, 401, `={"message":"Invalid user authorization"}`)
		g.do(t, "GET", "/ba", "Authorization", basic("jack", "")).want(t, 401)
		// The password is everything after the first colon.
		g.do(t, "GET", "/ba", "Authorization", basic("jack", "p:ss")).want(t, 200, "X-Consumer: jack", "!Authorization")
		g.want(t, 400, "PUT", "/consumers", `{"username":"empty","plugins":{"basic-auth":{"username":"empty","password":""}}}`)
	})

	t.Run("jwt-auth", func(t *testing.T) {
		g.want(t, 201, "PUT", "/routes/jwt", `{"uri":"/jwt","plugins":{"jwt-auth":{},"proxy-rewrite":{"headers":{"set":{"X-Consumer":"$consumer_name"}}}},`+up+`}`)
		sign := func(secret string, claims jwt.MapClaims) string {
			s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		exp := time.Now().Add(time.Hour).Unix()
		good := sign("jwt-secret-0123456789", jwt.MapClaims{"key": "jwt-key", "exp": exp})
		g.do(t, "GET", "/jwt").want(t, 401, `={"message":"Missing JWT token in request"}`)
		g.do(t, "GET", "/jwt", "Authorization", "Bearer "+good).want(t, 200, "X-Consumer: jwtuser")
		g.do(t, "GET", "/jwt?jwt="+good).want(t, 200, "X-Consumer: jwtuser")
		g.do(t, "GET", "/jwt", "Cookie", "jwt="+good).want(t, 200, "X-Consumer: jwtuser")
		g.do(t, "GET", "/jwt", "Authorization", sign("wrong-secret-0123456", jwt.MapClaims{"key": "jwt-key", "exp": exp})).want(t, 401, `={"message":"failed to verify jwt"}`)
		g.do(t, "GET", "/jwt", "Authorization", sign("jwt-secret-0123456789", jwt.MapClaims{"key": "jwt-key", "exp": time.Now().Add(-time.Minute).Unix()})).want(t, 401, `={"message":"failed to verify jwt"}`)
		g.do(t, "GET", "/jwt", "Authorization", sign("jwt-secret-0123456789", jwt.MapClaims{"key": "other", "exp": exp})).want(t, 401, `={"message":"Invalid user key in JWT token"}`)
		g.do(t, "GET", "/jwt", "Authorization", sign("jwt-secret-0123456789", jwt.MapClaims{"exp": exp})).want(t, 401, `={"message":"missing user key in JWT token"}`)
		g.do(t, "GET", "/jwt", "Authorization", "not.a.jwt").want(t, 401, `={"message":"JWT token invalid"}`)
	})

	t.Run("proxy-rewrite", func(t *testing.T) {
		g.want(t, 201, "PUT", "/routes/pr", `{"uri":"/pr/*","plugins":{"proxy-rewrite":{"uri":"/new${uri}/${arg_v ?? none}/\\$lit","host":"rewritten.example","method":"POST",`+
			`"headers":{"add":{"X-Multi":["a","b"]},"set":{"X-Set":["s1","s2"],"X-Addr":"$remote_addr"},"remove":["X-Drop"]}}},`+up+`}`)
		g.do(t, "GET", "/pr/x?q=1", "X-Drop", "gone", "X-Set", "old", "X-Multi", "c").want(t, 200,
			"POST rewritten.example /new/pr/x/none/$lit?q=1", "X-Set: s1|s2", "X-Addr: 127.0.0.1", "!X-Drop")
		// headers.add with an array adds one header per value next to the
		// client's own.
		if got := r0values(g.do(t, "GET", "/pr/x", "X-Multi", "c"), "X-Multi"); got != "a,b,c" {
			t.Errorf("headers.add with an array: X-Multi values %q; want a,b,c", got)
		}
		g.do(t, "GET", "/pr/y?v=7").want(t, 200, "POST rewritten.example /new/pr/y/7/$lit?v=7")
		g.want(t, 201, "PUT", "/routes/rx", `{"uri":"/rx/*","plugins":{"proxy-rewrite":{"regex_uri":["^/rx/(\\w+)/(\\w+)","/to/$2-$1","^/rx/(.*)","/other/$1"]}},`+up+`}`)
		g.do(t, "GET", "/rx/a/b?z=1").want(t, 200, "GET "+be+" /to/b-a?z=1")
		g.do(t, "GET", "/rx/a").want(t, 200, "GET "+be+" /other/a")
		g.want(t, 400, "PUT", "/routes/bad", `{"uri":"/bad","plugins":{"proxy-rewrite":{"uri":"no-slash"}},`+up+`}`)
	})

	t.Run("limit-count", func(t *testing.T) {
		g.want(t, 201, "PUT", "/routes/lc", `{"uri":"/lc","plugins":{"limit-count":{"count":2,"time_window":60,"rejected_code":429,"rejected_msg":"slow down","key":"http_x_user"}},`+up+`}`)
		for i, want := range []string{"1", "0"} {
			r := g.do(t, "GET", "/lc", "X-User", "u1")
			r.want(t, 200)
			if r.hdr.Get("X-RateLimit-Limit") != "2" || r.hdr.Get("X-RateLimit-Remaining") != want || r.hdr.Get("X-RateLimit-Reset") == "" {
				t.Errorf("request %d: headers %v", i, r.hdr)
			}
		}
		r := g.do(t, "GET", "/lc", "X-User", "u1")
		r.want(t, 429, `={"error_msg":"slow down"}`)
		if r.hdr.Get("X-RateLimit-Remaining") != "0" {
			t.Errorf("refusal headers %v", r.hdr)
		}
		// Another key has its own counter.
		g.do(t, "GET", "/lc", "X-User", "u2").want(t, 200)
		// A window the limiter has no kind for is counted in process.
		g.want(t, 201, "PUT", "/routes/lc7", `{"uri":"/lc7","plugins":{"limit-count":{"count":1,"time_window":7,"key_type":"constant","key":"all","show_limit_quota_header":false}},`+up+`}`)
		r = g.do(t, "GET", "/lc7")
		r.want(t, 200)
		if r.hdr.Get("X-RateLimit-Limit") != "" {
			t.Errorf("show_limit_quota_header false: %v", r.hdr)
		}
		g.do(t, "GET", "/lc7").want(t, 503)
		// Consumer-level limit after auth: the consumer's limit-count runs
		// on a route that has none.
		g.do(t, "GET", "/ka", "apikey", "lim-key").want(t, 200, "X-Consumer: lim")
		g.do(t, "GET", "/ka", "apikey", "lim-key").want(t, 200)
		g.do(t, "GET", "/ka", "apikey", "lim-key").want(t, 429)
		g.do(t, "GET", "/ka", "apikey", "jack-key").want(t, 200)
	})

	t.Run("http-logger", func(t *testing.T) {
		got := make(chan string, 16)
		recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			got <- r.Header.Get("Authorization") + " " + string(b)
		}))
		defer recv.Close()
		g.want(t, 201, "PUT", "/plugin_metadata/http-logger", `{"log_format":{"st":"$status","who":"$consumer_name","path":"$uri","rl":"$rate_limiting_info","x":"${arg_x ?? none}"}}`)
		g.want(t, 201, "PUT", "/routes/hl", `{"uri":"/hl","plugins":{"key-auth":{},"limit-count":{"count":5,"time_window":60,"key":"consumer_name"},`+
			`"http-logger":{"uri":"`+recv.URL+`/log","auth_header":"Bearer log-token","batch_max_size":2}},`+up+`}`)
		g.do(t, "GET", "/hl?x=1", "apikey", "jack-key").want(t, 200)
		g.do(t, "GET", "/hl").want(t, 401)
		select {
		case b := <-got:
			want := `Bearer log-token [{"path":"/hl","rl":"{\"rate_limiting_key\":\"jack\",\"rate_limiting_limit\":5,\"rate_limiting_remaining\":4,\"rate_limiting_reset\":`
			if !strings.HasPrefix(b, want) || !strings.Contains(b, `"st":200,"who":"jack","x":"1"},{"path":"/hl","rl":"","st":401,"who":"","x":"none"}]`) {
				t.Errorf("batch %s", b)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no batch within 5 s")
		}
		// A batch below batch_max_size goes out after inactive_timeout.
		g.want(t, 201, "PUT", "/routes/hl2", `{"uri":"/hl2","plugins":{"http-logger":{"uri":"`+recv.URL+`/log","inactive_timeout":1,"concat_method":"new_line","log_format":{"s":"$status"}}},`+up+`}`)
		g.do(t, "GET", "/hl2").want(t, 200)
		select {
		case b := <-got:
			if b != ` {"s":200}` {
				t.Errorf("new_line batch %q", b)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no batch after inactive_timeout")
		}
	})

	t.Run("prometheus", func(t *testing.T) {
		g.want(t, 400, "PUT", "/plugin_metadata/prometheus", `{"disabled_labels":{"http_latency":["type"]}}`)
		g.want(t, 201, "PUT", "/plugin_metadata/prometheus", `{"disabled_labels":{"http_status":["node"]}}`)
		g.want(t, 201, "PUT", "/routes/prom", `{"uri":"/prom","name":"promname","plugins":{"prometheus":{"prefer_name":true},"key-auth":{}},`+up+`}`)
		g.do(t, "GET", "/prom", "apikey", "jack-key").want(t, 200)
		g.do(t, "GET", "/prom").want(t, 401)
		resp, err := http.Get("http://" + g.addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range []string{
			`gw_http_status{code="200",route="promname",service="",consumer="jack"} 1`,
			`gw_http_status{code="401",route="promname",service="",consumer=""} 1`,
			`gw_bandwidth{type="egress",route="promname",service="",consumer="jack",node="` + strings.TrimPrefix(echoAddr, "http://") + `"}`,
			`gw_http_latency_count{type="request",route="promname",service="",consumer="jack",node="`,
		} {
			if !strings.Contains(string(b), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})

	t.Run("not-built", func(t *testing.T) {
		code, m := g.call(t, "PUT", "/routes/pm", `{"uri":"/pm","plugins":{"limit-req":{"rate":1,"burst":1,"key":"remote_addr"}},`+up+`}`)
		if code != 400 || field(m, "error_msg") != "invalid configuration: unknown plugin [limit-req]" {
			t.Errorf("limit-req route: %d %v; want 400 unknown plugin", code, m)
		}
		resp, err := http.Get(g.admin + "/plugins/list?api_key=" + e2eAdminKey)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), "limit-req") || !strings.Contains(string(b), "prometheus") || !strings.Contains(string(b), "ai-proxy-multi") {
			t.Errorf("/plugins/list: %s", b)
		}
	})

	t.Run("error-page", func(t *testing.T) {
		g.want(t, 201, "PUT", "/plugin_metadata/error-page", `{"enable":true,"error_404":{"body":"<h1>none here</h1>","content_type":"text/html"}}`)
		g.want(t, 201, "PUT", "/global_rules/ep", `{"plugins":{"error-page":{}}}`)
		r := g.do(t, "GET", "/nothing")
		r.want(t, 404, "=<h1>none here</h1>")
		if ct := r.hdr.Get("Content-Type"); ct != "text/html" {
			t.Errorf("content type %q", ct)
		}
		g.want(t, 201, "PUT", "/routes/up404", `{"uri":"/status/404",`+up+`}`)
		g.do(t, "GET", "/status/404").want(t, 404, "=backend 404")
		g.want(t, 200, "DELETE", "/global_rules/ep", "")
	})

	t.Run("global-rules-order", func(t *testing.T) {
		// Rule "1" sets X-Step before rule "2" counts by it: the client's
		// own X-Step values never reach the counter.
		g.want(t, 201, "PUT", "/global_rules/1", `{"plugins":{"proxy-rewrite":{"headers":{"set":{"X-Step":"one"},"add":{"X-Order":"global"}}}}}`)
		g.want(t, 201, "PUT", "/global_rules/2", `{"plugins":{"limit-count":{"count":3,"time_window":60,"rejected_code":429,"key_type":"var_combination","key":"$http_x_step global"}}}`)
		g.want(t, 201, "PUT", "/routes/order", `{"uri":"/order","plugins":{"proxy-rewrite":{"headers":{"add":{"X-Order":"route"}}}},`+up+`}`)
		g.do(t, "GET", "/order", "X-Step", "a").want(t, 200, "X-Order: global|route", "X-Step: one")
		g.do(t, "GET", "/order", "X-Step", "b").want(t, 200)
		g.do(t, "GET", "/order", "X-Step", "c").want(t, 200)
		g.do(t, "GET", "/order", "X-Step", "d").want(t, 429)
		// Global rules also run for requests no route matches.
		g.do(t, "GET", "/nothing").want(t, 429)
		g.want(t, 200, "DELETE", "/global_rules/2", "")
		g.do(t, "GET", "/order").want(t, 200)
	})
	t.Logf("TestPluginsE2E wall time %v", time.Since(start))
}
