package suite

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"gw/perf/load"
)

// perfAdminKey is the admin key of the gateway scenario's gw.
const perfAdminKey = "perf-admin-key"

// StartGateway starts `gw serve` with the admin API and the general
// gateway on (no resource file), routes /v1/* to upstream through the
// admin API and returns the process with Addr set to the data plane.
func StartGateway(gwBin string, core int, dataDir, upstream string) (*Proc, error) {
	// addrs: gw's data plane (the Proc's Addr), the AI listener, the admin API.
	p, addrs, err := Launch("gw", 3, func(a []string) *exec.Cmd {
		cmd := pinned(core, gwBin, "serve", "--listen", a[1], "--admin-listen", a[2], "--gateway-listen", a[0],
			"--data-dir", dataDir, "--debug-listen", "", "--access-log=false")
		cmd.Env = append(os.Environ(), "GW_ADMIN_KEY="+perfAdminKey)
		cmd.Stderr = os.Stderr
		return cmd
	}, func(p *Proc, a []string) error {
		return p.WaitHTTP("http://"+a[2]+"/gw/admin/routes?api_key="+perfAdminKey, 30*time.Second)
	})
	if err != nil {
		return nil, err
	}
	admin := "http://" + addrs[2] + "/gw/admin"
	route := `{"uri":"/v1/*","upstream":{"type":"roundrobin","nodes":{"` + strings.TrimPrefix(upstream, "http://") + `":1}}}`
	req, _ := http.NewRequest("PUT", admin+"/routes/perf", strings.NewReader(route))
	req.Header.Set("X-API-KEY", perfAdminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("cannot create the perf route: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 && resp.StatusCode != 200 {
		p.Stop()
		return nil, fmt.Errorf("cannot create the perf route: status %d", resp.StatusCode)
	}
	// The route is served once the data plane answers something but 404.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := http.Get("http://" + p.Addr + "/v1/models")
		if err == nil {
			r.Body.Close()
			if r.StatusCode != 404 {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("the perf route is not served on %s", p.Addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gatewayScenario measures the general gateway's proxied request against
// the mock directly: the same chat requests through a route that forwards
// them unchanged (no plugins), at 2k req/s open loop (added latency), then
// at maximum throughput with 64 connections interleaved with the AI path
// (gatewayVsAI).
func gatewayScenario(ctx context.Context, o Options, rep *Report, run func(string, load.Config) (*load.Result, error), mockBase, dataDir string) error {
	o.Log("scenario 12: general gateway route proxying vs direct, and vs the AI path (%d interleaved rounds)", gwRatioRounds)
	gw, err := StartGateway(o.GWBin, o.GWCore, dataDir, mockBase)
	if err != nil {
		return err
	}
	defer gw.Stop()
	const sc = "12 general gateway"
	d, err := run("s12-direct-2k", load.Config{Target: mockBase + "/v1", APIKey: "perf-caller", Model: "gpt-4o", Rate: 2000, Connections: 512})
	if err != nil {
		return err
	}
	g, err := run("s12-gateway-2k", load.Config{Target: "http://" + gw.Addr + "/v1", APIKey: "perf-caller", Model: "gpt-4o", Rate: 2000, Connections: 512})
	if err != nil {
		return err
	}
	rep.add(Figure{Scenario: sc, Name: "added p50 at 2k req/s", Value: float64(g.LatencyUS.P50 - d.LatencyUS.P50), Unit: "µs"})
	rep.add(Figure{Scenario: sc, Name: "added p99 at 2k req/s", Value: float64(g.LatencyUS.P99 - d.LatencyUS.P99), Unit: "µs"})
	rep.add(Figure{Scenario: sc, Name: "gateway errors", Value: float64(g.Errors), Unit: "requests"})
	return gatewayVsAI(ctx, o, rep, run, mockBase, gw, filepath.Join(filepath.Dir(dataDir), "gateway-ai"))
}
