package suite

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParsePeer(t *testing.T) {
	f := func(in string, want Peer, wantErr bool) {
		t.Helper()
		got, err := ParsePeer(in)
		if (err != nil) != wantErr {
			t.Fatalf("ParsePeer(%q) error %v; want error %v", in, err, wantErr)
		}
		if err == nil && got != want {
			t.Fatalf("ParsePeer(%q) = %+v; want %+v", in, got, want)
		}
	}
	f("gomodel=http://127.0.0.1:8081/v1", Peer{Name: "gomodel", URL: "http://127.0.0.1:8081/v1", Model: "gpt-4o", StreamModel: "gpt-4o"}, false)
	f("b=http://h:1/v1/,key=sk-x,model=m,stream-model=ms,pid=42",
		Peer{Name: "b", URL: "http://h:1/v1", APIKey: "sk-x", Model: "m", StreamModel: "ms", PID: 42}, false)
	f("b=http://h:1/v1,model=m", Peer{Name: "b", URL: "http://h:1/v1", Model: "m", StreamModel: "m"}, false)
	f("nourl", Peer{}, true)
	f("=http://h/v1", Peer{}, true)
	f("b=ftp://h/v1", Peer{}, true)
	f("b=http://h/v1,pid=x", Peer{}, true)
	f("b=http://h/v1,colour=red", Peer{}, true)
}

func TestMedian(t *testing.T) {
	f := func(in []float64, want float64) {
		t.Helper()
		if got := median(in); got != want {
			t.Fatalf("median(%v) = %v; want %v", in, got, want)
		}
	}
	f(nil, 0)
	f([]float64{3}, 3)
	f([]float64{5, 1, 3}, 3)
	f([]float64{4, 1, 3, 2}, 2.5)
}

func TestRoundRatios(t *testing.T) {
	f := func(a, b, want []float64) {
		t.Helper()
		got := roundRatios(a, b)
		if len(got) != len(want) {
			t.Fatalf("roundRatios(%v, %v) = %v; want %v", a, b, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("roundRatios(%v, %v) = %v; want %v", a, b, got, want)
			}
		}
	}
	f([]float64{90, 50, 30}, []float64{100, 50, 60}, []float64{0.9, 1, 0.5})
	f([]float64{10, 20}, []float64{10}, []float64{1}) // a round one side lacks
	f([]float64{5}, []float64{0}, []float64{5})       // a dead round divides by 1, not 0
	f(nil, nil, []float64{})
}

// TestKernelReadings: the machine-wide counters scenario 8 reports read
// on Linux, and a loopback exchange moves the segment count.
func TestKernelReadings(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	soft, err := softirqSeconds()
	if err != nil || soft < 0 {
		t.Fatalf("softirqSeconds = %v, %v", soft, err)
	}
	before, err := tcpOutSegs()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if after, err := tcpOutSegs(); err != nil || after <= before {
		t.Fatalf("OutSegs %v → %v (%v): a loopback exchange sent no segment", before, after, err)
	}
}

// TestExporterTurnsFigures: gw and gw-exporters run by turns, AB then BA,
// each pair's ratio taken the right way round, their median against the
// budget and the pooled ratio in the note.
func TestExporterTurnsFigures(t *testing.T) {
	s, err := startSink()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gw, gwx := closedTarget{name: "gw"}, closedTarget{name: "gw-exporters"}
	rps := map[string]float64{"gw": 100, "gw-exporters": 90}
	var order []string
	measure := func(name string, tg closedTarget) (closedRun, error) {
		order = append(order, name)
		r := rps[tg.name]
		if name == "gw-t3" { // a disturbed turn: its pair's ratio is the outlier
			r = 50
		}
		return closedRun{rps: r, cpuUS: r / 10}, nil
	}
	rep := &Report{}
	bud := &Budgets{ExportersRatioMin: 0.95}
	o := Options{Duration: 8 * time.Second, Log: func(string, ...any) {}}
	if err := exporterTurnsFigures(o, rep, bud, "8 closed loop buffered", s, measure, gw, gwx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order[:4], " "); got != "gw-t1 gw-exporters-t1 gw-exporters-t2 gw-t2" {
		t.Fatalf("order %s", got)
	}
	if len(order) != 2*exporterTurns {
		t.Fatalf("%d runs", len(order))
	}
	f := rep.Figures[0]
	if f.Value != 0.9 || f.Budget == nil || *f.Budget != 0.95 {
		t.Fatalf("figure %+v", f)
	}
	if !strings.Contains(f.Note, "0.90, 0.90, 1.80, 0.90") || !strings.Contains(f.Note, "pooled 0.960") {
		t.Fatalf("note %q", f.Note)
	}
	if len(rep.Figures) != 2 || rep.Figures[1].Name != "gw-exporters CPU per request" {
		t.Fatalf("figures %+v", rep.Figures)
	}
}
