package load

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func testResult() *Result {
	return &Result{
		Mode:   OpenLoop,
		Stream: true,
		Config: ResultConfig{Target: "http://127.0.0.1:8090/v1", Rate: 2000, Connections: 10000, DurationS: 10},
		// A status sample with a pipe and a line break must stay in its cell.
		Requests: 20000, Successes: 19990, Errors: 10,
		ErrorsByClass:   map[string]int64{"status_500": 7, "timeout": 3},
		ErrorSamples:    map[string]string{"status_500": "{\"error\":\n\"a|b\"}"},
		RateTargetRPS:   2000,
		RateAchievedRPS: 1999.5,
		SuccessRPS:      1998.5,
		LatencyUS:       Percentiles{Count: 19990, Min: 90, Mean: 412.5, P50: 350, P90: 700, P99: 2100, P999: 15300, Max: 1_250_000},
		LateSends:       &LateSends{ThresholdUS: 1000, Count: 25, Fraction: 0.0013},
		Streams:         &StreamResult{Streams: 19990, Completed: 19990, Chunks: 399800, ChunksPerStream: MinMean{20, 20, 20}},
		Generator:       Generator{WallS: 10, CPUUserS: 1.5, CPUSysS: 0.5, CPUCores: 0.2, GOMAXPROCS: 2},
	}
}

func TestMarkdown(t *testing.T) {
	md := testResult().Markdown()
	for _, want := range []string{
		"### gwload: open-loop, streaming, 2000 req/s for 10s → http://127.0.0.1:8090/v1",
		"| 20000 | 19990 | 10 | 1999.5 | 1998.5 | 2000 | 25 (0.13%) > 1.00ms | 2.00s in 10.00s = 0.20 of 2 cores |",
		"| latency | 19990 | 412µs | 350µs | 700µs | 2.10ms | 15.30ms | 1.25s |",
		"| TTFT | 0 | - | - | - | - | - | - |",
		"| chunk gap |",
		"| send delay |",
		"chunks/stream min 20, mean 20.0, max 20",
		"| status_500 | 7 | {\"error\": \"a\\|b\"} |",
		"| timeout | 3 |  |",
	} {
		if !strings.Contains(md, want) {
			t.Fatalf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Index(md, "status_500") > strings.Index(md, "| timeout") {
		t.Fatalf("error classes not sorted:\n%s", md)
	}

	if strings.Contains(md, "Warning") {
		t.Fatalf("unexpected warning:\n%s", md)
	}
	busy := testResult()
	busy.Generator.CPUCores = 1.8
	busy.LateSends.Fraction = 0.05
	md = busy.Markdown()
	if !strings.Contains(md, "kept 1.80 of 2 cores busy") || !strings.Contains(md, "5.0% of the requests went out more than 1.00ms late") {
		t.Fatalf("no generator warnings:\n%s", md)
	}

	closed := &Result{Mode: ClosedLoop, Config: ResultConfig{Connections: 64, DurationS: 1}}
	md = closed.Markdown()
	if strings.Contains(md, "late sends") || strings.Contains(md, "TTFB") || strings.Contains(md, "error class") ||
		!strings.Contains(md, "closed-loop, buffered, 64 connections for 1s") {
		t.Fatalf("closed-loop buffered markdown:\n%s", md)
	}
}

// TestJSONSchema pins the field names that scripts read.
func TestJSONSchema(t *testing.T) {
	data, err := json.Marshal(testResult())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	f := func(path ...string) {
		t.Helper()
		var v any = m
		for _, k := range path {
			obj, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: %q is not inside an object in %s", path, k, data)
			}
			if v, ok = obj[k]; !ok {
				t.Fatalf("%v: no %q in %s", path, k, data)
			}
		}
	}
	f("mode")
	f("stream")
	f("config", "target")
	f("config", "format")
	f("config", "rate")
	f("config", "connections")
	f("config", "duration_s")
	f("started_at")
	f("elapsed_s")
	f("requests")
	f("successes")
	f("errors")
	f("errors_by_class", "status_500")
	f("error_samples", "status_500")
	f("rate_target_rps")
	f("rate_achieved_rps")
	f("success_rps")
	for _, p := range []string{"count", "min", "mean", "p50", "p90", "p99", "p99_9", "max"} {
		f("latency_us", p)
		f("streams", "ttfb_us", p)
		f("streams", "ttft_us", p)
		f("streams", "chunk_gap_us", p)
		f("late_sends", "delay_us", p)
	}
	f("late_sends", "count")
	f("late_sends", "threshold_us")
	f("streams", "chunks_per_stream", "mean")
	f("streams", "completed")
	f("generator", "cpu_user_s")
	f("generator", "cpu_sys_s")
	f("generator", "cpu_cores")
	f("generator", "wall_s")
	f("generator", "gomaxprocs")
}

func TestFmtUS(t *testing.T) {
	f := func(us float64, want string) {
		t.Helper()
		if got := fmtUS(us); got != want {
			t.Fatalf("fmtUS(%g) = %q; want %q", us, got, want)
		}
	}
	f(0, "0µs")
	f(999, "999µs")
	f(1000, "1.00ms")
	f(12345, "12.35ms")
	f(float64(60*time.Second/time.Microsecond), "60.00s")
}
