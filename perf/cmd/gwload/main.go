// Command gwload drives an LLM endpoint (gw, or gw mock) with OpenAI chat completion,
// Anthropic Messages or OpenAI Responses requests and prints latency percentiles as a
// markdown table; see package gw/perf/load.
//
//	gwload --target http://127.0.0.1:8080/v1 --rate 2000 --duration 10s     # open loop
//	gwload --target http://127.0.0.1:8090/v1 --connections 64 --duration 10s # closed loop
//	gwload --target http://127.0.0.1:8090/v1 --stream --concurrency 1000 \
//	       --header 'x-mock-chunks: 200' --header 'x-mock-chunk-delay: 5ms' --json out.json
//	gwload --target http://127.0.0.1:8080/v1 --format messages --stream      # POST /v1/messages
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"

	"gw/perf/load"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole program; it returns the exit code: 0 after a run (whatever its error
// count), 1 when the result cannot be written, 2 for bad flags.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "gwload:", err)
		return 2
	}

	// The first SIGINT ends the run early with partial figures; stop restores the
	// default handling, so a second one kills the process.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()

	if opts.cpuProfile != "" {
		stopProfile, err := startCPUProfile(opts.cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "gwload:", err)
			return 1
		}
		defer stopProfile()
	}

	fmt.Fprintf(stderr, "gwload: %s\n", describe(&cfg))
	res, err := load.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "gwload:", err)
		return 2
	}
	fmt.Fprint(stdout, res.Markdown())
	if opts.jsonPath != "" {
		if err := writeJSON(opts.jsonPath, res); err != nil {
			fmt.Fprintln(stderr, "gwload:", err)
			return 1
		}
	}
	return 0
}

func describe(cfg *load.Config) string {
	var b strings.Builder
	if cfg.Rate > 0 {
		fmt.Fprintf(&b, "open loop at %g req/s", cfg.Rate)
	} else {
		conns := cfg.Connections
		if conns == 0 {
			conns = load.DefaultClosedConnections
		}
		fmt.Fprintf(&b, "closed loop on %d connections", conns)
	}
	if cfg.Format != "" && cfg.Format != load.FormatChat {
		b.WriteString(", " + string(cfg.Format))
	}
	if cfg.Stream {
		b.WriteString(", streaming")
	}
	d := cfg.Duration
	if d == 0 {
		d = load.DefaultDuration
	}
	fmt.Fprintf(&b, " for %s", d)
	if cfg.Warmup > 0 {
		fmt.Fprintf(&b, " after %s of warmup", cfg.Warmup)
	}
	fmt.Fprintf(&b, " → %s", cfg.Target)
	return b.String()
}

func writeJSON(path string, res *load.Result) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode the result: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("cannot write `--json` %q: %w", path, err)
	}
	return nil
}

// options are the flags that are not part of load.Config.
type options struct {
	jsonPath   string
	cpuProfile string
}

func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cannot create `--cpuprofile` %q: %w", path, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cannot start the CPU profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// parseFlags turns command-line args into a load.Config and the other options. Usage and
// flag errors go to out.
func parseFlags(args []string, out io.Writer) (cfg load.Config, opts options, err error) {
	fs := flag.NewFlagSet("gwload", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&cfg.Target, "target", "http://127.0.0.1:8080/v1",
		"base `URL`; requests go to <URL>/chat/completions, /messages or /responses by --format (a URL ending in it is used as is)")
	format := fs.String("format", string(load.FormatChat),
		"wire `format`: chat (OpenAI chat completions), messages (Anthropic Messages) or responses (OpenAI Responses)")
	fs.StringVar(&cfg.APIKey, "api-key", os.Getenv("GWLOAD_API_KEY"),
		"API `key`, sent as Authorization: Bearer <key> (messages: x-api-key: <key>); defaults to $GWLOAD_API_KEY")
	fs.StringVar(&cfg.Model, "model", "", "model of every request; empty keeps the body's (built-in bodies: "+load.DefaultModel+
		", messages "+load.DefaultMessagesModel+")")
	bodyFile := fs.String("body-file", "", "`file` holding the JSON request body; empty uses the format's built-in ~1 KB request")
	fs.Func("header", "extra request `header` 'name: value'; repeatable, e.g. --header 'x-mock-chunks: 200'", func(v string) error {
		name, value, ok := strings.Cut(v, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return fmt.Errorf("want `name: value`, got %q", v)
		}
		cfg.Headers = append(cfg.Headers, load.Header{Name: name, Value: strings.TrimSpace(value)})
		return nil
	})
	fs.Float64Var(&cfg.Rate, "rate", 0, "open loop: requests per second on a fixed timetable; 0 runs closed loop. See also --connections")
	fs.IntVar(&cfg.Connections, "connections", 0, fmt.Sprintf(
		"closed loop: concurrent workers sending back to back (default %d); open loop: cap on requests in flight (default %d)",
		load.DefaultClosedConnections, load.DefaultOpenConnections))
	fs.IntVar(&cfg.Connections, "concurrency", 0, "the same as --connections: streams (or requests) in flight")
	fs.DurationVar(&cfg.Duration, "duration", load.DefaultDuration, "measured run time")
	fs.DurationVar(&cfg.Warmup, "warmup", 0, "unmeasured load before --duration")
	fs.DurationVar(&cfg.Timeout, "timeout", load.DefaultTimeout, "limit of one request, stream included; at most 60s")
	fs.BoolVar(&cfg.Stream, "stream", false, `send "stream":true and time the SSE events (TTFB, TTFT, chunk gaps)`)
	fs.DurationVar(&cfg.LateThreshold, "late-threshold", load.DefaultLateThreshold,
		"open loop: a request sent this long after its due time counts as a late send")
	fs.BoolVar(&cfg.Insecure, "insecure", false, "skip TLS certificate verification")
	fs.StringVar(&opts.jsonPath, "json", "", "also write the result as JSON to this `file`")
	fs.StringVar(&opts.cpuProfile, "cpuprofile", "", "write the generator's CPU profile to this `file` (go tool pprof)")
	fs.Usage = func() {
		fmt.Fprint(out, "Usage: gwload [flags]\n\n"+
			"Load generator for OpenAI chat completions, Anthropic Messages and OpenAI Responses endpoints.\n"+
			"Open loop with --rate (latency counted from each request's due time, so stalls are not hidden),\n"+
			"closed loop otherwise. Prints a markdown table.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, opts, err
	}
	if fs.NArg() > 0 {
		return cfg, opts, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	cfg.Format = load.Format(*format)
	if !slices.Contains(load.Formats, cfg.Format) {
		return cfg, opts, fmt.Errorf("`--format` must be chat, messages or responses, got %q", *format)
	}
	if *bodyFile != "" {
		body, err := os.ReadFile(*bodyFile)
		if err != nil {
			return cfg, opts, fmt.Errorf("cannot read `--body-file`: %w", err)
		}
		cfg.Body = body
	}
	if cfg.Duration <= 0 {
		return cfg, opts, fmt.Errorf("`--duration` must be > 0, got %s", cfg.Duration)
	}
	if cfg.Timeout <= 0 || cfg.Timeout > load.MaxLatency {
		return cfg, opts, fmt.Errorf("`--timeout` must be in (0, %s], got %s", load.MaxLatency, cfg.Timeout)
	}
	return cfg, opts, nil
}
