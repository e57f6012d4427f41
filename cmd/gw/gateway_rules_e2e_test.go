package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// ruleBackend answers every request with its name, or with status when
// status is set; delay holds each answer back.
type ruleBackend struct {
	name   string
	srv    *httptest.Server
	status atomic.Int32
	delay  atomic.Int64 // nanoseconds
	hits   atomic.Int64
	probes atomic.Int64 // active health checks (/healthz), always answered 200
}

func newRuleBackend(t *testing.T, name string) *ruleBackend {
	b := &ruleBackend{name: name}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			b.probes.Add(1)
			return
		}
		b.hits.Add(1)
		if d := b.delay.Load(); d > 0 {
			select {
			case <-time.After(time.Duration(d)):
			case <-r.Context().Done():
				return
			}
		}
		if s := b.status.Load(); s != 0 {
			w.WriteHeader(int(s))
		}
		fmt.Fprint(w, name)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *ruleBackend) addr() string { return strings.TrimPrefix(b.srv.URL, "http://") }

// TestGatewayRulesE2E: the route-matching operators the main gateway test
// does not reach (in, ~=, negation), chash on a cookie, a variable, a
// vars combination and the consumer, http-logger's pending-entry bound,
// a passive health check ejecting a node from real traffic, and
// retry_timeout ending retries — one gw, admin API writes, real backends.
func TestGatewayRulesE2E(t *testing.T) {
	g := startAdminGW(t, "--data-dir", t.TempDir())
	a, b := newRuleBackend(t, "A"), newRuleBackend(t, "B")
	up := func(b *ruleBackend) string { return `"upstream":{"nodes":{"` + b.addr() + `":1}}` }

	t.Run("vars operators", func(t *testing.T) {
		g.want(t, 201, "PUT", "/routes/in", `{"uri":"/in","vars":[["arg_a","in",["1","2"]]],`+up(a)+`}`)
		g.want(t, 201, "PUT", "/routes/ne", `{"uri":"/ne","vars":[["http_x_env","~=","prod"]],`+up(a)+`}`)
		g.want(t, 201, "PUT", "/routes/not", `{"uri":"/not","vars":[["http_user_agent","!","~~","bot"]],`+up(a)+`}`)
		g.want(t, 201, "PUT", "/routes/notand", `{"uri":"/notand","vars":[["!AND",["arg_x","==","1"],["arg_y","==","1"]]],`+up(a)+`}`)
		g.served(t, "/in?a=2", "A")
		cases := []struct {
			path    string
			headers []string
			want    int
		}{
			{"/in?a=1", nil, 200},
			{"/in?a=3", nil, 404},
			{"/in", nil, 404},
			{"/ne", []string{"X-Env", "dev"}, 200},
			{"/ne", []string{"X-Env", "prod"}, 404},
			{"/not", []string{"User-Agent", "curl/8"}, 200},
			{"/not", []string{"User-Agent", "googlebot/2.1"}, 404},
			{"/notand?x=1", nil, 200},
			{"/notand?x=1&y=1", nil, 404},
		}
		for _, c := range cases {
			if code, body := g.get(t, "GET", c.path, c.headers...); code != c.want {
				t.Errorf("GET %s %v: %d %s; want %d", c.path, c.headers, code, body, c.want)
			}
		}
	})

	t.Run("chash on a cookie, a variable, vars_combinations and the consumer", func(t *testing.T) {
		nodes := `"nodes":{"` + a.addr() + `":1,"` + b.addr() + `":1}`
		g.want(t, 201, "PUT", "/routes/ck", `{"uri":"/ck","upstream":{"type":"chash","hash_on":"cookie","key":"sid",`+nodes+`}}`)
		g.want(t, 201, "PUT", "/routes/cv", `{"uri":"/cv","upstream":{"type":"chash","hash_on":"vars","key":"arg_user",`+nodes+`}}`)
		g.want(t, 201, "PUT", "/routes/cc", `{"uri":"/cc","upstream":{"type":"chash","hash_on":"vars_combinations","key":"$arg_a-${http_x_b}",`+nodes+`}}`)
		g.want(t, 201, "PUT", "/routes/cn", `{"uri":"/cn","plugins":{"key-auth":{}},"upstream":{"type":"chash","hash_on":"consumer",`+nodes+`}}`)
		for i := 0; i < 24; i++ {
			g.want(t, 201, "PUT", "/consumers", fmt.Sprintf(`{"username":"chu%d","plugins":{"key-auth":{"key":"chk%d"}}}`, i, i))
		}
		g.served(t, "/ck", "", "Cookie", "sid=warm")
		g.served(t, "/cv?user=warm", "")
		g.served(t, "/cc?a=warm", "")
		g.served(t, "/cn", "", "apikey", "chk23")
		for _, tc := range []struct {
			path   func(i int) string
			header func(i int) []string
		}{
			{func(int) string { return "/ck" }, func(i int) []string { return []string{"Cookie", fmt.Sprintf("sid=s%d", i)} }},
			{func(i int) string { return fmt.Sprintf("/cv?user=u%d", i) }, func(int) []string { return nil }},
			{func(i int) string { return fmt.Sprintf("/cc?a=%d", i%6) }, func(i int) []string { return []string{"X-B", fmt.Sprint(i / 6)} }},
			{func(int) string { return "/cn" }, func(i int) []string { return []string{"apikey", fmt.Sprintf("chk%d", i)} }},
		} {
			seen := map[string]bool{}
			for i := 0; i < 24; i++ {
				_, first := g.get(t, "GET", tc.path(i), tc.header(i)...)
				for r := 0; r < 3; r++ {
					if _, again := g.get(t, "GET", tc.path(i), tc.header(i)...); again != first {
						t.Fatalf("%s %v: %q then %q; want the same node for the same key", tc.path(i), tc.header(i), first, again)
					}
				}
				seen[first] = true
			}
			if !seen["A"] || !seen["B"] {
				t.Fatalf("%s: 24 keys all went to %v; want both nodes used", tc.path(0), seen)
			}
		}
	})

	t.Run("passive health check", func(t *testing.T) {
		c, d := newRuleBackend(t, "C"), newRuleBackend(t, "D")
		checks := `"checks":{"active":{"http_path":"/healthz","healthy":{"interval":30,"successes":1},"unhealthy":{"interval":30,"http_failures":1}},` +
			`"passive":{"healthy":{"http_statuses":[200],"successes":3},"unhealthy":{"http_statuses":[500],"http_failures":2}}}`
		g.want(t, 201, "PUT", "/routes/pc", `{"uri":"/pc","upstream":{`+checks+`,"nodes":{"`+c.addr()+`":1,"`+d.addr()+`":1}}}`)
		g.served(t, "/pc", "")
		// The active checker probes each node once at start, then every
		// 30 s. A first probe landing after the passive ejection (a slow
		// CI machine) would mark C healthy again: wait for it first.
		waitFor(t, "the first active probes", func() bool { return c.probes.Load() > 0 && d.probes.Load() > 0 })
		time.Sleep(100 * time.Millisecond) // and for the checker to have read their answers
		c.status.Store(500)
		fails := 0
		for i := 0; i < 40; i++ {
			if code, _ := g.get(t, "GET", "/pc"); code == 500 {
				fails++
			}
		}
		// C answers 500 twice and is ejected by the passive check; the
		// next active probes (30 s on) do not run within the test.
		if fails != 2 {
			t.Fatalf("%d of 40 requests got C's 500; want 2 (then C ejected)", fails)
		}
		waitFor(t, "the passive ejection logged", func() bool {
			return strings.Contains(g.stderr.String(), "passive: http failures")
		})
	})

	t.Run("retry_timeout", func(t *testing.T) {
		// Four nodes slower than the read timeout: retries go to nodes not
		// tried yet, so retries 3 can make four attempts.
		var slow []*ruleBackend
		nodes := `"nodes":{`
		for i := 0; i < 4; i++ {
			s := newRuleBackend(t, fmt.Sprint("S", i))
			s.delay.Store(int64(5 * time.Second))
			slow = append(slow, s)
			if i > 0 {
				nodes += ","
			}
			nodes += `"` + s.addr() + `":1`
		}
		nodes += "}"
		hits := func() (n int64) {
			for _, s := range slow {
				n += s.hits.Load()
			}
			return n
		}
		attempts := func(route, extra string) int64 {
			t.Helper()
			g.want(t, 201, "PUT", "/routes/"+route, `{"uri":"/`+route+`","upstream":{"retries":3,`+extra+`"timeout":{"connect":1,"send":1,"read":0.2},`+nodes+`}}`)
			waitFor(t, route+" served", func() bool { code, _ := g.get(t, "GET", "/"+route); return code != 404 })
			before := hits()
			if code, body := g.get(t, "GET", "/"+route); code != 504 {
				t.Fatalf("/%s over two nodes slower than the read timeout: %d %s; want 504", route, code, body)
			}
			return hits() - before
		}
		if n := attempts("rtnone", ""); n != 4 {
			t.Errorf("retries 3 without retry_timeout: %d attempts; want 4", n)
		}
		// Attempts end at 0.2 s each: the second ends past 0.3 s, so no third.
		if n := attempts("rt", `"retry_timeout":0.3,`); n < 1 || n > 2 {
			t.Errorf("retries 3 with retry_timeout 0.3 s and 0.2 s attempts: %d attempts; want at most 2", n)
		}
	})

	t.Run("http-logger max_pending_entries", func(t *testing.T) {
		// The log receiver holds every batch until released: entries past
		// max_pending_entries (in the batch and in flight) are dropped and
		// counted, and every entry is either delivered or counted.
		release := make(chan struct{})
		var delivered atomic.Int64
		recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release
			b, _ := io.ReadAll(r.Body)
			var entries []json.RawMessage
			if json.Unmarshal(b, &entries) == nil {
				delivered.Add(int64(len(entries)))
			}
		}))
		defer recv.Close()
		g.want(t, 201, "PUT", "/routes/hlp", `{"uri":"/hlp","plugins":{"http-logger":{"uri":"`+recv.URL+`","name":"hlpend","batch_max_size":1,"max_pending_entries":2,"inactive_timeout":1}},`+up(a)+`}`)
		waitFor(t, "/hlp served", func() bool { code, _ := g.get(t, "GET", "/hlp"); return code == 200 })
		const sent = 10
		for i := 1; i < sent; i++ { // the probe above was the first
			if code, _ := g.get(t, "GET", "/hlp"); code != 200 {
				t.Fatalf("request %d: %d", i, code)
			}
		}
		dropped := func() int64 {
			resp, err := http.Get("http://" + g.addr + "/metrics")
			if err != nil {
				return -1
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			m := regexp.MustCompile(`(?m)^gw_gateway_http_logger_dropped_total\{name="hlpend"\} (\d+)$`).FindSubmatch(b)
			if m == nil {
				return 0
			}
			n, _ := strconv.ParseInt(string(m[1]), 10, 64)
			return n
		}
		if d := dropped(); d < sent-3 {
			t.Fatalf("dropped %d of %d with max_pending_entries 2 and the receiver stalled; want ≥ %d", d, sent, sent-3)
		}
		close(release)
		waitFor(t, "every entry delivered or counted", func() bool { return delivered.Load()+dropped() == sent })
	})
}
