package suite

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"gw/perf/load"
)

// TestSinkReceivesExports: a gw with scenario 8's exporters block delivers
// both exporters' batches to the discard sink, so the gw-exporters figure
// measures real exporting (GW_BIN names a built gw; otherwise one is built).
func TestSinkReceivesExports(t *testing.T) {
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
	s, err := startSink()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	file := filepath.Join(t.TempDir(), "x.yaml")
	if err := os.WriteFile(file, []byte(BasicFile("")+exportersBlock(s.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	gw, err := StartGW(bin, -1, file, []string{"PERF_MOCK=http://" + mock.Addr, "PERF_UPSTREAM_KEY=sk", "PERF_CALLER_KEY=perf-caller"})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Stop()
	res, err := load.Run(t.Context(), load.Config{Target: "http://" + gw.Addr + "/v1", APIKey: "perf-caller", Model: "gpt", Connections: 4, Duration: time.Second})
	if err != nil || res.Errors > 0 {
		t.Fatal(err, res.ErrorsByClass)
	}
	deadline := time.Now().Add(20 * time.Second)
	for (s.Puts() == 0 || s.Requests() == s.Puts()) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if s.Puts() == 0 || s.Requests() == s.Puts() {
		t.Fatalf("sink: %d requests, %d object uploads; want both exporters delivering", s.Requests(), s.Puts())
	}
}
