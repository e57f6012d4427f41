package load_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"gw/perf/load"
	"gw/perf/mock"
)

// startMock serves the mock on a random loopback port and returns its base URL.
func startMock(t *testing.T) string {
	t.Helper()
	m := mock.New(mock.Config{RecordLimit: -1})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = m.Serve(ln) }()
	t.Cleanup(func() { _ = m.Shutdown() })
	return "http://" + ln.Addr().String() + "/v1"
}

// closedPort returns a base URL nobody listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr + "/v1"
}

func run(t *testing.T, cfg load.Config) *load.Result {
	t.Helper()
	res, err := load.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		t.Logf("\n%s", res.Markdown())
	}
	return res
}

func TestOpenLoop(t *testing.T) {
	t.Parallel()
	res := run(t, load.Config{Target: startMock(t), Rate: 500, Duration: time.Second})
	// The timetable has exactly 500 requests in 1 s, whatever the machine's noise. A
	// starved machine (a shared 2-core CI box) may lose a few to dial timeouts and send
	// late, which lowers the achieved rate; it can never exceed the target.
	if res.Mode != load.OpenLoop || res.Requests != 500 || res.Successes < 475 || res.Successes+res.Errors != 500 {
		t.Fatalf("mode %s: %d requests, %d ok, %d errors %v; want open-loop, 500, ~500, ~0",
			res.Mode, res.Requests, res.Successes, res.Errors, res.ErrorsByClass)
	}
	if res.RateAchievedRPS < 250 || res.RateAchievedRPS > 500.5 {
		t.Fatalf("rate achieved %g; want ~500", res.RateAchievedRPS)
	}
	if res.LateSends == nil || res.LateSends.DelayUS.Count != 500 || res.LatencyUS.Count != res.Successes || res.LatencyUS.P50 <= 0 {
		t.Fatalf("late sends %+v, latency %+v; want a send delay per request and a latency per success",
			res.LateSends, res.LatencyUS)
	}
	if res.Generator.CPUUserS+res.Generator.CPUSysS <= 0 || res.Generator.Workers < 1 {
		t.Fatalf("generator %+v; want CPU time and workers", res.Generator)
	}
}

func TestClosedLoop(t *testing.T) {
	t.Parallel()
	res := run(t, load.Config{Target: startMock(t), Connections: 8, Duration: 300 * time.Millisecond,
		Warmup: 100 * time.Millisecond, APIKey: "sk-test",
		Headers: []load.Header{{Name: "X-Api-Key", Value: "sk-2"}, {Name: "x-mock-chunks", Value: "3"}}})
	if res.Mode != load.ClosedLoop || res.RateAchievedRPS <= 0 || res.Successes == 0 || res.Errors != 0 {
		t.Fatalf("mode %s: %g req/s, %d ok, %d errors %v; want closed-loop, > 0, > 0, 0",
			res.Mode, res.RateAchievedRPS, res.Successes, res.Errors, res.ErrorsByClass)
	}
	if res.Generator.Workers != 8 || res.LateSends != nil || res.Streams != nil {
		t.Fatalf("workers %d, late sends %v, streams %v; want 8, nil, nil", res.Generator.Workers, res.LateSends, res.Streams)
	}
	if h := res.Config.Headers; len(h) != 2 || h[0] != "X-Api-Key: <redacted>" || h[1] != "x-mock-chunks: 3" ||
		res.Config.Model != "gpt-4o" {
		t.Fatalf("config echo %+v; want credentials redacted and the built-in body's model", res.Config)
	}
	if res.ElapsedS < 0.3 || res.ElapsedS > 30 {
		t.Fatalf("elapsed %gs; want about 0.3s after the warmup", res.ElapsedS)
	}
}

func TestStream(t *testing.T) {
	t.Parallel()
	target := startMock(t)
	f := func(name string, cfg load.Config) {
		t.Helper()
		cfg.Target, cfg.Stream, cfg.Duration = target, true, 300*time.Millisecond
		cfg.Headers = []load.Header{{Name: "x-mock-chunks", Value: "20"}}
		res := run(t, cfg)
		st := res.Streams
		if res.Successes == 0 || res.Errors != 0 || st == nil || st.Streams != res.Successes {
			t.Fatalf("%s: %d ok, %d errors %v, streams %+v; want all ok", name, res.Successes, res.Errors,
				res.ErrorSamples, st)
		}
		n := st.Streams
		// Per stream: a role chunk, 20 content chunks, a finish chunk, [DONE].
		if st.ChunksPerStream != (load.MinMean{Min: 20, Mean: 20, Max: 20}) || st.Events != 22*n || st.Completed != n {
			t.Fatalf("%s: chunks %+v, events %d, completed %d; want 20 chunks and 22 events each, all completed",
				name, st.ChunksPerStream, st.Events, st.Completed)
		}
		if st.TTFTUS.Count != n || st.TTFTUS.Max <= 0 || st.TTFBUS.Count != n || st.ChunkGapUS.Count != 21*n {
			t.Fatalf("%s: TTFT %+v, TTFB %+v, %d gaps; want one TTFT > 0 and TTFB per stream, 21 gaps each",
				name, st.TTFTUS, st.TTFBUS, st.ChunkGapUS.Count)
		}
		if st.TTFTUS.P50 < st.TTFBUS.P50 || res.LatencyUS.P50 < st.TTFTUS.P50 {
			t.Fatalf("%s: TTFB %d, TTFT %d, total %d µs (p50); want TTFB <= TTFT <= total", name,
				st.TTFBUS.P50, st.TTFTUS.P50, res.LatencyUS.P50)
		}
	}
	f("closed", load.Config{Connections: 4})
	f("open", load.Config{Rate: 100})
}

// TestFormats runs the Anthropic Messages and OpenAI Responses formats against the mock,
// buffered and streaming, and checks what the mock received.
func TestFormats(t *testing.T) {
	t.Parallel()
	m := mock.New(mock.Config{RecordLimit: 8})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = m.Serve(ln) }()
	t.Cleanup(func() { _ = m.Shutdown() })
	target := "http://" + ln.Addr().String() + "/v1"

	// perStream: the data events of a 20-chunk stream, the terminator excluded.
	f := func(format load.Format, stream bool, wantModel, wantPath string, perStream int64, wantHeaders map[string]string) {
		t.Helper()
		name := string(format)
		if stream {
			name += " stream"
		}
		res := run(t, load.Config{Target: target, Format: format, APIKey: "sk-test", Stream: stream, Connections: 2,
			Duration: 200 * time.Millisecond, Headers: []load.Header{{Name: "x-mock-chunks", Value: "20"}}})
		if res.Successes == 0 || res.Errors != 0 {
			t.Fatalf("%s: %d ok, %d errors %v %v; want all ok", name, res.Successes, res.Errors, res.ErrorsByClass, res.ErrorSamples)
		}
		if res.Config.Format != format || res.Config.Model != wantModel {
			t.Fatalf("%s: config echo %+v; want format %s and the built-in body's model %s", name, res.Config, format, wantModel)
		}
		if md := res.Markdown(); !strings.Contains(md, " "+string(format)+",") {
			t.Fatalf("%s: markdown title lacks the format:\n%s", name, md)
		}
		reqs := m.Requests()
		last := reqs[len(reqs)-1]
		if last.Path != wantPath || !strings.Contains(last.Body, `"model":"`+wantModel+`"`) ||
			strings.Contains(last.Body, `"stream":true`) != stream {
			t.Fatalf("%s: the mock got %s %s; want %s, model %s, stream %v", name, last.Path, last.Body, wantPath, wantModel, stream)
		}
		for k, v := range wantHeaders {
			if got := last.Header.Get(k); got != v {
				t.Fatalf("%s: the mock got %s: %q; want %q (headers %v)", name, k, got, v, last.Header)
			}
		}
		st := res.Streams
		if !stream {
			if st != nil || res.LatencyUS.Count != res.Successes {
				t.Fatalf("%s: streams %+v, latency %+v; want no stream figures", name, st, res.LatencyUS)
			}
			return
		}
		n := st.Streams
		if st.ChunksPerStream != (load.MinMean{Min: 20, Mean: 20, Max: 20}) || st.Events != perStream*n || st.Completed != n ||
			st.NoToken != 0 {
			t.Fatalf("%s: chunks %+v, events %d, completed %d, no token %d; want 20 chunks and %d events each, all completed",
				name, st.ChunksPerStream, st.Events, st.Completed, st.NoToken, perStream)
		}
		if st.TTFTUS.Count != n || st.ChunkGapUS.Count != (perStream-1)*n || st.TTFTUS.P50 < st.TTFBUS.P50 ||
			res.LatencyUS.P50 < st.TTFTUS.P50 {
			t.Fatalf("%s: TTFB %+v, TTFT %+v, %d gaps; want one TTFT per stream, TTFB <= TTFT <= total, %d gaps each",
				name, st.TTFBUS, st.TTFTUS, st.ChunkGapUS.Count, perStream-1)
		}
	}
	anthropic := map[string]string{"X-Api-Key": "sk-test", "Anthropic-Version": "2023-06-01", "Authorization": ""}
	openai := map[string]string{"Authorization": "Bearer sk-test", "X-Api-Key": "", "Anthropic-Version": ""}
	// message_start, content_block_start, ping, 20 deltas, content_block_stop, message_delta.
	f(load.FormatMessages, false, "claude-sonnet-4-5", "/v1/messages", 0, anthropic)
	f(load.FormatMessages, true, "claude-sonnet-4-5", "/v1/messages", 25, anthropic)
	// created, in_progress, output_item.added, content_part.added, 20 deltas, output_text.done,
	// content_part.done, output_item.done.
	f(load.FormatResponses, false, "gpt-4o", "/v1/responses", 0, openai)
	f(load.FormatResponses, true, "gpt-4o", "/v1/responses", 27, openai)

	// Without its terminator a stream succeeds but does not count as completed.
	for _, format := range []load.Format{load.FormatMessages, load.FormatResponses} {
		res := run(t, load.Config{Target: target, Format: format, Stream: true, Connections: 1, Duration: 50 * time.Millisecond,
			Headers: []load.Header{{Name: "x-mock-no-done", Value: "true"}}})
		if st := res.Streams; res.Successes == 0 || res.Errors != 0 || st.Completed != 0 || st.Chunks != 5*st.Streams {
			t.Fatalf("%s no terminator: %d ok, %d errors, streams %+v; want ok streams of 5 chunks, none completed",
				format, res.Successes, res.Errors, st)
		}
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	target := startMock(t)
	f := func(name string, cfg load.Config, class, sample string) {
		t.Helper()
		if cfg.Target == "" {
			cfg.Target = target
		}
		if cfg.Duration == 0 {
			cfg.Duration = 200 * time.Millisecond
		}
		if cfg.Connections == 0 {
			cfg.Connections = 2
		}
		res := run(t, cfg)
		if res.Requests == 0 || res.Successes != 0 || res.Errors != res.Requests || res.ErrorsByClass[class] != res.Requests {
			t.Fatalf("%s: %d requests, %d ok, errors %v; want every request in %q", name, res.Requests,
				res.Successes, res.ErrorsByClass, class)
		}
		if res.LatencyUS.Count != 0 || res.SuccessRPS != 0 {
			t.Fatalf("%s: latency %+v, %g ok/s; errors must not count as latency", name, res.LatencyUS, res.SuccessRPS)
		}
		if !strings.Contains(res.ErrorSamples[class], sample) {
			t.Fatalf("%s: sample %q; want it to contain %q", name, res.ErrorSamples[class], sample)
		}
		if !strings.Contains(res.Markdown(), "| "+class+" | ") {
			t.Fatalf("%s: markdown lacks the %s row:\n%s", name, class, res.Markdown())
		}
	}
	status500 := []load.Header{{Name: "x-mock-status", Value: "500"}}
	f("status", load.Config{Headers: status500}, "status_500", "server_error")
	f("status stream", load.Config{Headers: status500, Stream: true}, "status_500", "server_error")
	f("status open", load.Config{Headers: status500, Rate: 50}, "status_500", "server_error")
	f("cut stream", load.Config{Stream: true, Headers: []load.Header{{Name: "x-mock-fail-after", Value: "2"}}},
		"transport", "")
	f("timeout", load.Config{Timeout: 50 * time.Millisecond, Duration: 100 * time.Millisecond,
		Headers: []load.Header{{Name: "x-mock-latency", Value: "2s"}}}, "timeout", "timeout")
	f("refused", load.Config{Target: closedPort(t), Duration: 50 * time.Millisecond}, "transport", "")
	// The Anthropic error envelope, and a Messages stream cut after 2 chunks.
	f("messages status", load.Config{Format: load.FormatMessages, Stream: true,
		Headers: []load.Header{{Name: "x-mock-status", Value: "529"}}}, "status_529", "overloaded_error")
	f("messages cut stream", load.Config{Format: load.FormatMessages, Stream: true,
		Headers: []load.Header{{Name: "x-mock-fail-after", Value: "2"}}}, "transport", "")
	f("responses cut stream", load.Config{Format: load.FormatResponses, Stream: true,
		Headers: []load.Header{{Name: "x-mock-fail-after", Value: "2"}}}, "transport", "")
}

func TestInterrupt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := load.Run(ctx, load.Config{Target: startMock(t), Connections: 2, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || res.Successes == 0 || time.Since(start) > 10*time.Second {
		t.Fatalf("interrupted %v, %d ok after %s; want a prompt partial result", res.Interrupted, res.Successes,
			time.Since(start))
	}
}

func TestConfigErrors(t *testing.T) {
	f := func(cfg load.Config, want string) {
		t.Helper()
		_, err := load.Run(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v; want an error containing %q", err, want)
		}
	}
	f(load.Config{}, "`target`: missing")
	f(load.Config{Target: "ftp://x/v1"}, "scheme must be http or https")
	f(load.Config{Target: "http://x/v1", Rate: -1}, "`rate`")
	f(load.Config{Target: "http://x/v1", Format: "gemini"}, "`format`")
	f(load.Config{Target: "http://x/v1", Body: []byte(`[1]`)}, "`body`")
	f(load.Config{Target: "http://x/v1", Body: []byte(`{"model":`)}, "`body`")
	f(load.Config{Target: "http://x/v1", Timeout: 2 * time.Minute}, "`timeout`")
	f(load.Config{Target: "http://x/v1", Headers: []load.Header{{Name: "a b", Value: "c"}}}, "`headers` #0")
}
