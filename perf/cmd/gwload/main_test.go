package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gw/perf/load"
	"gw/perf/mock"
)

func TestParseFlags(t *testing.T) {
	body := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(body, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cfg, opts, err := parseFlags([]string{"--target", "http://h:1/v1", "--rate", "2000", "--concurrency", "300",
		"--header", "x-mock-chunks: 200", "--header", "X-A:b:c", "--stream", "--body-file", body,
		"--warmup", "2s", "--json", "out.json"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := []load.Header{{Name: "x-mock-chunks", Value: "200"}, {Name: "X-A", Value: "b:c"}}
	if cfg.Target != "http://h:1/v1" || cfg.Rate != 2000 || cfg.Connections != 300 || !cfg.Stream ||
		cfg.Warmup.String() != "2s" || opts.jsonPath != "out.json" || !strings.Contains(string(cfg.Body), `"m"`) ||
		len(cfg.Headers) != 2 || cfg.Headers[0] != want[0] || cfg.Headers[1] != want[1] {
		t.Fatalf("got %+v, %+v", cfg, opts)
	}

	f := func(args []string, want string) {
		t.Helper()
		out.Reset()
		_, _, err := parseFlags(args, &out)
		if err == nil || !strings.Contains(err.Error()+out.String(), want) {
			t.Fatalf("parseFlags(%q) = %v (%s); want an error containing %q", args, err, out.String(), want)
		}
	}
	f([]string{"--header", "novalue"}, "want `name: value`")
	f([]string{"--duration", "0s"}, "`--duration`")
	f([]string{"--timeout", "2m"}, "`--timeout`")
	f([]string{"--body-file", "/nonexistent"}, "cannot read `--body-file`")
	f([]string{"extra"}, `unexpected argument "extra"`)
}

func TestRun(t *testing.T) {
	m := mock.New(mock.Config{RecordLimit: -1})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = m.Serve(ln) }()
	defer func() { _ = m.Shutdown() }()

	jsonPath := filepath.Join(t.TempDir(), "out.json")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--target", "http://" + ln.Addr().String() + "/v1",
		"--connections", "2", "--duration", "200ms", "--stream", "--header", "x-mock-chunks: 3", "--json", jsonPath},
		&stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d; stderr: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "### gwload: closed-loop, streaming, 2 connections") {
		t.Fatalf("stdout:\n%s", stdout.String())
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var res load.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res.Successes == 0 || res.Streams == nil || res.Streams.ChunksPerStream.Max != 3 {
		t.Fatalf("result: %s", data)
	}

	// The Anthropic Messages format, to the mock's /v1/messages.
	stdout.Reset()
	code = run(context.Background(), []string{"--target", "http://" + ln.Addr().String() + "/v1", "--format", "messages",
		"--connections", "2", "--duration", "200ms", "--stream", "--header", "x-mock-chunks: 3", "--json", jsonPath},
		&stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "### gwload: closed-loop, streaming messages, 2 connections") ||
		!strings.Contains(stdout.String(), "with message_stop") {
		t.Fatalf("messages: exit code %d; stdout:\n%s\nstderr: %s", code, stdout.String(), stderr.String())
	}
	if data, err = os.ReadFile(jsonPath); err != nil {
		t.Fatal(err)
	}
	res = load.Result{}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res.Config.Format != load.FormatMessages || res.Errors != 0 || res.Streams == nil || res.Streams.ChunksPerStream.Max != 3 ||
		res.Streams.Completed != res.Streams.Streams {
		t.Fatalf("messages result: %s", data)
	}

	if code := run(context.Background(), []string{"-h"}, &stdout, &stderr); code != 0 {
		t.Fatalf("-h: exit code %d", code)
	}
	if code := run(context.Background(), []string{"--rate", "x"}, &stdout, &stderr); code != 2 {
		t.Fatalf("bad flag: exit code %d; want 2", code)
	}
}

func TestParseFlagsFormat(t *testing.T) {
	f := func(args []string, want load.Format, wantErr string) {
		t.Helper()
		cfg, _, err := parseFlags(args, io.Discard)
		if wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), wantErr) {
				t.Fatalf("parseFlags(%q): got %v; want an error containing %q", args, err, wantErr)
			}
			return
		}
		if err != nil || cfg.Format != want {
			t.Fatalf("parseFlags(%q): format %q, err %v; want %q", args, cfg.Format, err, want)
		}
	}
	f(nil, load.FormatChat, "")
	f([]string{"--format", "messages", "--stream"}, load.FormatMessages, "")
	f([]string{"--format=responses"}, load.FormatResponses, "")
	f([]string{"--format", "anthropic"}, "", "`--format`")
}

func TestDescribe(t *testing.T) {
	got := describe(&load.Config{Target: "http://gw/v1", Format: load.FormatMessages, Stream: true, Connections: 200})
	if want := "closed loop on 200 connections, messages, streaming for 10s → http://gw/v1"; got != want {
		t.Fatalf("describe = %q; want %q", got, want)
	}
}
