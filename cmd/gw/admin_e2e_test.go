package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"gw/admin/store/etcdtest"
)

const e2eAdminKey = "e2e-admin-key"

// adminGW is a gw process with the admin API on.
type adminGW struct {
	*proc
	admin   string // http://host:port/gw/admin
	gateway string // http://host:port of the data plane
}

// startAdminGW starts gw with the admin API and no resource file, and
// waits until both listeners answer.
func startAdminGW(t *testing.T, extra ...string) *adminGW {
	t.Helper()
	var g *adminGW
	startRetrying(t, func() (*proc, func() bool) {
		addr, adminAddr, gwAddr := freeAddr(t), freeAddr(t), freeAddr(t)
		args := append([]string{"serve", "--listen", addr, "--debug-listen", "", "--admin-listen", adminAddr, "--gateway-listen", gwAddr}, extra...)
		cmd := gwCmd(args...)
		cmd.Env = append(cmd.Env, "GW_ADMIN_KEY="+e2eAdminKey)
		g = &adminGW{proc: startProc(t, cmd, addr), admin: "http://" + adminAddr + "/gw/admin", gateway: "http://" + gwAddr}
		return g.proc, func() bool {
			resp, err := http.Get(g.admin + "/routes")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == 401
		}
	})
	return g
}

func (g *adminGW) stop(*testing.T) { g.proc.stop() }

// call sends one admin request with the key and decodes the JSON answer.
func (g *adminGW) call(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, g.admin+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-KEY", e2eAdminKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	_ = dec.Decode(&m)
	return resp.StatusCode, m
}

func (g *adminGW) want(t *testing.T, code int, method, path, body string) map[string]any {
	t.Helper()
	got, m := g.call(t, method, path, body)
	if got != code {
		t.Fatalf("%s %s: got %d %v; want %d", method, path, got, m, code)
	}
	return m
}

func field(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		mm, _ := cur.(map[string]any)
		cur = mm[p]
	}
	switch v := cur.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case nil:
		return ""
	}
	b, _ := json.Marshal(cur)
	return string(b)
}

// TestAdminE2E drives the admin API of the real binary over HTTP with the
// embedded store, then restarts gw on the same data directory.
func TestAdminE2E(t *testing.T) {
	dir := t.TempDir()
	g := startAdminGW(t, "--data-dir", dir)

	// Authentication: header, query, cookie; 401 otherwise.
	resp, err := http.Get(g.admin + "/routes")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(b), `"error_msg":"failed to check token"`) {
		t.Fatalf("no key: %d %s", resp.StatusCode, b)
	}
	if resp, err = http.Get(g.admin + "/routes?api_key=" + e2eAdminKey); err != nil || resp.StatusCode != 200 {
		t.Fatalf("query key: %v %v", err, resp)
	}
	resp.Body.Close()

	g.want(t, 201, "PUT", "/upstreams/1", `{"nodes":{"127.0.0.1:9999":1},"type":"roundrobin"}`)
	m := g.want(t, 201, "PUT", "/routes/1", `{"uri":"/hello","upstream_id":"1","methods":["GET"]}`)
	if field(m, "key") != "/gw/routes/1" || field(m, "value", "uri") != "/hello" {
		t.Fatalf("route answer %v", m)
	}
	m = g.want(t, 200, "GET", "/routes/1", "")
	created := field(m, "createdIndex")
	if created == "" || field(m, "modifiedIndex") != created || field(m, "value", "create_time") == "" {
		t.Fatalf("get %v", m)
	}
	m = g.want(t, 201, "POST", "/routes", `{"uri":"/posted","upstream":{"nodes":{"127.0.0.1:9998":1}}}`)
	postedID := field(m, "value", "id")
	g.want(t, 200, "PATCH", "/routes/"+postedID+"/upstream/nodes", `{"127.0.0.1:9997":3}`)
	m = g.want(t, 200, "GET", "/routes?page=1&page_size=10", "")
	if field(m, "total") != "2" {
		t.Fatalf("list %v", m)
	}
	_, m = g.call(t, "DELETE", "/upstreams/1", "")
	if !strings.Contains(field(m, "error_msg"), "route [1] is still using it now") {
		t.Fatalf("referenced delete %v", m)
	}
	g.want(t, 400, "PUT", "/routes/2", `{"uri":"/hello","upstream_id":"404"}`)
	g.want(t, 400, "PUT", "/routes/2", `{"uri":"/hello","upstream_id":"1","methods":["GET"]}`) // indistinguishable from route 1
	g.want(t, 405, "POST", "/consumers", `{"username":"x"}`)
	g.want(t, 201, "PUT", "/consumers/jack", `{"plugins":{"key-auth":{"key":"jack-key"}}}`)
	g.want(t, 400, "PUT", "/consumers/jill", `{"plugins":{"key-auth":{"key":"jack-key"}}}`)
	g.want(t, 201, "PUT", "/routes/ttl?ttl=1", `{"uri":"/short","upstream_id":"1"}`)
	if m = g.want(t, 200, "GET", "/schema/plugins/limit-count", ""); field(m, "properties", "count", "type") != "integer" {
		t.Fatalf("plugin schema %v", m)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if code, _ := g.call(t, "GET", "/routes/ttl", ""); code == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ttl route did not expire")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The compile ran: its duration histogram is on /metrics.
	if mt := metricsText(t, "http://"+g.addr); !strings.Contains(mt, `gw_config_apply_duration_seconds_count{trigger="admin_full"}`) ||
		!strings.Contains(mt, `gw_config_apply_duration_seconds_count{trigger="admin_watch"}`) {
		t.Fatal("admin compile metrics missing")
	}
	logs := g.stderr.String()
	if strings.Contains(logs, e2eAdminKey) || strings.Contains(logs, "jack-key") {
		t.Fatal("the admin key or a credential reached the log")
	}
	if !strings.Contains(logs, `"field":"admin.listen","missing":"the data plane on gateway.listen serves routes`) {
		t.Fatalf("startup does not say what the admin API does not do:\n%s", logs)
	}

	// The embedded store survives a restart: same resources, same indexes.
	g.stop(t)
	g2 := startAdminGW(t, "--data-dir", dir)
	m = g2.want(t, 200, "GET", "/routes/1", "")
	if field(m, "createdIndex") != created || field(m, "value", "uri") != "/hello" {
		t.Fatalf("after restart %v", m)
	}
	m = g2.want(t, 200, "GET", "/routes/"+postedID, "")
	if field(m, "value", "upstream", "nodes") != `{"127.0.0.1:9997":3}` {
		t.Fatalf("patched route after restart %v", m)
	}
	// The compiled state came back too: the reference check knows route 1.
	g2.want(t, 400, "DELETE", "/upstreams/1", "")
	g2.want(t, 200, "DELETE", "/upstreams/1?force=true", "")
}

// TestAdminE2EEtcdCluster: two gw processes on one real etcd converge
// through the watch: what one writes, the other's compiled state knows
// (its reference and conflict checks run against it), including after
// etcd is killed and restarted mid-run.
func TestAdminE2EEtcdCluster(t *testing.T) {
	etcd := etcdtest.Start(t)
	flags := []string{"--store", "etcd", "--etcd-endpoints", etcd.Endpoint(), "--etcd-prefix", "/e2e"}
	a := startAdminGW(t, flags...)
	b := startAdminGW(t, flags...)

	converge := func(write, check func() bool) time.Duration {
		t.Helper()
		if !write() {
			t.Fatal("write failed")
		}
		start := time.Now()
		for !check() {
			if time.Since(start) > 10*time.Second {
				t.Fatal("the other process never saw the write")
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(start)
	}
	// An upstream written through A; B accepts a route referencing it only
	// once its own watch-driven state holds the upstream.
	d := converge(func() bool {
		code, _ := a.call(t, "PUT", "/upstreams/u1", `{"nodes":{"127.0.0.1:9999":1}}`)
		return code == 201
	}, func() bool {
		code, _ := b.call(t, "PUT", "/routes/r1", `{"uri":"/r1","upstream_id":"u1"}`)
		return code == 201
	})
	// The figure is logged, not held to a millisecond budget: a timed
	// assertion flakes on a loaded CI machine (148 ms once, under -race with
	// other jobs). The bound only says the watch, not a slow poll, did it.
	t.Logf("B compiled A's upstream within %v", d)
	if d > 2*time.Second {
		t.Errorf("convergence took %v; want the watch to deliver it within 2 s", d)
	}
	// B's route is in A's state: A refuses to delete the upstream.
	converge(func() bool { return true }, func() bool {
		_, m := a.call(t, "DELETE", "/upstreams/u1", "")
		return strings.Contains(field(m, "error_msg"), "route [r1] is still using it now")
	})
	m := a.want(t, 200, "GET", "/routes/r1", "")
	if field(m, "key") != "/e2e/routes/r1" {
		t.Fatalf("key under the etcd prefix: %v", m)
	}

	// etcd dies and comes back: the watches resume and the processes
	// converge again.
	etcd.Kill()
	time.Sleep(300 * time.Millisecond)
	etcd.Restart()
	converge(func() bool {
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			if code, _ := a.call(t, "PUT", "/upstreams/u2", `{"nodes":{"127.0.0.1:9998":1}}`); code == 201 {
				return true
			}
			time.Sleep(100 * time.Millisecond)
		}
		return false
	}, func() bool {
		code, _ := b.call(t, "PUT", "/routes/r2", `{"uri":"/r2","upstream_id":"u2"}`)
		return code == 201
	})
	a.want(t, 200, "GET", "/routes/r2", "")
}
