package suite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"gw/perf/soak"
)

// Scenario 7, the soak: many short streams from many callers while gw reloads, every
// answer checked byte for byte (perf/soak). It measures correctness under load, not
// latency: a stream that arrives truncated or altered, a panic in gw's log, or gw's
// request counters disagreeing with what the callers saw.
const (
	SoakRequests    = 100_000
	soakConcurrency = 64
	soakChunks      = 20
	soakChunkSize   = 16
	soakReloadEvery = time.Second
)

// soakFile serves the alias "soak" on the mock; its key forwards the x-mock-* headers
// with which the harness sets each answer's chunk count and size.
const soakFile = `_format_version: "1"
provider_keys:
  - display_name: mock
    api_key: ${PERF_UPSTREAM_KEY}
    api_base: ${PERF_MOCK}/v1
    request:
      forward_client_headers: ["x-mock-*"]
api_keys:
  - display_name: perf
    key_env: PERF_CALLER_KEY
    allowed_models: ["*"]
models:
  - {display_name: soak, provider: openai, model_name: gpt-4o, provider_key: mock, stream_timeout: 30000}
`

// RunSoak runs scenario 7 alone (gwperf -only soak) with requests streams, against its
// own mock; the report is returned, not written.
func RunSoak(ctx context.Context, o Options, requests int) (*Report, error) {
	sess, err := openSession(o)
	if err != nil {
		return nil, err
	}
	defer sess.close()
	bud, rep, tmp, mock := sess.bud, sess.rep, sess.tmp, sess.mock
	mockBase := "http://" + mock.Addr
	env := []string{"PERF_UPSTREAM_KEY=sk-perf", "PERF_CALLER_KEY=perf-caller", "PERF_MOCK=" + mockBase}
	return rep, soakScenario(ctx, o, rep, &bud, tmp, env, requests)
}

// soakScenario runs the soak on a fresh gw started with env (the mock's address and the
// keys) and adds its figures to rep.
func soakScenario(ctx context.Context, o Options, rep *Report, bud *Budgets, dir string, env []string, requests int) error {
	o.Log("scenario 7: soak, %d streams of %d chunks from %d callers, SIGHUP every %s", requests, soakChunks, soakConcurrency, soakReloadEvery)
	file := filepath.Join(dir, "soak.yaml")
	if err := os.WriteFile(file, []byte(soakFile), 0o600); err != nil {
		return err
	}
	logw := &panicLines{w: os.Stderr}
	// Unlike the latency scenarios, gw is not pinned to one core but spread over all of
	// them, sharing them with the callers and the mock: pinned alone to one core
	// (GOMAXPROCS 1) it interleaves its connections far less, and the stream-state race
	// this scenario was written for broke 2 streams in 100,000 there, against 49 in
	// 100,000 spread over the 2-core VM.
	cpus := ""
	if o.GWCore >= 0 {
		cpus = onlineCPUs()
	}
	gw, err := startGWLogged(o.GWBin, cpus, file, env, logw)
	if err != nil {
		return err
	}
	defer gw.Stop()
	res, err := soak.Run(ctx, soak.Config{
		Base: "http://" + gw.Addr + "/v1", CallerKey: "perf-caller", Model: "soak", UpstreamModel: "gpt-4o",
		Concurrency: soakConcurrency, Requests: requests, StreamShare: 1, IncludeUsageShare: 0.5,
		Chunks: soakChunks, ChunkSize: soakChunkSize, ReloadEvery: soakReloadEvery, ReloadPID: gw.PID(), Timeout: 30 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	mismatch, mismatchNote := metricsMismatch("http://"+gw.Addr, res.Status)
	gw.Stop() // its stderr is complete once it has exited
	panics, firstPanic := logw.result()
	o.Log("    %d streams in %s, %d broken, %d panic lines, metrics mismatch %d", res.Total, res.Elapsed.Round(time.Millisecond), res.Broken, panics, mismatch)

	sc := "7 soak"
	rep.add(Figure{Scenario: sc, Name: "streams_broken", Value: float64(res.Broken), Unit: "streams", Budget: b(bud.SoakBrokenStreams), Max: true,
		Note: fmt.Sprintf("%d streams (%d×%d B chunks) from %d callers, %d SIGHUPs; statuses %s%s",
			res.Total, soakChunks, soakChunkSize, soakConcurrency, res.Reloads, statusList(res.Status), firstFailures(res.Failures, 2))})
	rep.add(Figure{Scenario: sc, Name: "panics", Value: float64(panics), Unit: "lines", Note: firstPanic})
	rep.add(Figure{Scenario: sc, Name: "metrics_mismatch", Value: float64(mismatch), Unit: "requests", Note: mismatchNote})
	where := "gw on the suite's CPUs"
	if cpus != "" {
		where = "gw on CPUs " + cpus + ", not pinned to one"
	}
	rep.add(Figure{Scenario: sc, Name: "throughput", Value: float64(res.Total) / res.Elapsed.Seconds(), Unit: "streams/s",
		Note: fmt.Sprintf("%s; %.1f MiB of bodies; %s", res.Elapsed.Round(time.Millisecond), float64(res.BodyBytes)/(1<<20), where)})
	return nil
}

// startGWLogged is StartGW with gw's stderr going to stderr (the soak counts its panic
// lines) and gw allowed on cpus, a taskset list ("" runs it with the suite's own affinity).
func startGWLogged(gwBin, cpus string, resources string, env []string, stderr io.Writer) (*Proc, error) {
	p, _, err := Launch("gw", 1, func(a []string) *exec.Cmd {
		argv := []string{gwBin, "serve", "--resources-file", resources, "--listen", a[0], "--debug-listen", "", "--access-log=false"}
		cmd := exec.Command(argv[0], argv[1:]...)
		if ts, err := exec.LookPath("taskset"); err == nil && cpus != "" {
			cmd = exec.Command(ts, append([]string{"-c", cpus}, argv...)...)
		}
		cmd.Env = append(os.Environ(), env...)
		cmd.Stderr = stderr
		return cmd
	}, readyGW)
	return p, err
}

// onlineCPUs is the machine's CPU list ("0-1"), whatever the suite's own affinity (make
// perf runs gwperf on one core, and children inherit it); "" when unknown.
func onlineCPUs() string {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// metricsMismatch compares gw_requests_total{model="soak"} with the callers' counts per
// status and returns the requests unaccounted for (the sum of the differences). gw
// counts a stream after its last byte, so it may lag the callers briefly: poll.
func metricsMismatch(base string, callers map[int]int) (int, string) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := soak.MetricsRequests(base, "soak")
		diff := 0
		for s := range union(got, callers) {
			diff += max(got[s]-callers[s], callers[s]-got[s])
		}
		if err == nil && diff == 0 {
			return 0, "gw_requests_total per status equals the callers' counts"
		}
		if time.Now().After(deadline) {
			if err != nil {
				return -1, "cannot read /metrics: " + err.Error()
			}
			return diff, "gw " + statusList(got) + ", callers " + statusList(callers)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func union(a, b map[int]int) map[int]bool {
	out := map[int]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// statusList renders counts per status in order, e.g. "200: 99998, 0: 2".
func statusList(m map[int]int) string {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = strconv.Itoa(k) + ": " + strconv.Itoa(m[k])
	}
	return strings.Join(parts, ", ")
}

func firstFailures(f []string, n int) string {
	if len(f) == 0 {
		return ""
	}
	return "; first broken: " + strings.Join(f[:min(n, len(f))], " | ")
}

// panicLines passes gw's stderr through to w and counts the lines that contain
// "panic". Writes arrive in arbitrary pieces, so a partial line waits for its end.
type panicLines struct {
	w       io.Writer
	mu      sync.Mutex
	partial []byte
	n       int
	first   string
}

func (p *panicLines) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		p.line(p.partial[:i])
		p.partial = p.partial[i+1:]
	}
	p.partial = append([]byte(nil), p.partial...) // do not pin the consumed lines
	return p.w.Write(b)
}

func (p *panicLines) line(l []byte) {
	if bytes.Contains(l, []byte("panic")) {
		p.n++
		if p.first == "" {
			p.first = string(l[:min(len(l), 300)])
		}
	}
}

// result returns the count and the first such line, the unterminated last line included.
func (p *panicLines) result() (int, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.partial) > 0 {
		p.line(p.partial)
		p.partial = nil
	}
	return p.n, p.first
}
