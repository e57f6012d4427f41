package suite

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"gw/perf/load"
)

// Peer is another OpenAI-compatible gateway put beside gw in the
// closed-loop scenario (gwperf -peer). Its models must point at the mock
// gwperf starts (fix its address with -mock-addr): Model at <mock>/v1 and
// StreamModel at <mock>/knobs/chunks=20/v1, the 22-event stream.
type Peer struct {
	Name        string
	URL         string // base URL, ".../v1"
	APIKey      string
	Model       string // buffered calls; default gpt-4o
	StreamModel string // streamed calls; default Model
	PID         int    // for CPU per request; 0: not measured
}

// ParsePeer reads "name=URL[,key=K][,model=M][,stream-model=M][,pid=N]".
func ParsePeer(s string) (Peer, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" || rest == "" {
		return Peer{}, fmt.Errorf("cannot parse peer %q: want name=URL[,key=K][,model=M][,stream-model=M][,pid=N]", s)
	}
	parts := strings.Split(rest, ",")
	p := Peer{Name: name, URL: strings.TrimSuffix(parts[0], "/"), Model: load.DefaultModel}
	if !strings.HasPrefix(p.URL, "http://") && !strings.HasPrefix(p.URL, "https://") {
		return Peer{}, fmt.Errorf("cannot parse peer %q: %q is not an http(s) URL", s, p.URL)
	}
	for _, kv := range parts[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "key":
			p.APIKey = v
		case "model":
			p.Model = v
		case "stream-model":
			p.StreamModel = v
		case "pid":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return Peer{}, fmt.Errorf("cannot parse peer %q: pid %q", s, v)
			}
			p.PID = n
		default:
			return Peer{}, fmt.Errorf("cannot parse peer %q: unknown field %q", s, k)
		}
	}
	if p.StreamModel == "" {
		p.StreamModel = p.Model
	}
	return p, nil
}

// closedStreamChunks makes the mock's chat stream 22 data events (role,
// 20 content chunks, finish) plus [DONE].
const closedStreamChunks = 20

// closedRounds interleaves the closed-loop runs (direct, gw, peers; then
// again, the order rotated by one each round) so that a noisy neighbour
// hits every target alike and no target always runs first after a pause
// or last after the others; medians are reported. Five rounds, not three:
// on this shared VM two identical gw processes measured by turns differ by
// up to ±15 % in one round (2026-11-27), and a median of five drops two
// disturbed rounds.
const closedRounds = 5

// closedLoop runs the shared-core scenarios: 8, closed-loop throughput of
// buffered and streamed calls (64 connections) straight at the mock, through
// gw and through every peer, with the gateways' CPU per request; 9, gw's cold
// start; 10, added latency at a fixed 2,000 req/s. gw, the mock and the load
// generator are not pinned: all share every core, the layout of the issue's
// measurements (and of a gateway deployed beside its callers).
func closedLoop(ctx context.Context, o Options, rep *Report, bud *Budgets, tmp string, env []string,
	run func(string, load.Config) (*load.Result, error)) error {
	restore, err := unpinSelf()
	if err != nil {
		o.Log("  cannot unpin the generator (%v); it stays where it runs", err)
	}
	defer restore()
	mock, err := startMockAt(o.mockBin(), -1, o.MockAddr)
	if err != nil {
		return err
	}
	defer mock.Stop()
	mockBase := "http://" + mock.Addr
	streamPath := "/knobs/chunks=" + strconv.Itoa(closedStreamChunks)
	file := filepath.Join(tmp, "closed.yaml")
	if err := os.WriteFile(file, []byte(BasicFile(streamPath)), 0o600); err != nil {
		return err
	}
	env = append(slices.Clone(env), "PERF_MOCK="+mockBase)

	o.Log("scenario 9: cold start (exec → first 200 on /livez), gw unpinned")
	var starts []float64
	for i := 0; i < 5; i++ {
		d, err := ColdStart(o.GWBin, file, env)
		if err != nil {
			return err
		}
		starts = append(starts, float64(d.Microseconds())/1000)
	}
	slices.Sort(starts)
	rep.add(Figure{Scenario: "9 cold start", Name: "exec → first 200 on /livez (median of 5)", Value: starts[2], Unit: "ms",
		Budget: b(bud.ColdStartMS), Max: true, Note: fmt.Sprintf("min %.1f ms, max %.1f ms", starts[0], starts[4])})

	gw, err := StartGW(o.GWBin, -1, file, env)
	if err != nil {
		return err
	}
	defer gw.Stop()
	// A second gw on the same file plus two usage exporters (OTLP/HTTP and
	// an S3 object store) delivering to a sink that accepts and discards
	// everything: the cost of exporting, against the same run's gw.
	sink, err := startSink()
	if err != nil {
		return err
	}
	defer sink.Close()
	xfile := filepath.Join(tmp, "closed-exporters.yaml")
	if err := os.WriteFile(xfile, []byte(BasicFile(streamPath)+exportersBlock(sink.URL)), 0o600); err != nil {
		return err
	}
	gwx, err := StartGW(o.GWBin, -1, xfile, env)
	if err != nil {
		return err
	}
	defer gwx.Stop()
	type target struct {
		name, base, key, model, streamModel string
		pid                                 int
	}
	targets := []target{
		{"direct", mockBase + "/v1", "perf-caller", "gpt-4o", "gpt-4o", 0},
		{"gw", "http://" + gw.Addr + "/v1", "perf-caller", "gpt", "gpt-stream", gw.PID()},
		// The same gw on aliases with a guardrail chain attached (keyword
		// 50 literals + 5 regexes, pii all nine; input and streamed output).
		{"gw-guarded", "http://" + gw.Addr + "/v1", "perf-caller", "gpt-guarded", "gpt-stream-guarded", gw.PID()},
		{"gw-exporters", "http://" + gwx.Addr + "/v1", "perf-caller", "gpt", "gpt-stream", gwx.PID()},
	}
	if o.FloorBin != "" {
		floor, err := startFloor(o.FloorBin, mock.Addr)
		if err != nil {
			return err
		}
		defer floor.Stop()
		// Buffered only: the floor relay reads each answer whole.
		targets = append(targets, target{"floor", "http://" + floor.Addr + "/v1", "perf-caller", "gpt-4o", "", floor.PID()})
	}
	for _, p := range o.Peers {
		targets = append(targets, target{p.Name, p.URL, p.APIKey, p.Model, p.StreamModel, p.PID})
	}
	// Short runs, more rounds: a median of five keeps `make perf` near eight
	// minutes and is steadier than one long run on a shared machine.
	dur, warm := o.Duration*3/8, o.Warmup/2
	// softUS and segs are machine-wide, per request: the kernel's
	// network work, which no process's CPU figure includes (buffered
	// direct and gw only; see kernelWindow).
	type sample struct{ rps, cpuUS, softUS, segs []float64 }
	samples := map[string]*sample{}
	for _, kind := range []string{"buffered", "streamed"} {
		o.Log("scenario 8: closed loop, 64 connections, %s, %d interleaved rounds (shared cores)", kind, closedRounds)
		for round := 0; round < closedRounds; round++ {
			for _, t := range roundOrder(targets, round, func(t target) string { return t.name }) {
				if kind == "streamed" && t.streamModel == "" {
					continue
				}
				cfg := load.Config{Target: t.base, APIKey: t.key, Model: t.model, Connections: 64, Duration: dur, Warmup: warm, Timeout: 30 * time.Second}
				base := t.base
				if kind == "streamed" {
					cfg.Stream, cfg.Model = true, t.streamModel
					if t.name == "direct" {
						base = mockBase + streamPath + "/v1"
						cfg.Target = base
					}
				}
				var cpu func() (float64, bool)
				if t.pid > 0 {
					pid := t.pid
					cpu = cpuWindow(ctx, func() (float64, error) { return cpuSeconds(pid) }, warm, dur)
				}
				var kernel func() (softirq, segs float64, ok bool)
				if kind == "buffered" && (t.name == "direct" || t.name == "gw") {
					kernel = kernelWindow(ctx, warm, dur)
				}
				res, err := run("s8-"+kind+"-"+t.name+"-r"+strconv.Itoa(round+1), cfg)
				if err != nil {
					return err
				}
				key := kind + "/" + t.name
				if samples[key] == nil {
					samples[key] = &sample{}
				}
				s := samples[key]
				s.rps = append(s.rps, res.SuccessRPS)
				if cpu != nil {
					if sec, ok := cpu(); ok && res.SuccessRPS > 0 {
						// The CPU window spans dur; the requests in it are SuccessRPS × dur.
						s.cpuUS = append(s.cpuUS, sec/(res.SuccessRPS*dur.Seconds())*1e6)
					}
				}
				if kernel != nil {
					if soft, segs, ok := kernel(); ok && res.SuccessRPS > 0 {
						n := res.SuccessRPS * dur.Seconds()
						s.softUS = append(s.softUS, soft/n*1e6)
						s.segs = append(s.segs, segs/n)
					}
				}
				if res.Errors > 0 {
					rep.add(Figure{Scenario: "8 closed loop " + kind, Name: t.name + " errors", Value: float64(res.Errors), Unit: "requests",
						Note: fmt.Sprintf("%v", res.ErrorsByClass)})
				}
			}
		}
		direct := median(samples[kind+"/direct"].rps)
		sc := "8 closed loop " + kind
		if kind == "streamed" {
			sc += " (22-event stream)"
		}
		rep.add(Figure{Scenario: sc, Name: "direct", Value: direct, Unit: "req/s", Note: "median of " + strconv.Itoa(closedRounds) + " rounds"})
		for _, name := range []string{"direct", "gw"} {
			if s := samples[kind+"/"+name]; len(s.softUS) > 0 {
				rep.add(Figure{Scenario: sc, Name: name + ": machine softirq per request", Value: median(s.softUS), Unit: "µs",
					Note: fmt.Sprintf("loopback delivery and wake-ups, outside every process's CPU figure (rounds %s); TCP segments per request %s",
						joinF(s.softUS, 1), joinF(s.segs, 2))})
			}
		}
		ratioBud, cpuBud := bud.ClosedBufferedRatioMin, bud.ClosedBufferedCPUUS
		if kind == "streamed" {
			ratioBud, cpuBud = bud.ClosedStreamRatioMin, bud.ClosedStreamCPUUS
		}
		for _, t := range targets[1:] {
			s := samples[kind+"/"+t.name]
			if s == nil {
				continue // not run in this kind
			}
			rps := median(s.rps)
			f := Figure{Scenario: sc, Name: t.name + " / direct", Value: rps / max(direct, 1), Unit: "ratio",
				Note: fmt.Sprintf("%s %.0f req/s (rounds %s)", t.name, rps, joinF(s.rps, 0))}
			if t.name == "gw" {
				f.Budget = b(ratioBud)
			}
			rep.add(f)
			if t.name == "floor" {
				r := roundRatios(samples[kind+"/gw"].rps, s.rps)
				rep.add(Figure{Scenario: sc, Name: "gw / floor (the bare relay on the same hop)", Value: median(r), Unit: "ratio",
					Note: "median of the rounds' ratios " + joinF(r, 2) + "; floor / direct is a bare fasthttp relay's distance from direct on this layout: the hop alone"})
			}
			if t.name == "gw-exporters" {
				// Each round's own ratio, then their median: within a round
				// the two processes run seconds apart, while conditions
				// between rounds differ by more than the exporters cost.
				r := roundRatios(s.rps, samples[kind+"/gw"].rps)
				rep.add(Figure{Scenario: sc, Name: "gw-exporters / gw (two usage exporters on vs none)", Value: median(r), Unit: "ratio",
					Budget: b(bud.ExportersRatioMin), Note: fmt.Sprintf("median of the rounds' ratios %s; the sink received %d batches, %d bytes so far", joinF(r, 2), sink.Requests(), sink.Bytes())})
			}
			if len(s.cpuUS) > 0 {
				f := Figure{Scenario: sc, Name: t.name + " CPU per request", Value: median(s.cpuUS), Unit: "µs",
					Note: "utime+stime from /proc/<pid>/stat over the measured window (rounds " + joinF(s.cpuUS, 1) + ")"}
				if t.name == "gw" {
					f.Budget, f.Max = b(cpuBud), true
				}
				rep.add(f)
			}
		}
	}

	o.Log("scenario 10: buffered chat at 2k req/s (open loop), shared cores")
	cfg := func(target, model string) load.Config {
		return load.Config{Target: target, APIKey: "perf-caller", Model: model, Rate: 2000, Connections: 512}
	}
	d, err := run("s10-direct-2k-shared", cfg(mockBase+"/v1", "gpt-4o"))
	if err != nil {
		return err
	}
	g, err := run("s10-gw-2k-shared", cfg("http://"+gw.Addr+"/v1", "gpt"))
	if err != nil {
		return err
	}
	sc := "10 buffered 2k req/s, shared cores"
	rep.add(Figure{Scenario: sc, Name: "added p50", Value: float64(g.LatencyUS.P50 - d.LatencyUS.P50), Unit: "µs"})
	rep.add(Figure{Scenario: sc, Name: "added p99", Value: float64(g.LatencyUS.P99 - d.LatencyUS.P99), Unit: "µs",
		Budget: b(bud.AddedP99At2kShared), Max: true, Note: fmt.Sprintf("direct p99 %d µs, gw p99 %d µs", d.LatencyUS.P99, g.LatencyUS.P99)})
	rep.add(Figure{Scenario: sc, Name: "gw errors", Value: float64(g.Errors), Unit: "requests"})
	return nil
}

// roundOrder is the order of round's runs: the targets rotated by the
// round, so each runs early and late in turn, except that gw and
// gw-exporters always run back to back, in alternating order. Their
// ratio is the exporters' cost, a few percent, and the host's load drifts
// more than that within the tens of seconds a round takes: adjacent runs,
// first one then the other ahead, keep the drift out of the ratio.
func roundOrder[T any](targets []T, round int, name func(T) string) []T {
	var units [][]T
	pair := -1
	for _, t := range targets {
		switch name(t) {
		case "gw-exporters":
			if pair < 0 {
				units = append(units, []T{t})
			} else {
				units[pair] = append(units[pair], t)
			}
		case "gw":
			pair = len(units)
			units = append(units, []T{t})
		default:
			units = append(units, []T{t})
		}
	}
	out := make([]T, 0, len(targets))
	for i := range units {
		u := units[(i+round)%len(units)]
		if len(u) == 2 && round%2 == 1 {
			u = []T{u[1], u[0]}
		}
		out = append(out, u...)
	}
	return out
}

// kernelWindow reads the machine's softirq seconds and TCP segments sent
// over the window cpuWindow measures (after warmup, for duration).
func kernelWindow(ctx context.Context, warmup, duration time.Duration) func() (softirq, segs float64, ok bool) {
	soft := cpuWindow(ctx, softirqSeconds, warmup, duration)
	segs := cpuWindow(ctx, tcpOutSegs, warmup, duration)
	return func() (float64, float64, bool) {
		s, ok1 := soft()
		n, ok2 := segs()
		return s, n, ok1 && ok2
	}
}

// startFloor runs perf/cmd/floorproxy relaying to the mock at mockAddr.
func startFloor(bin, mockAddr string) (*Proc, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-listen", addr, "-upstream", mockAddr)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start the floor relay: %w", err)
	}
	p := &Proc{Cmd: cmd, Addr: addr}
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return p, nil
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("floor relay not listening on %s: %w", addr, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// ColdStart runs gw on file and returns the time from exec to the first 200
// on /livez.
func ColdStart(gwBin, file string, env []string) (time.Duration, error) {
	addr, err := FreeAddr()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(gwBin, "serve", "--resources-file", file, "--listen", addr, "--debug-listen", "", "--access-log=false")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	client := &http.Client{Timeout: time.Second}
	url := "http://" + addr + "/livez"
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("cannot start gw: %w", err)
	}
	p := &Proc{Cmd: cmd, Addr: addr}
	defer p.Stop()
	for time.Since(start) < 30*time.Second {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return time.Since(start), nil
			}
		}
		time.Sleep(500 * time.Microsecond)
	}
	return 0, errors.New("gw did not answer /livez within 30 s")
}

// startMockAt starts `gw mock` without request recording on addr ("" picks
// a free port).
func startMockAt(gwBin string, core int, addr string) (*Proc, error) {
	if addr == "" {
		return StartMock(gwBin, core)
	}
	cmd := pinned(core, gwBin, "mock", "-addr", addr, "-record=false", "-model-suffix", "-2024-08-06")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start the mock: %w", err)
	}
	p := &Proc{Cmd: cmd, Addr: addr}
	if err := waitHTTP("http://"+addr+"/_mock/stats", 10*time.Second); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// unpinSelf lets every thread of this process run on every core (make perf
// starts gwperf under taskset) and returns how to pin it back.
func unpinSelf() (restore func(), err error) {
	restore = func() {}
	ts, err := exec.LookPath("taskset")
	if err != nil {
		return restore, err
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return restore, err
	}
	var allowed string
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			allowed = strings.TrimSpace(v)
		}
	}
	pid := strconv.Itoa(os.Getpid())
	all := "0-" + strconv.Itoa(machineCPUs()-1)
	if out, err := exec.Command(ts, "-a", "-p", "-c", all, pid).CombinedOutput(); err != nil {
		return restore, fmt.Errorf("%v: %s", err, out)
	}
	if allowed == "" || allowed == all {
		return restore, nil
	}
	return func() { _ = exec.Command(ts, "-a", "-p", "-c", allowed, pid).Run() }, nil
}

func machineCPUs() int {
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if n := strings.Count(string(b), "\nprocessor") + 1; n > 0 {
			return n
		}
	}
	return runtime.NumCPU()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// roundRatios divides each round's figure of a by the same round's of b.
func roundRatios(a, b []float64) []float64 {
	r := make([]float64, 0, len(a))
	for i := range min(len(a), len(b)) {
		r = append(r, a[i]/max(b[i], 1))
	}
	return r
}

func joinF(v []float64, prec int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatFloat(x, 'f', prec, 64)
	}
	return strings.Join(parts, ", ")
}
