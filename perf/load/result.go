package load

import (
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Result is the outcome of a run; its JSON form is what `gwload --json` writes. Latency
// figures are integer µs. Only requests sent after the warmup are counted.
type Result struct {
	Mode        Mode         `json:"mode"`
	Stream      bool         `json:"stream"`
	Config      ResultConfig `json:"config"`
	StartedAt   time.Time    `json:"started_at"`
	Interrupted bool         `json:"interrupted,omitempty"` // ctx was done before the end

	// ElapsedS runs from the end of the warmup to the last completion of a counted request.
	ElapsedS float64 `json:"elapsed_s"`
	// Requests counts the requests sent in the measured window that have finished:
	// Successes (2xx, stream read to its end) plus Errors.
	Requests  int64 `json:"requests"`
	Successes int64 `json:"successes"`
	Errors    int64 `json:"errors"`
	// ErrorsByClass splits Errors into "status_<code>" (non-2xx answers; "status_other"
	// for codes outside 0-599), "transport" (dial, reset, stream cut) and "timeout".
	ErrorsByClass map[string]int64 `json:"errors_by_class"`
	// ErrorSamples holds the first message of each class seen (for a status class, the
	// start of its body).
	ErrorSamples map[string]string `json:"error_samples,omitempty"`

	// RateTargetRPS is Config.Rate (open loop).
	RateTargetRPS float64 `json:"rate_target_rps,omitempty"`
	// RateAchievedRPS is the rate requests were sent at. Open loop: Requests over the
	// span of their sends (Requests/Rate when every send was on time; late sends stretch
	// it). Closed loop: Requests over ElapsedS.
	RateAchievedRPS float64 `json:"rate_achieved_rps"`
	// SuccessRPS is RateAchievedRPS counting successes only.
	SuccessRPS float64 `json:"success_rps"`

	// LatencyUS is the total time of successful requests (stream included), from the
	// due time in open loop and from the actual send in closed loop.
	LatencyUS Percentiles `json:"latency_us"`
	// LateSends is set in open loop.
	LateSends *LateSends `json:"late_sends,omitempty"`
	// Streams is set for streaming runs.
	Streams *StreamResult `json:"streams,omitempty"`
	// Generator is what the run cost the generator's process.
	Generator Generator `json:"generator"`
}

// ResultConfig echoes the run's configuration, defaults applied. The API key is left out.
type ResultConfig struct {
	Target          string   `json:"target"`
	Format          Format   `json:"format"`
	Model           string   `json:"model,omitempty"`
	BodyBytes       int      `json:"body_bytes"`
	Headers         []string `json:"headers,omitempty"` // "name: value"; credentials redacted
	Rate            float64  `json:"rate,omitempty"`
	Connections     int      `json:"connections"`
	DurationS       float64  `json:"duration_s"`
	WarmupS         float64  `json:"warmup_s"`
	TimeoutS        float64  `json:"timeout_s"`
	LateThresholdUS int64    `json:"late_threshold_us,omitempty"`
}

// Percentiles summarizes one histogram, in µs. All fields are zero when Count is.
type Percentiles struct {
	Count int64   `json:"count"`
	Min   int64   `json:"min"`
	Mean  float64 `json:"mean"`
	P50   int64   `json:"p50"`
	P90   int64   `json:"p90"`
	P99   int64   `json:"p99"`
	P999  int64   `json:"p99_9"`
	Max   int64   `json:"max"`
}

// LateSends says how well an open-loop run kept its timetable.
type LateSends struct {
	ThresholdUS int64 `json:"threshold_us"`
	// Count is how many requests went out more than ThresholdUS after their due time.
	Count    int64   `json:"count"`
	Fraction float64 `json:"fraction"`
	// DelayUS is the distribution of send time minus due time over every request.
	DelayUS Percentiles `json:"delay_us"`
}

// StreamResult holds the figures of successful streams.
type StreamResult struct {
	Streams int64 `json:"streams"`
	// Completed counts the streams that ended with the format's terminator: data: [DONE]
	// (chat), message_stop (messages), response.completed (responses).
	Completed int64 `json:"completed"`
	NoToken   int64 `json:"no_token"` // never carried content, so no TTFT
	// Events counts data events (the terminator excluded); Chunks those that carry
	// content: a non-empty choices[].delta.content (chat), a content_block_delta with a
	// non-empty delta.text (messages), a response.output_text.delta with a non-empty delta
	// (responses).
	Events          int64   `json:"events"`
	Chunks          int64   `json:"chunks"`
	ChunksPerStream MinMean `json:"chunks_per_stream"`
	// TTFBUS runs to the response headers, TTFTUS to the first content chunk, both from
	// the same start as Result.LatencyUS.
	TTFBUS Percentiles `json:"ttfb_us"`
	TTFTUS Percentiles `json:"ttft_us"`
	// ChunkGapUS is the distribution of the gaps between consecutive data events.
	ChunkGapUS Percentiles `json:"chunk_gap_us"`
}

// MinMean is a small summary of a count.
type MinMean struct {
	Min  int64   `json:"min"`
	Mean float64 `json:"mean"`
	Max  int64   `json:"max"`
}

// Generator is the generator's own cost, measured over the whole run (warmup included).
// CPU figures are the process's: a target running in the same process is included.
type Generator struct {
	WallS    float64 `json:"wall_s"`
	CPUUserS float64 `json:"cpu_user_s"`
	CPUSysS  float64 `json:"cpu_sys_s"`
	// CPUCores is (user+sys)/wall: how many cores the generator kept busy. Near
	// GOMAXPROCS, the generator is the bottleneck and the figures are not the target's.
	CPUCores   float64 `json:"cpu_cores"`
	GOMAXPROCS int     `json:"gomaxprocs"`
	NumCPU     int     `json:"num_cpu"`
	// Workers is how many worker goroutines (and at most connections) the run used.
	Workers int64 `json:"workers"`
}

// percentiles summarizes h.
func percentiles(h *hdrhistogram.Histogram) Percentiles {
	if h == nil || h.TotalCount() == 0 {
		return Percentiles{}
	}
	v := h.ValueAtPercentilesSlice([]float64{50, 90, 99, 99.9})
	return Percentiles{
		Count: h.TotalCount(),
		Min:   h.Min(),
		Mean:  h.Mean(),
		P50:   v[0],
		P90:   v[1],
		P99:   v[2],
		P999:  v[3],
		Max:   h.Max(),
	}
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// result builds the Result once every worker is done.
func (r *runner) result(started time.Time, wall time.Duration, cpu cpuTime, interrupted bool) *Result {
	cfg := &r.cfg
	s := r.rec.merge()
	res := &Result{
		Mode:        cfg.Mode(),
		Stream:      cfg.Stream,
		StartedAt:   started,
		Interrupted: interrupted,
		Requests:    s.requests,
		Successes:   s.successes,
		LatencyUS:   percentiles(s.latency),
		Config: ResultConfig{
			Target:      cfg.Target,
			Format:      cfg.Format,
			Model:       cfg.Model,
			BodyBytes:   len(r.tmpl.Body()),
			Connections: cfg.Connections,
			DurationS:   seconds(cfg.Duration),
			WarmupS:     seconds(cfg.Warmup),
			TimeoutS:    seconds(cfg.Timeout),
		},
		Generator: Generator{
			WallS:      seconds(wall),
			CPUUserS:   seconds(cpu.user),
			CPUSysS:    seconds(cpu.sys),
			GOMAXPROCS: runtime.GOMAXPROCS(0),
			NumCPU:     runtime.NumCPU(),
			Workers:    r.workerID.Load(),
		},
	}
	if wall > 0 {
		res.Generator.CPUCores = seconds(cpu.user+cpu.sys) / seconds(wall)
	}
	for _, h := range cfg.Headers {
		v := h.Value
		if isSecretHeader(h.Name) {
			v = "<redacted>"
		}
		res.Config.Headers = append(res.Config.Headers, h.Name+": "+v)
	}
	res.ErrorsByClass, res.ErrorSamples = s.errorClasses()
	for _, n := range res.ErrorsByClass {
		res.Errors += n
	}
	if s.requests > 0 {
		res.ElapsedS = seconds(s.lastDone - r.window)
	}

	span := s.lastDone - r.window
	if res.Mode == OpenLoop {
		res.Config.Rate = cfg.Rate
		res.Config.LateThresholdUS = cfg.LateThreshold.Microseconds()
		res.RateTargetRPS = cfg.Rate
		// n on-time sends span (n-1)/rate; one interval more makes the rate exact.
		span = s.lastSend - r.window + time.Duration(float64(time.Second)/cfg.Rate)
		res.LateSends = &LateSends{
			ThresholdUS: cfg.LateThreshold.Microseconds(),
			Count:       s.late,
			DelayUS:     percentiles(s.sendDelay),
		}
		if s.requests > 0 {
			res.LateSends.Fraction = float64(s.late) / float64(s.requests)
		}
	}
	if s.requests > 0 && span > 0 {
		res.RateAchievedRPS = float64(s.requests) / seconds(span)
		res.SuccessRPS = float64(s.successes) / seconds(span)
	}

	if cfg.Stream {
		st := &StreamResult{
			Streams:    s.streams,
			Completed:  s.streamsDone,
			NoToken:    s.noToken,
			Events:     s.events,
			Chunks:     s.chunks,
			TTFBUS:     percentiles(s.ttfb),
			TTFTUS:     percentiles(s.ttft),
			ChunkGapUS: percentiles(s.gap),
		}
		if s.streams > 0 {
			st.ChunksPerStream = MinMean{
				Min:  s.minChunks,
				Mean: float64(s.chunks) / float64(s.streams),
				Max:  s.maxChunks,
			}
		}
		res.Streams = st
	}
	return res
}

// isSecretHeader reports whether the value of header name is a credential that must not
// be written into a result file.
func isSecretHeader(name string) bool {
	name = strings.ToLower(name)
	return name == "authorization" || name == "proxy-authorization" || name == "cookie" ||
		strings.Contains(name, "key") || strings.Contains(name, "token") || strings.Contains(name, "secret")
}

// errorClasses returns the error counts and samples keyed by class name.
func (s *shard) errorClasses() (counts map[string]int64, samples map[string]string) {
	counts = map[string]int64{}
	samples = map[string]string{}
	for code, n := range s.status {
		if n == 0 {
			continue
		}
		name := "status_other"
		if code != 0 {
			name = "status_" + strconv.Itoa(code)
		}
		counts[name] = n
	}
	if s.sampleStatus != 0 {
		name := "status_" + strconv.Itoa(s.sampleStatus)
		if s.sampleStatus < 0 || s.sampleStatus >= len(s.status) {
			name = "status_other"
		}
		samples[name] = s.samples[classStatus]
	}
	if s.transport > 0 {
		counts["transport"] = s.transport
		samples["transport"] = s.samples[classTransport]
	}
	if s.timeout > 0 {
		counts["timeout"] = s.timeout
		samples["timeout"] = s.samples[classTimeout]
	}
	if len(samples) == 0 {
		samples = nil
	}
	return counts, samples
}

// Markdown renders r as a title and GitHub-flavoured tables, for a terminal or a report.
func (r *Result) Markdown() string {
	var b strings.Builder
	kind := "buffered"
	if r.Stream {
		kind = "streaming"
	}
	if f := r.Config.Format; f != "" && f != FormatChat {
		kind += " " + string(f)
	}
	load := fmt.Sprintf("%d connections", r.Config.Connections)
	if r.Mode == OpenLoop {
		load = fmt.Sprintf("%s req/s", fmtFloat(r.RateTargetRPS))
	}
	fmt.Fprintf(&b, "### gwload: %s, %s, %s for %s → %s\n\n", r.Mode, kind, load,
		fmtSeconds(r.Config.DurationS), r.Config.Target)
	if r.Interrupted {
		b.WriteString("**Interrupted before the end: partial figures.**\n\n")
	}

	b.WriteString("| requests | ok | errors | req/s | ok/s |")
	sep := "|---:|---:|---:|---:|---:|"
	if r.LateSends != nil {
		b.WriteString(" target req/s | late sends |")
		sep += "---:|---:|"
	}
	b.WriteString(" generator CPU |\n")
	b.WriteString(sep + "---:|\n")
	fmt.Fprintf(&b, "| %d | %d | %d | %s | %s |", r.Requests, r.Successes, r.Errors,
		fmtFloat(r.RateAchievedRPS), fmtFloat(r.SuccessRPS))
	if ls := r.LateSends; ls != nil {
		fmt.Fprintf(&b, " %s | %d (%.2f%%) > %s |", fmtFloat(r.RateTargetRPS), ls.Count, 100*ls.Fraction,
			fmtUS(float64(ls.ThresholdUS)))
	}
	g := r.Generator
	fmt.Fprintf(&b, " %.2fs in %.2fs = %.2f of %d cores |\n\n", g.CPUUserS+g.CPUSysS, g.WallS, g.CPUCores, g.GOMAXPROCS)

	b.WriteString("| | count | mean | p50 | p90 | p99 | p99.9 | max |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	row := func(name string, p Percentiles) {
		if p.Count == 0 {
			fmt.Fprintf(&b, "| %s | 0 | - | - | - | - | - | - |\n", name)
			return
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", name, p.Count, fmtUS(p.Mean),
			fmtUS(float64(p.P50)), fmtUS(float64(p.P90)), fmtUS(float64(p.P99)), fmtUS(float64(p.P999)),
			fmtUS(float64(p.Max)))
	}
	row("latency", r.LatencyUS)
	if st := r.Streams; st != nil {
		row("TTFB", st.TTFBUS)
		row("TTFT", st.TTFTUS)
		row("chunk gap", st.ChunkGapUS)
	}
	if r.LateSends != nil {
		row("send delay", r.LateSends.DelayUS)
	}

	if g.GOMAXPROCS > 0 && g.CPUCores >= 0.8*float64(g.GOMAXPROCS) {
		fmt.Fprintf(&b, "\n**Warning:** the generator kept %.2f of %d cores busy: these figures may measure the generator, not the target.\n",
			g.CPUCores, g.GOMAXPROCS)
	}
	if ls := r.LateSends; ls != nil && ls.Fraction > 0.01 {
		fmt.Fprintf(&b, "\n**Warning:** %.1f%% of the requests went out more than %s late: the generator did not keep the timetable "+
			"(latencies still count from the due times).\n", 100*ls.Fraction, fmtUS(float64(ls.ThresholdUS)))
	}
	if st := r.Streams; st != nil {
		terminator := "[DONE]"
		if spec := r.Config.Format.spec(); spec != nil {
			terminator = spec.terminator
		}
		fmt.Fprintf(&b, "\nStreams: %d ok, %d with %s, %d without content; chunks/stream min %d, mean %.1f, max %d; %d events.\n",
			st.Streams, st.Completed, terminator, st.NoToken, st.ChunksPerStream.Min, st.ChunksPerStream.Mean,
			st.ChunksPerStream.Max, st.Events)
	}
	if len(r.ErrorsByClass) > 0 {
		names := make([]string, 0, len(r.ErrorsByClass))
		for name := range r.ErrorsByClass {
			names = append(names, name)
		}
		sort.Strings(names)
		b.WriteString("\n| error class | count | first seen |\n|---|---:|---|\n")
		for _, name := range names {
			fmt.Fprintf(&b, "| %s | %d | %s |\n", name, r.ErrorsByClass[name], mdCell(r.ErrorSamples[name]))
		}
	}
	return b.String()
}

// fmtUS renders a µs figure with a unit that keeps 3-4 significant digits.
func fmtUS(us float64) string {
	switch {
	case us < 1000:
		return strconv.FormatFloat(us, 'f', 0, 64) + "µs"
	case us < 1e6:
		return strconv.FormatFloat(us/1e3, 'f', 2, 64) + "ms"
	default:
		return strconv.FormatFloat(us/1e6, 'f', 2, 64) + "s"
	}
}

func fmtFloat(f float64) string {
	if f == float64(int64(f)) {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}

func fmtSeconds(s float64) string {
	return time.Duration(s * float64(time.Second)).String()
}

// mdCell makes s fit in one table cell: one line, no pipes, at most 120 bytes.
func mdCell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
