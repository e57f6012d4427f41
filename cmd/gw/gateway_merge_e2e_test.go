package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// headerBackend names itself and echoes the headers the merged plugins
// set, so a test sees which plugin configuration ran.
func headerBackend(t *testing.T, name string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s from=%s pc=%s", name, r.Header.Get("X-From"), r.Header.Get("X-PC"))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// answers waits until GET path with Host host answers 200 with exactly
// body and the X-RateLimit-Limit header limit ("" for none): a write is
// served once the watch applied it.
func (g *adminGW) answers(t *testing.T, path, host, body, limit string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		req, err := http.NewRequest("GET", g.gateway+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got := resp.Header.Get("X-RateLimit-Limit")
		if resp.StatusCode == 200 && string(b) == body && got == limit {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s (Host %s): %d %q limit %q; want 200 %q limit %q", path, host, resp.StatusCode, b, got, body, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGatewayMergeE2E: services and plugin configs merged into routes
// (plugins, upstream, hosts; the route wins on a same-named plugin, a
// plugin config wins over a service), and admin writes to the service or
// plugin config changing what the untouched routes serve.
func TestGatewayMergeE2E(t *testing.T) {
	g := startAdminGW(t, "--data-dir", t.TempDir())
	a, b := headerBackend(t, "A"), headerBackend(t, "B")
	g.want(t, 201, "PUT", "/upstreams/ua", `{"nodes":{"`+a+`":1}}`)
	g.want(t, 201, "PUT", "/upstreams/ub", `{"nodes":{"`+b+`":1}}`)
	rewrite := func(from string) string {
		return `"proxy-rewrite":{"headers":{"set":{"X-From":"` + from + `"}}}`
	}
	limit := func(n int) string { return fmt.Sprintf(`"limit-count":{"count":%d,"time_window":60}`, n) }

	t.Run("service", func(t *testing.T) {
		g.want(t, 201, "PUT", "/services/s1", `{"upstream_id":"ua","hosts":["svc.test"],"plugins":{`+rewrite("service")+`,`+limit(1000)+`}}`)
		g.want(t, 201, "PUT", "/routes/rs1", `{"uri":"/s","service_id":"s1"}`)
		g.want(t, 201, "PUT", "/routes/rs2", `{"uri":"/s2","service_id":"s1","plugins":{`+rewrite("route")+`}}`)
		g.want(t, 201, "PUT", "/routes/rs3", `{"uri":"/s3","service_id":"s1","hosts":["own.test"],"upstream_id":"ub"}`)

		// The service's upstream, plugins and hosts.
		g.answers(t, "/s", "svc.test", "A from=service pc=", "1000")
		if code, _ := g.get(t, "GET", "/s", "Host", "other.test"); code != 404 {
			t.Errorf("/s outside the service's hosts: %d; want 404", code)
		}
		// The route's proxy-rewrite replaces the service's; the
		// service's limit-count still runs.
		g.answers(t, "/s2", "svc.test", "A from=route pc=", "1000")
		// The route's own hosts and upstream_id replace the service's.
		g.answers(t, "/s3", "own.test", "B from=service pc=", "1000")
		if code, _ := g.get(t, "GET", "/s3", "Host", "svc.test"); code != 404 {
			t.Errorf("/s3 with the service's host although the route names its own: %d; want 404", code)
		}

		// Updating only the service changes what its routes serve.
		g.want(t, 200, "PUT", "/services/s1", `{"upstream_id":"ub","hosts":["svc.test"],"plugins":{`+rewrite("service2")+`,`+limit(500)+`}}`)
		g.answers(t, "/s", "svc.test", "B from=service2 pc=", "500")
		g.answers(t, "/s2", "svc.test", "B from=route pc=", "500")
		g.want(t, 200, "PATCH", "/services/s1", `{"hosts":["svc2.test"]}`)
		g.answers(t, "/s", "svc2.test", "B from=service2 pc=", "500")
		if code, _ := g.get(t, "GET", "/s", "Host", "svc.test"); code != 404 {
			t.Errorf("/s with the service's old host: %d; want 404", code)
		}
	})

	t.Run("plugin_config", func(t *testing.T) {
		g.want(t, 201, "PUT", "/plugin_configs/pc1", `{"plugins":{"proxy-rewrite":{"headers":{"set":{"X-From":"pc","X-PC":"1"}}},`+limit(700)+`}}`)
		g.want(t, 201, "PUT", "/routes/rp1", `{"uri":"/p","plugin_config_id":"pc1","upstream_id":"ua"}`)
		g.want(t, 201, "PUT", "/routes/rp2", `{"uri":"/p2","plugin_config_id":"pc1","upstream_id":"ua","plugins":{`+rewrite("route")+`}}`)
		g.answers(t, "/p", "x.test", "A from=pc pc=1", "700")
		// Same-named plugin: the route's configuration replaces the
		// plugin config's whole (X-PC is not set), as APISIX merges.
		g.answers(t, "/p2", "x.test", "A from=route pc=", "700")

		// A route with both: the plugin config wins over the service.
		g.want(t, 201, "PUT", "/routes/rps", `{"uri":"/ps","service_id":"s1","plugin_config_id":"pc1"}`)
		g.answers(t, "/ps", "svc2.test", "B from=pc pc=1", "700")

		// Updating only the plugin config (limit-count dropped).
		g.want(t, 200, "PUT", "/plugin_configs/pc1", `{"plugins":{`+rewrite("pc2")+`}}`)
		g.answers(t, "/p", "x.test", "A from=pc2 pc=", "")
		g.answers(t, "/p2", "x.test", "A from=route pc=", "")
		// Without a limit-count of its own, rps gets the service's again.
		g.answers(t, "/ps", "svc2.test", "B from=pc2 pc=", "500")
	})
}
