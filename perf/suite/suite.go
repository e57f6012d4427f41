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
	MockBin  string        // the binary whose `gw mock` serves the upstream (default GWBin), so that a bisect keeps one mock
	Budgets  string        // path of budgets.yaml
	OutDir   string        // perf/results
	Duration time.Duration // measured part of each load run
	Warmup   time.Duration
	GWCore   int // core gw is pinned to (-1: no pinning)
	MockCore int // core of the mock (the suite itself should run there too)
	// MockAddr fixes the address of the shared-core scenarios' mock, so that
	// Peers can be configured against it ("": a free port).
	MockAddr string
	Peers    []Peer // other gateways beside gw in scenario 8
	// FloorBin is perf/cmd/floorproxy, run beside gw in scenario 8's
	// buffered rounds: the bare relay, whose distance from direct is the
	// extra hop alone ("": not run).
	FloorBin string
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
	SoakBrokenStreams   float64 `yaml:"soak_broken_streams"`
	// Scenarios 8-10, shared cores.
	ClosedBufferedRatioMin float64 `yaml:"closed_buffered_ratio_min"`
	ClosedBufferedCPUUS    float64 `yaml:"closed_buffered_cpu_us"`
	ClosedStreamRatioMin   float64 `yaml:"closed_stream_ratio_min"`
	ClosedStreamCPUUS      float64 `yaml:"closed_stream_cpu_us"`
	AddedP99At2kShared     float64 `yaml:"added_p99_us_at_2k_shared"`
	ColdStartMS            float64 `yaml:"cold_start_ms"`
	ExportersRatioMin      float64 `yaml:"exporters_ratio_min"`
	// Scenario 11: a cache hit's p50 over the direct call's (< 1: faster).
	CacheHitRatioMax  float64 `yaml:"cache_hit_p50_ratio_max"`
	UploadRSSGrowthMB float64 `yaml:"upload_rss_growth_mb"` // uploads.go
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

// session is what every run shares: budgets, the report, a scratch
// directory and the mock upstream. close releases them.
type session struct {
	bud   Budgets
	rep   *Report
	tmp   string
	mock  *Proc
	close func()
}

func openSession(o Options) (*session, error) {
	s := &session{}
	if data, err := os.ReadFile(o.Budgets); err != nil {
		return nil, fmt.Errorf("cannot read budgets: %w", err)
	} else if err := yaml.Unmarshal(data, &s.bud); err != nil {
		return nil, fmt.Errorf("cannot parse %s: %w", o.Budgets, err)
	}
	s.rep = &Report{StartedAt: time.Now().UTC(), Machine: machine(), Runs: map[string]*load.Result{}}
	tmp, err := os.MkdirTemp("", "gw-perf")
	if err != nil {
		return nil, err
	}
	s.tmp = tmp
	if s.mock, err = StartMock(o.mockBin(), o.MockCore); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	s.close = func() { s.mock.Stop(); os.RemoveAll(tmp) }
	return s, nil
}

// Run executes every scenario and writes the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	sess, err := openSession(o)
	if err != nil {
		return nil, err
	}
	defer sess.close()
	bud, rep, tmp, mock := sess.bud, sess.rep, sess.tmp, sess.mock
	mockBase := "http://" + mock.Addr
	streamPath := "/knobs/chunks=" + strconv.Itoa(streamChunks) + ",chunk_delay=10ms"
	env := []string{"PERF_UPSTREAM_KEY=sk-perf", "PERF_CALLER_KEY=perf-caller", "PERF_MOCK=" + mockBase}
	basic := filepath.Join(tmp, "basic.yaml")
	if err := os.WriteFile(basic, []byte(BasicFile(streamPath)), 0o600); err != nil {
		return nil, err
	}

	run := runner(ctx, o, rep)

	if err := closedLoop(ctx, o, rep, &bud, tmp, env, run); err != nil {
		return nil, err
	}

	// Scenario 3 first (of the pinned ones), on a fresh gw, so that VmHWM is the streams' peak.
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

	// Scenario 4 on a fresh gw too, with scenario 3's layout at a lighter load.
	o.Log("scenario 4: transcoding streams, %d streams/s (~%d concurrent) of %d chunks at 10 ms", transcodeRate, transcodeStreams, streamChunks)
	gw, err = StartGW(o.GWBin, o.GWCore, basic, env)
	if err != nil {
		return nil, err
	}
	err = transcoding(ctx, o, rep, &bud, gw, run, mockBase+streamPath+"/v1")
	gw.Stop()
	if err != nil {
		return nil, err
	}

	// Scenarios 1, 2, 6 on one gw.
	gw, err = StartGW(o.GWBin, o.GWCore, basic, env)
	if err != nil {
		return nil, err
	}
	defer gw.Stop()
	if err := pinnedBuffered(o, rep, &bud, gw, run, mockBase, []float64{1000, 2000, 5000}); err != nil {
		return nil, err
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
	if err := cacheScenario(ctx, o, rep, &bud, tmp, env, run, mockBase); err != nil {
		return nil, err
	}
	if err := gatewayScenario(ctx, o, rep, run, mockBase, filepath.Join(tmp, "gateway-data")); err != nil {
		return nil, err
	}
	if err := soakScenario(ctx, o, rep, &bud, tmp, env, SoakRequests); err != nil {
		return nil, err
	}
	if err := uploadScenario(ctx, o, rep, &bud, tmp, env); err != nil {
		return nil, err
	}
	if err := rep.write(o.OutDir); err != nil {
		return rep, err
	}
	return rep, nil
}

// pinnedBuffered is scenario 1: buffered chat at fixed rates (open loop),
// direct and through gw, with the 2k run's added p50/p99 against budgets.
func pinnedBuffered(o Options, rep *Report, bud *Budgets, gw *Proc, run func(string, load.Config) (*load.Result, error), mockBase string, rates []float64) error {
	o.Log("scenario 1: buffered chat at fixed rates (open loop)")
	for _, rate := range rates {
		tag := strconv.Itoa(int(rate / 1000))
		cfg := func(target, model string) load.Config {
			return load.Config{Target: target, APIKey: "perf-caller", Model: model, Rate: rate, Connections: 512}
		}
		d, err := run("s1-direct-"+tag+"k", cfg(mockBase+"/v1", "gpt-4o"))
		if err != nil {
			return err
		}
		g, err := run("s1-gw-"+tag+"k", cfg("http://"+gw.Addr+"/v1", "gpt"))
		if err != nil {
			return err
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
	return nil
}

// RunPinned runs only the idle RSS figure and scenario 1 (gwperf -only
// pinned): the quick check for bisecting a pinned-latency regression.
func RunPinned(ctx context.Context, o Options) (*Report, error) {
	sess, err := openSession(o)
	if err != nil {
		return nil, err
	}
	defer sess.close()
	mockBase := "http://" + sess.mock.Addr
	env := []string{"PERF_UPSTREAM_KEY=sk-perf", "PERF_CALLER_KEY=perf-caller", "PERF_MOCK=" + mockBase}
	basic := filepath.Join(sess.tmp, "basic.yaml")
	if err := os.WriteFile(basic, []byte(BasicFile("/knobs/chunks="+strconv.Itoa(streamChunks)+",chunk_delay=10ms")), 0o600); err != nil {
		return nil, err
	}
	gw, err := StartGW(o.GWBin, o.GWCore, basic, env)
	if err != nil {
		return nil, err
	}
	defer gw.Stop()
	time.Sleep(500 * time.Millisecond)
	idleRSS, _, _ := gw.Memory()
	sess.rep.add(Figure{Scenario: "idle", Name: "gw RSS idle", Value: idleRSS, Unit: "MiB", Budget: b(sess.bud.RSSIdleMB), Max: true})
	err = pinnedBuffered(o, sess.rep, &sess.bud, gw, runner(ctx, o, sess.rep), mockBase, []float64{2000})
	return sess.rep, err
}

func (o Options) mockBin() string {
	if o.MockBin != "" {
		return o.MockBin
	}
	return o.GWBin
}

// runner returns the function that runs one load and keeps its result in
// rep under name.
func runner(ctx context.Context, o Options, rep *Report) func(string, load.Config) (*load.Result, error) {
	return func(name string, cfg load.Config) (*load.Result, error) {
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
}

// RunClosed runs only the shared-core scenarios 8-10 (gwperf -only closed).
func RunClosed(ctx context.Context, o Options) (*Report, error) {
	sess, err := openSession(o)
	if err != nil {
		return nil, err
	}
	defer sess.close()
	env := []string{"PERF_UPSTREAM_KEY=sk-perf", "PERF_CALLER_KEY=perf-caller"}
	return sess.rep, closedLoop(ctx, o, sess.rep, &sess.bud, sess.tmp, env, runner(ctx, o, sess.rep))
}

// Scenario 4's load: about transcodeStreams concurrent streams, started in open loop at
// transcodeRate streams/s (each lasts about 2 s). Scenario 3's 1,000 streams (100,000
// chunks/s) saturate gw's core on the 2-core VM, so its added figures measure the
// saturation; 200 streams (20,000 chunks/s) leave headroom. Open loop, because
// closed-loop workers all start at once and, their streams being equally long, stay in
// step: every 2 s, 200 streams would start in the same millisecond and TTFT would
// measure that burst's queue.
const (
	transcodeStreams = 200
	transcodeRate    = transcodeStreams / 2
)

// transcoding runs scenario 4 against gw: the same stream (streamChunks chunks at 10 ms)
// read straight from the mock in the caller's format (the baseline), then through gw
// where the upstream speaks the other format:
//
//   - 4a: an OpenAI chat caller on claude-stream, a model of an `adapter: anthropic` key;
//     gw converts chat → messages upstream and the messages stream back to chat chunks.
//   - 4b: an Anthropic Messages caller (POST /v1/messages) on gpt-stream, a model of an
//     OpenAI key; gw converts messages → chat upstream and chat chunks → Anthropic events.
//
// A reference run relays the chat stream through gw without conversion (gpt-stream),
// against 4a's baseline, so that the conversion's share of the figures shows.
// mockStream is the mock's base URL with the stream knobs.
func transcoding(ctx context.Context, o Options, rep *Report, bud *Budgets, gw *Proc,
	run func(string, load.Config) (*load.Result, error), mockStream string) error {
	cfg := func(target string, format load.Format, model string) load.Config {
		return load.Config{Target: target, Format: format, APIKey: "perf-caller", Model: model, Stream: true,
			Rate: transcodeRate, Connections: 5 * transcodeStreams, Duration: o.Duration, Warmup: o.Warmup, Timeout: 30 * time.Second}
	}
	gwBase := "http://" + gw.Addr + "/v1" // gw serves /v1/chat/completions and /v1/messages
	loadNote := fmt.Sprintf("open loop, %d streams/s of %d chunks at 10 ms: ~%d concurrent streams, %d chunks/s; lighter than "+
		"scenario 3's 1,000 streams, which saturate gw's core on this 2-core VM, and open loop so that streams do not start in bursts",
		transcodeRate, streamChunks, transcodeStreams, transcodeStreams*100)
	var direct *load.Result
	for _, sc := range []struct {
		tag, name     string
		direct, viaGW load.Config // direct.Target "": the previous baseline
		note          string
	}{
		{"s4a-chat-to-messages", "4a transcoding stream chat → messages",
			cfg(mockStream, load.FormatChat, "gpt-4o"), cfg(gwBase, load.FormatChat, "claude-stream"),
			loadNote + "; baseline: chat stream straight from the mock; gw: chat caller on an adapter: anthropic key"},
		{"s4-chat-relay", "4 reference: chat relay, no conversion",
			load.Config{}, cfg(gwBase, load.FormatChat, "gpt-stream"),
			"4a's baseline; gw: chat caller on an OpenAI key, the same load"},
		{"s4b-messages-to-chat", "4b transcoding stream messages → chat",
			cfg(mockStream, load.FormatMessages, "claude-sonnet-4-5"), cfg(gwBase, load.FormatMessages, "gpt-stream"),
			"baseline: messages stream straight from the mock's /v1/messages; gw: /v1/messages caller on an OpenAI key"},
	} {
		if sc.direct.Target != "" {
			d, err := run(sc.tag+"-direct", sc.direct)
			if err != nil {
				return err
			}
			direct = d
		}
		cpu := cpuWindow(ctx, gw.CPUSeconds, o.Warmup, o.Duration)
		g, err := run(sc.tag+"-gw", sc.viaGW)
		gwCPU, cpuOK := cpu()
		if err != nil {
			return err
		}
		ds, gs := direct.Streams, g.Streams
		if ds == nil || gs == nil || ds.Streams == 0 || gs.Streams == 0 {
			rep.add(Figure{Scenario: sc.name, Name: "streams", Note: fmt.Sprintf("no successful streams: direct %d errors %v, gw %d errors %v",
				direct.Errors, direct.ErrorsByClass, g.Errors, g.ErrorsByClass)})
			continue
		}
		rep.add(Figure{Scenario: sc.name, Name: "added TTFT p50", Value: float64(gs.TTFTUS.P50 - ds.TTFTUS.P50), Unit: "µs", Note: sc.note})
		rep.add(Figure{Scenario: sc.name, Name: "added TTFT p99", Value: float64(gs.TTFTUS.P99 - ds.TTFTUS.P99), Unit: "µs",
			Budget: b(bud.StreamAddedTTFTP99), Max: true})
		// The formats' streams differ in event count (the mock's Anthropic stream has a
		// ping gw does not send), so the mean gaps are compared over the same span: mean gap
		// × gaps per stream is the time from a stream's first event to its last; its
		// difference is spread over the chunks.
		spanD, spanG := streamSpanUS(ds), streamSpanUS(gs)
		rep.add(Figure{Scenario: sc.name, Name: "added per chunk (mean gap × gaps / chunks)", Value: (spanG - spanD) / float64(streamChunks),
			Unit: "µs", Budget: b(bud.StreamAddedPerChunk), Max: true,
			Note: fmt.Sprintf("mean gap gw %.1f µs over %.1f events/stream, direct %.1f µs over %.1f events/stream",
				gs.ChunkGapUS.Mean, float64(gs.Events)/float64(gs.Streams), ds.ChunkGapUS.Mean, float64(ds.Events)/float64(ds.Streams))})
		if cpuOK && gs.Chunks > 0 {
			rep.add(Figure{Scenario: sc.name, Name: "gw CPU per 1,000 chunks", Value: gwCPU / float64(gs.Chunks) * 1e6, Unit: "ms",
				Note: fmt.Sprintf("gw CPU %.2f s in the %s measured window; %d chunks in the streams started in it", gwCPU, o.Duration, gs.Chunks)})
		}
		// Late sends mean the generator's core was busy (another process, or the mock):
		// the run's figures then measure that, not gw.
		rep.add(Figure{Scenario: sc.name, Name: "streams completed (gw / direct)", Value: float64(gs.Completed), Unit: "streams",
			Note: fmt.Sprintf("direct %d; errors gw %d, direct %d; late sends (> 1 ms) gw %d, direct %d of %d",
				ds.Completed, g.Errors, direct.Errors, lateSends(g), lateSends(direct), g.Requests)})
	}
	return nil
}

func lateSends(r *load.Result) int64 {
	if r.LateSends == nil {
		return 0
	}
	return r.LateSends.Count
}

// streamSpanUS is the mean time from a stream's first data event to its last (the
// terminator excluded), in µs: the mean gap times the gaps per stream.
func streamSpanUS(st *load.StreamResult) float64 {
	return st.ChunkGapUS.Mean * float64(st.ChunkGapUS.Count) / float64(st.Streams)
}

// cpuWindow reads p's CPU time after warmup and again after duration more, in the
// background: started with a load run of the same warmup and duration, it measures the
// run's measured window only. The returned function waits for the second reading; ok is
// false when a reading failed or ctx ended first.
func cpuWindow(ctx context.Context, cpuSeconds func() (float64, error), warmup, duration time.Duration) func() (seconds float64, ok bool) {
	type reading struct {
		s  float64
		ok bool
	}
	ch := make(chan reading, 1)
	go func() {
		sleep := func(d time.Duration) bool {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return false
			case <-t.C:
				return true
			}
		}
		if !sleep(warmup) {
			ch <- reading{}
			return
		}
		c0, err0 := cpuSeconds()
		if !sleep(duration) {
			ch <- reading{}
			return
		}
		c1, err1 := cpuSeconds()
		ch <- reading{c1 - c0, err0 == nil && err1 == nil}
	}()
	return func() (float64, bool) {
		r := <-ch
		return r.s, r.ok
	}
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

// BasicFile is the resource file most scenarios (and perf/cmd/idlerss)
// run gw on; streamPath is the mock knobs prefix of the stream keys.
func BasicFile(streamPath string) string {
	return `_format_version: "1"
provider_keys:
  - display_name: mock
    api_key: ${PERF_UPSTREAM_KEY}
    api_base: ${PERF_MOCK}/v1
  - display_name: mock-stream
    api_key: ${PERF_UPSTREAM_KEY}
    api_base: ${PERF_MOCK}` + streamPath + `/v1
  - display_name: mock-stream-anthropic
    adapter: anthropic
    api_key: ${PERF_UPSTREAM_KEY}
    api_base: ${PERF_MOCK}` + streamPath + `/v1
api_keys:
  - display_name: perf
    key_env: PERF_CALLER_KEY
    allowed_models: ["*"]
models:
  - {display_name: gpt, provider: openai, model_name: gpt-4o, provider_key: mock}
  - {display_name: gpt-stream, provider: openai, model_name: gpt-4o, provider_key: mock-stream, stream_timeout: 30000}
  - {display_name: claude-stream, provider: anthropic, model_name: claude-sonnet-4-5, provider_key: mock-stream-anthropic, stream_timeout: 30000}
  - {display_name: gpt-guarded, provider: openai, model_name: gpt-4o, provider_key: mock}
  - {display_name: gpt-stream-guarded, provider: openai, model_name: gpt-4o, provider_key: mock-stream, stream_timeout: 30000}
` + guardedBlock
}

// guardedBlock attaches scenario 8's guardrail chain (keyword: 50 literals
// and 5 regexes; pii: all nine detectors; input and output) to the
// *-guarded aliases only, so the other aliases measure the path with no
// guardrail attached in the same process.
var guardedBlock = func() string {
	var sb strings.Builder
	sb.WriteString("guardrails:\n  - name: perf-keyword\n    kind: keyword\n    patterns:\n")
	for i := 0; i < 50; i++ {
		sb.WriteString("      - {kind: literal, value: banned-term-" + strconv.Itoa(i) + "}\n")
	}
	for i := 0; i < 5; i++ {
		sb.WriteString("      - {kind: regex, value: 'secret[-_]project[-_]" + strconv.Itoa(i) + "\\d+'}\n")
	}
	sb.WriteString("  - {name: perf-pii, kind: pii}\nguardrail_attachments:\n")
	for _, g := range []string{"perf-keyword", "perf-pii"} {
		for _, m := range []string{"gpt-guarded", "gpt-stream-guarded"} {
			sb.WriteString("  - {guardrail_id: " + g + ", scope_type: model, scope_id: " + m + "}\n")
		}
	}
	return sb.String()
}()

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
