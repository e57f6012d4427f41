package suite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"gw/perf/load"
)

// Options configure a suite run.
type Options struct {
	GWBin    string
	Budgets  string        // path of budgets.yaml
	OutDir   string        // perf/results
	Duration time.Duration // measured part of each load run
	Warmup   time.Duration
	GWCore   int // core gw is pinned to (-1: no pinning)
	MockCore int // core of the mock (the suite itself should run there too)
	Log      func(format string, args ...any)
}

// Budgets are the targets of perf/budgets.yaml.
type Budgets struct {
	AddedP50At2k        float64 `yaml:"added_p50_us_at_2k"`
	AddedP99At2k        float64 `yaml:"added_p99_us_at_2k"`
	ThroughputRatioMin  float64 `yaml:"throughput_ratio_min"`
	StreamAddedTTFTP99  float64 `yaml:"stream_added_ttft_p99_us"`
	StreamAddedPerChunk float64 `yaml:"stream_added_per_chunk_us"`
	RSSIdleMB           float64 `yaml:"rss_idle_mb"`
	RSSStreamsMB        float64 `yaml:"rss_streams_mb"`
	ReloadFailed        float64 `yaml:"reload_failed_requests"`
}

// Figure is one reported number, with its budget when it has one.
type Figure struct {
	Scenario string   `json:"scenario"`
	Name     string   `json:"name"`
	Value    float64  `json:"value"`
	Unit     string   `json:"unit"`
	Budget   *float64 `json:"budget,omitempty"`
	Max      bool     `json:"budget_is_max"` // true: value must be <= budget; false: >=
	Verdict  string   `json:"verdict,omitempty"`
	Note     string   `json:"note,omitempty"`
}

// Report is perf/results/latest.json.
type Report struct {
	StartedAt time.Time               `json:"started_at"`
	Machine   map[string]string       `json:"machine"`
	Figures   []Figure                `json:"figures"`
	Runs      map[string]*load.Result `json:"runs"`
}

const streamChunks = 200

func (r *Report) add(f Figure) {
	if f.Budget != nil {
		ok := f.Value <= *f.Budget
		if !f.Max {
			ok = f.Value >= *f.Budget
		}
		f.Verdict = "PASS"
		if !ok {
			f.Verdict = "MISS"
		}
	}
	r.Figures = append(r.Figures, f)
}

func b(v float64) *float64 { return &v }

// Run executes every scenario and writes the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	var bud Budgets
	if data, err := os.ReadFile(o.Budgets); err != nil {
		return nil, fmt.Errorf("cannot read budgets: %w", err)
	} else if err := yaml.Unmarshal(data, &bud); err != nil {
		return nil, fmt.Errorf("cannot parse %s: %w", o.Budgets, err)
	}
	rep := &Report{StartedAt: time.Now().UTC(), Machine: machine(), Runs: map[string]*load.Result{}}
	tmp, err := os.MkdirTemp("", "gw-perf")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	mock, err := StartMock(o.GWBin, o.MockCore)
	if err != nil {
		return nil, err
	}
	defer mock.Stop()
	mockBase := "http://" + mock.Addr
	streamPath := "/knobs/chunks=" + strconv.Itoa(streamChunks) + ",chunk_delay=10ms"
	env := []string{"PERF_UPSTREAM_KEY=sk-perf", "PERF_CALLER_KEY=perf-caller", "PERF_MOCK=" + mockBase}
	basic := filepath.Join(tmp, "basic.yaml")
	if err := os.WriteFile(basic, []byte(basicFile(streamPath)), 0o600); err != nil {
		return nil, err
	}

	run := func(name string, cfg load.Config) (*load.Result, error) {
		if cfg.Duration == 0 {
			cfg.Duration = o.Duration
		}
		if cfg.Warmup == 0 {
			cfg.Warmup = o.Warmup
		}
		o.Log("  %s ...", name)
		res, err := load.Run(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rep.Runs[name] = res
		o.Log("    %.0f req/s, p50 %d µs, p99 %d µs, errors %d", res.SuccessRPS, res.LatencyUS.P50, res.LatencyUS.P99, res.Errors)
		return res, nil
	}

	// Scenario 3 first, on a fresh gw, so that VmHWM is the streams' peak.
	o.Log("scenario 3: streaming, %d chunks at 10 ms, 1,000 concurrent streams", streamChunks)
	gw, err := StartGW(o.GWBin, o.GWCore, basic, env)
	if err != nil {
		return nil, err
	}
	time.Sleep(500 * time.Millisecond)
	idleRSS, _, _ := gw.Memory()
	rep.add(Figure{Scenario: "idle", Name: "gw RSS idle", Value: idleRSS, Unit: "MiB", Budget: b(bud.RSSIdleMB), Max: true})
	streamCfg := func(target, model string) load.Config {
		return load.Config{Target: target, APIKey: "perf-caller", Model: model, Stream: true, Connections: 1000, Duration: 2 * o.Duration, Timeout: 30 * time.Second}
	}
	ds, err := run("s3-direct", streamCfg(mockBase+streamPath+"/v1", "gpt-4o"))
	if err != nil {
		return nil, err
	}
	cpu0, _ := gw.CPUSeconds()
	gs, err := run("s3-gw", streamCfg("http://"+gw.Addr+"/v1", "gpt-stream"))
	if err != nil {
		return nil, err
	}
	cpu1, _ := gw.CPUSeconds()
	_, hwm, _ := gw.Memory()
	gw.Stop()
	if ds.Streams != nil && gs.Streams != nil {
		rep.add(Figure{Scenario: "3 streaming", Name: "added TTFT p50", Value: float64(gs.Streams.TTFTUS.P50 - ds.Streams.TTFTUS.P50), Unit: "µs"})
		rep.add(Figure{Scenario: "3 streaming", Name: "added TTFT p99", Value: float64(gs.Streams.TTFTUS.P99 - ds.Streams.TTFTUS.P99), Unit: "µs", Budget: b(bud.StreamAddedTTFTP99), Max: true})
		rep.add(Figure{Scenario: "3 streaming", Name: "added per chunk (mean gap)", Value: gs.Streams.ChunkGapUS.Mean - ds.Streams.ChunkGapUS.Mean, Unit: "µs", Budget: b(bud.StreamAddedPerChunk), Max: true})
		if gs.Streams.Chunks > 0 {
			rep.add(Figure{Scenario: "3 streaming", Name: "gw CPU per 1,000 chunks", Value: (cpu1 - cpu0) / float64(gs.Streams.Events) * 1000, Unit: "s"})
		}
		rep.add(Figure{Scenario: "3 streaming", Name: "streams completed (gw / direct)", Value: float64(gs.Streams.Completed), Unit: "streams", Note: "direct " + strconv.FormatInt(ds.Streams.Completed, 10)})
	}
	rep.add(Figure{Scenario: "3 streaming", Name: "gw RSS peak (VmHWM)", Value: hwm, Unit: "MiB", Budget: b(bud.RSSStreamsMB), Max: true})

	// Scenarios 1, 2, 6 on one gw.
	gw, err = StartGW(o.GWBin, o.GWCore, basic, env)
	if err != nil {
		return nil, err
	}
	defer gw.Stop()
	o.Log("scenario 1: buffered chat at fixed rates (open loop)")
	for _, rate := range []float64{1000, 2000, 5000} {
		tag := strconv.Itoa(int(rate / 1000))
		cfg := func(target, model string) load.Config {
			return load.Config{Target: target, APIKey: "perf-caller", Model: model, Rate: rate, Connections: 512}
		}
		d, err := run("s1-direct-"+tag+"k", cfg(mockBase+"/v1", "gpt-4o"))
		if err != nil {
			return nil, err
		}
		g, err := run("s1-gw-"+tag+"k", cfg("http://"+gw.Addr+"/v1", "gpt"))
		if err != nil {
			return nil, err
		}
		sc := "1 buffered " + tag + "k req/s"
		p50 := Figure{Scenario: sc, Name: "added p50", Value: float64(g.LatencyUS.P50 - d.LatencyUS.P50), Unit: "µs"}
		p99 := Figure{Scenario: sc, Name: "added p99", Value: float64(g.LatencyUS.P99 - d.LatencyUS.P99), Unit: "µs"}
		if rate == 2000 {
			p50.Budget, p50.Max = b(bud.AddedP50At2k), true
			p99.Budget, p99.Max = b(bud.AddedP99At2k), true
		}
		rep.add(p50)
		rep.add(p99)
		rep.add(Figure{Scenario: sc, Name: "added p99.9", Value: float64(g.LatencyUS.P999 - d.LatencyUS.P999), Unit: "µs"})
		rep.add(Figure{Scenario: sc, Name: "gw errors", Value: float64(g.Errors), Unit: "requests"})
	}
	o.Log("scenario 2: max throughput, 64 connections (closed loop)")
	d2, err := run("s2-direct", load.Config{Target: mockBase + "/v1", APIKey: "perf-caller", Model: "gpt-4o", Connections: 64})
	if err != nil {
		return nil, err
	}
	g2, err := run("s2-gw", load.Config{Target: "http://" + gw.Addr + "/v1", APIKey: "perf-caller", Model: "gpt", Connections: 64})
	if err != nil {
		return nil, err
	}
	if d2.SuccessRPS > 0 {
		rep.add(Figure{Scenario: "2 max throughput", Name: "gw / direct req/s", Value: g2.SuccessRPS / d2.SuccessRPS, Unit: "ratio", Budget: b(bud.ThroughputRatioMin),
			Note: fmt.Sprintf("gw %.0f req/s, direct %.0f req/s", g2.SuccessRPS, d2.SuccessRPS)})
	}

	o.Log("scenario 6: SIGHUP every second during 2k req/s")
	stop := make(chan struct{})
	reloads := 0
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				gw.Signal(syscall.SIGHUP)
				reloads++
			}
		}
	}()
	g6, err := run("s6-gw-reload", load.Config{Target: "http://" + gw.Addr + "/v1", APIKey: "perf-caller", Model: "gpt", Rate: 2000, Connections: 512, Duration: 10 * time.Second})
	close(stop)
	if err != nil {
		return nil, err
	}
	rep.add(Figure{Scenario: "6 reload under load", Name: "failed requests", Value: float64(g6.Errors), Unit: "requests", Budget: b(bud.ReloadFailed), Max: true, Note: strconv.Itoa(reloads) + " reloads"})

	o.Log("scenario 5: policy-heavy (10,000 keys, 1,000 models, routing group, limits and metrics on)")
	heavy := filepath.Join(tmp, "heavy.yaml")
	if err := os.WriteFile(heavy, heavyFile(1000, 10000), 0o600); err != nil {
		return nil, err
	}
	gw5, err := StartGW(o.GWBin, o.GWCore, heavy, env)
	if err != nil {
		return nil, err
	}
	g5, err := run("s5-gw-heavy", load.Config{Target: "http://" + gw5.Addr + "/v1", APIKey: "perf-key-4242", Model: "group-0", Rate: 2000, Connections: 512})
	gw5.Stop()
	if err != nil {
		return nil, err
	}
	if d, ok := rep.Runs["s1-direct-2k"]; ok {
		rep.add(Figure{Scenario: "5 policy-heavy 2k req/s", Name: "added p50", Value: float64(g5.LatencyUS.P50 - d.LatencyUS.P50), Unit: "µs"})
		rep.add(Figure{Scenario: "5 policy-heavy 2k req/s", Name: "added p99", Value: float64(g5.LatencyUS.P99 - d.LatencyUS.P99), Unit: "µs"})
		rep.add(Figure{Scenario: "5 policy-heavy 2k req/s", Name: "gw errors", Value: float64(g5.Errors), Unit: "requests"})
	}
	rep.add(Figure{Scenario: "4 transcoding", Name: "chat → messages / messages → chat", Unit: "", Note: "not measured yet: the transcoders exist (Anthropic and Responses callers to chat upstreams work), but the anthropic adapter (chat caller → messages upstream) is not built and gwload speaks chat completions only"})

	if err := rep.write(o.OutDir); err != nil {
		return rep, err
	}
	return rep, nil
}

func machine() map[string]string {
	// runtime.NumCPU honours the affinity the suite runs under; report the machine's.
	ncpu := strconv.Itoa(runtime.NumCPU())
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		ncpu = strconv.Itoa(strings.Count(string(b), "\nprocessor") + 1)
	}
	m := map[string]string{"goos": runtime.GOOS, "goarch": runtime.GOARCH, "go": runtime.Version(), "num_cpu": ncpu}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				m["cpu"] = strings.TrimSpace(line[strings.IndexByte(line, ':')+1:])
				break
			}
		}
	}
	return m
}

func basicFile(streamPath string) string {
	return `_format_version: "1"
provider_keys:
  - display_name: mock
    api_key: ${PERF_UPSTREAM_KEY}
    api_base: ${PERF_MOCK}/v1
  - display_name: mock-stream
    api_key: ${PERF_UPSTREAM_KEY}
    api_base: ${PERF_MOCK}` + streamPath + `/v1
api_keys:
  - display_name: perf
    key_env: PERF_CALLER_KEY
    allowed_models: ["*"]
models:
  - {display_name: gpt, provider: openai, model_name: gpt-4o, provider_key: mock}
  - {display_name: gpt-stream, provider: openai, model_name: gpt-4o, provider_key: mock-stream, stream_timeout: 30000}
`
}

// heavyFile renders scenario 5's file: nModels direct models with limits,
// one routing group per 10 models, nKeys caller keys (key i is "perf-key-i").
func heavyFile(nModels, nKeys int) []byte {
	var sb strings.Builder
	sb.WriteString("_format_version: \"1\"\nprovider_keys:\n  - {display_name: mock, api_key: \"${PERF_UPSTREAM_KEY}\", api_base: \"${PERF_MOCK}/v1\"}\nmodels:\n")
	for i := 0; i < nModels; i++ {
		n := strconv.Itoa(i)
		sb.WriteString("  - {display_name: m" + n + ", provider: openai, model_name: gpt-4o, provider_key: mock, rate_limit: {rpm: 1000000, tpm: 1000000000}}\n")
	}
	for i := 0; i+2 < nModels; i += 10 {
		sb.WriteString("  - display_name: group-" + strconv.Itoa(i/10) + "\n    routing: {strategy: failover, targets: [{model: m" + strconv.Itoa(i) + "}, {model: m" + strconv.Itoa(i+1) + "}, {model: m" + strconv.Itoa(i+2) + "}]}\n")
	}
	sb.WriteString("api_keys:\n")
	for i := 0; i < nKeys; i++ {
		h := sha256.Sum256([]byte("perf-key-" + strconv.Itoa(i)))
		sb.WriteString("  - {display_name: k" + strconv.Itoa(i) + ", key_hash: \"" + hex.EncodeToString(h[:]) + "\", allowed_models: [\"group-*\", m1], rate_limit: {rpm: 1000000}}\n")
	}
	return []byte(sb.String())
}

func (r *Report) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "latest.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "latest.md"), []byte(r.Markdown()), 0o644)
}

// Markdown renders the figures beside their budgets.
func (r *Report) Markdown() string {
	var sb strings.Builder
	sb.WriteString("# gw perf report\n\n")
	fmt.Fprintf(&sb, "Run %s on %s (%s CPUs, %s). gw pinned to one core, the load generator and the mock upstream on the other; \"added\" = gw minus direct-to-mock measured in the same run.\n\n",
		r.StartedAt.Format(time.RFC3339), r.Machine["cpu"], r.Machine["num_cpu"], r.Machine["go"])
	sb.WriteString("| Scenario | Figure | Value | Budget | Verdict | Note |\n|---|---|---|---|---|---|\n")
	for _, f := range r.Figures {
		bud := ""
		if f.Budget != nil {
			op := "≥"
			if f.Max {
				op = "≤"
			}
			bud = op + " " + strconv.FormatFloat(*f.Budget, 'f', -1, 64) + " " + f.Unit
		}
		val := ""
		if f.Unit != "" || f.Value != 0 {
			val = strconv.FormatFloat(f.Value, 'f', 2, 64) + " " + f.Unit
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s |\n", f.Scenario, f.Name, val, bud, f.Verdict, f.Note)
	}
	return sb.String()
}
