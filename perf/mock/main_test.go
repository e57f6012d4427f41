package mock

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	cfg, addr, verbose, err := parseFlags([]string{
		"-addr", ":9999", "-record=false", "-models", "a, b", "-v",
		"-chunks", "7", "-chunk-size", "16", "-chunk-delay", "5ms", "-first-token-delay", "1s", "-latency", "2ms",
		"-status", "503", "-error-body", "empty", "-retry-after", "9",
		"-fail-after", "3", "-stall-after", "2", "-stall-for", "4s", "-stream-error-after", "6",
		"-empty-stream", "-no-done", "-model-suffix", "-2024-08-06", "-tool-calls", "2",
	}, io.Discard)
	if err != nil {
		t.Fatalf("parseFlags: %s", err)
	}
	want := Knobs{
		Chunks: 7, ChunkSize: 16, ChunkDelay: 5 * time.Millisecond, FirstTokenDelay: time.Second, Latency: 2 * time.Millisecond,
		Status: 503, ErrorBody: "empty", RetryAfter: "9",
		Fail: true, FailAfter: 3, Stall: true, StallAfter: 2, StallFor: 4 * time.Second, StreamError: true, StreamErrorAfter: 6,
		EmptyStream: true, NoDone: true, ModelSuffix: "-2024-08-06", ToolCalls: 2, forceToolCalls: true,
	}
	if cfg.Knobs != want {
		t.Fatalf("got knobs %+v; want %+v", cfg.Knobs, want)
	}
	if addr != ":9999" || !verbose || cfg.RecordLimit != -1 || !slices.Equal(cfg.Models, []string{"a", "b"}) {
		t.Fatalf("got addr %q verbose %v record %d models %q", addr, verbose, cfg.RecordLimit, cfg.Models)
	}
	// Every knob has a flag.
	for _, spec := range knobSpecs {
		if _, _, _, err := parseFlags([]string{"-" + strings.ReplaceAll(spec.name, "_", "-") + "=1s"}, io.Discard); err != nil &&
			strings.Contains(err.Error(), "not defined") {
			t.Fatalf("knob %s has no flag", spec.name)
		}
	}

	// Defaults, and New clears the forced tool calls of a server default.
	cfg, addr, _, err = parseFlags([]string{"-tool-calls", "1", "-fail-after", "-1"}, io.Discard)
	if err != nil || addr != DefaultAddr || cfg.RecordLimit != defaultRecordLimit || cfg.Knobs.Fail {
		t.Fatalf("got %+v %q %v", cfg, addr, err)
	}
	if s := New(cfg); s.defaults.forceToolCalls || s.defaults.Chunks != DefaultChunks || s.defaults.StallFor != DefaultStallFor {
		t.Fatalf("got server defaults %+v", s.defaults)
	}

	f := func(args ...string) {
		t.Helper()
		if _, _, _, err := parseFlags(args, io.Discard); err == nil {
			t.Fatalf("%q: want an error", args)
		}
	}
	f("-chunks", "x")
	f("-stall-for", "-1s")
	f("-record-limit", "0")
	f("extra")
	if _, _, _, err := parseFlags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: got %v; want flag.ErrHelp", err)
	}
}
