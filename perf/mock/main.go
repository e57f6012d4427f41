package mock

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// DefaultAddr is where Main listens without -addr.
const DefaultAddr = "127.0.0.1:8090"

// Main runs the mock as a program: it parses args (without the program name), listens and
// serves until SIGINT or SIGTERM, then shuts down gracefully. It returns flag.ErrHelp after
// -h. It backs both perf/cmd/gwmock and `gw mock`.
func Main(args []string) error {
	cfg, addr, verbose, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	if verbose {
		cfg.Logf = log.Printf
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %q: %w", addr, err)
	}
	s := New(cfg)
	log.Printf("gw mock: fake LLM provider on http://%s (POST /v1/chat/completions, /v1/responses, /v1/messages, "+
		"/v1/messages/count_tokens; GET /v1/models, /_mock/requests, /_mock/stats, /_mock/otlp; POST /v1/traces)", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Printf("gw mock: shutting down")
	if err := s.Shutdown(); err != nil {
		return fmt.Errorf("cannot shut down: %w", err)
	}
	return <-errc
}

// parseFlags turns command-line args into a Config and a listen address. Every knob is a
// flag named like the knob with dashes (-chunk-size, -fail-after, ...). Usage and errors go
// to out.
func parseFlags(args []string, out io.Writer) (cfg Config, addr string, verbose bool, err error) {
	fs := flag.NewFlagSet("gw mock", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&addr, "addr", DefaultAddr, "TCP address to listen on")
	record := fs.Bool("record", true, "keep the last -record-limit requests for GET /_mock/requests; disable for perf runs")
	recordLimit := fs.Int("record-limit", defaultRecordLimit, "how many requests to keep when -record is on")
	models := fs.String("models", strings.Join(DefaultModels, ","), "comma-separated model ids listed by GET /v1/models")
	fs.BoolVar(&verbose, "v", false, "log connection errors")
	for i := range knobSpecs {
		spec := &knobSpecs[i]
		name := strings.ReplaceAll(spec.name, "_", "-")
		set := func(v string) error { return spec.set(&cfg.Knobs, v) }
		if spec.isBool {
			fs.BoolFunc(name, spec.help, set)
		} else {
			fs.Func(name, spec.help, set)
		}
	}
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: gw mock [flags]\n\nA fake LLM provider (OpenAI Chat Completions and Responses, Anthropic Messages)\n"+
			"for tests and perf runs. Every knob flag sets the default;\n"+
			"requests override it with an x-mock-<knob> header or a /knobs/<knob>=<value>,.../ path segment.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return Config{}, "", false, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return Config{}, "", false, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case !*record:
		cfg.RecordLimit = -1
	case *recordLimit <= 0:
		return Config{}, "", false, errors.New("`-record-limit` must be > 0; use -record=false to disable recording")
	default:
		cfg.RecordLimit = *recordLimit
	}
	for _, m := range strings.Split(*models, ",") {
		if m = strings.TrimSpace(m); m != "" {
			cfg.Models = append(cfg.Models, m)
		}
	}
	return cfg, addr, verbose, nil
}

// Usage writes the mock's flags and their help to w (gw completion reads
// the flag names from it).
func Usage(w io.Writer) {
	_, _, _, _ = parseFlags([]string{"-h"}, w)
}
