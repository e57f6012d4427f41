package suite

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"gw/perf/load"
)

// TestGatewayScenario runs scenario 12 with short loads: the route is
// created through the admin API, served, the gateway and the AI path are
// measured by turns, and every figure is reported without errors (GW_BIN names a built gw; otherwise one is built).
func TestGatewayScenario(t *testing.T) {
	bin := os.Getenv("GW_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "gw")
		if out, err := exec.Command("go", "build", "-o", bin, "gw/cmd/gw").CombinedOutput(); err != nil {
			t.Fatalf("cannot build gw: %v\n%s", err, out)
		}
	}
	mock, err := StartMock(bin, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer mock.Stop()
	o := Options{GWBin: bin, GWCore: -1, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond, Log: t.Logf}
	rep := &Report{Runs: map[string]*load.Result{}}
	if err := gatewayScenario(context.Background(), o, rep, runner(context.Background(), o, rep), "http://"+mock.Addr, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"s12-gateway-max-r1", "s12-ai-max-r1", "s12-direct-max-r1"} {
		if g := rep.Runs[name]; g == nil || g.SuccessRPS == 0 || g.Errors != 0 {
			t.Fatalf("%s: %+v", name, g)
		}
	}
	names := map[string]bool{}
	for _, f := range rep.Figures {
		names[f.Name] = true
		t.Logf("%s: %s = %.2f %s %s", f.Scenario, f.Name, f.Value, f.Unit, f.Note)
	}
	for _, f := range rep.Figures {
		if f.Name == "gateway ratio ≥ AI ratio" && (f.Budget == nil || *f.Budget <= 0 || f.Verdict == "") {
			t.Fatalf("the budget row has no AI-path ratio: %+v", f)
		}
	}
	if !names["gateway / direct req/s"] || !names["AI path / direct req/s"] || !names["gateway ratio ≥ AI ratio"] ||
		!names["gateway CPU per request ≤ AI path's"] || !names["AI path CPU per request"] || !names["added p99 at 2k req/s"] {
		t.Fatalf("figures: %v", names)
	}
}
