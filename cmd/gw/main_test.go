package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gw/perf/mock"
)

// gwBin is the real binary, built once for the end-to-end tests.
var gwBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gw-bin")
	if err != nil {
		panic(err)
	}
	gwBin = filepath.Join(dir, "gw")
	// GW_E2E_NORACE=1 builds gw as shipped: race builds read and write
	// sockets through the net package (edge/rawsock), production builds
	// with raw system calls, so make test runs part of these tests both ways.
	args := []string{"build", "-race", "-o", gwBin, "."}
	if os.Getenv("GW_E2E_NORACE") == "1" {
		args = []string{"build", "-o", gwBin, "."}
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		// -race needs cgo; fall back to a plain build.
		if out2, err2 := exec.Command("go", "build", "-o", gwBin, ".").CombinedOutput(); err2 != nil {
			fmt.Fprintf(os.Stderr, "cannot build gw: %v\n%s\n%s", err2, out, out2)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const validFile = `_format_version: "1"
provider_keys:
  - display_name: oa
    api_key: ${E2E_OPENAI_KEY}
api_keys:
  - display_name: dev
    key_env: E2E_CALLER_KEY
    allowed_models: ["*"]
models:
  - display_name: gpt
    provider: openai
    model_name: gpt-4o
    provider_key: oa
`

func writeTemp(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func gwCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(gwBin, args...)
	cmd.Env = append(os.Environ(), "E2E_OPENAI_KEY=sk-e2e", "E2E_CALLER_KEY=caller-e2e")
	return cmd
}

func TestValidateCLI(t *testing.T) {
	p := writeTemp(t, "ok.yaml", validFile)
	var stdout, stderr bytes.Buffer
	cmd := gwCmd("validate", p)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("validate failed: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "models=1") || !strings.Contains(lines[0], "api_keys=1") || !strings.Contains(lines[0], "rate_limit_policies=0") {
		t.Fatalf("summary: %q", stdout.String())
	}

	// --ids prints derived IDs.
	out, err := gwCmd("validate", "--ids", p).Output()
	if err != nil || !strings.Contains(string(out), "provider_keys\toa\t954fec90-160f-52e3-af94-a692cff3a169") {
		t.Fatalf("--ids: %v\n%s", err, out)
	}

	bad := writeTemp(t, "bad.yaml", validFile+"  - display_name: g2\n    routing: {targets: [{model: gpt-x}]}\n  - display_name: g3\n    colour: red\n")
	stdout.Reset()
	stderr.Reset()
	cmd = gwCmd("validate", bad)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("want exit 1, got %v", err)
	}
	report := stderr.String()
	for _, want := range []string{
		"models[2] (display_name=g3): colour: unknown field",
		bad + ":", // every line is file:line:column: ...
	} {
		if !strings.Contains(report, want) {
			t.Fatalf("report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "sk-e2e") || strings.Contains(report, "caller-e2e") {
		t.Fatal("report leaks a secret")
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestServeInvalidFileBindsNothing(t *testing.T) {
	bad := writeTemp(t, "bad.yaml", "_format_version: 1\n")
	addr := freeAddr(t)
	var stderr bytes.Buffer
	cmd := gwCmd("serve", "--resources-file", bad, "--listen", addr, "--debug-listen", "")
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Fatalf("want non-zero exit, got %v", err)
	}
	if !strings.Contains(stderr.String(), `_format_version: must be the string "1"`) {
		t.Fatalf("report: %s", stderr.String())
	}
	// The address is still free: nothing bound.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("address was bound: %v", err)
	}
	ln.Close()
}

type proc struct {
	cmd    *exec.Cmd
	addr   string
	stderr *lockedBuffer
}

// lockedBuffer is a bytes.Buffer safe for the process's writes and the test's reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startGW(t *testing.T, resources string, extra ...string) *proc {
	t.Helper()
	return startRetrying(t, func() (*proc, func() bool) {
		addr := freeAddr(t)
		args := append([]string{"serve", "--resources-file", resources, "--listen", addr, "--debug-listen", ""}, extra...)
		return startProc(t, gwCmd(args...), addr), readyz(addr)
	})
}

// readyz reports whether gw on addr answers /readyz with 200.
func readyz(addr string) func() bool {
	return func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
}

// startRetrying starts gw through start until ready says it is up, and
// stops it with the test. A free port is free when picked, not when gw
// binds it: another process (an etcd member's, a client's ephemeral
// port) may take it in between. A start that lost its port that way is
// stopped and tried again on fresh ports; any other failure ends the
// test with gw's log.
func startRetrying(t *testing.T, start func() (p *proc, ready func() bool)) *proc {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p, ready := start()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) && !p.bindLost() {
			if ready() {
				t.Cleanup(p.stop)
				return p
			}
			time.Sleep(20 * time.Millisecond)
		}
		p.stop()
		if !p.bindLost() || attempt == 3 {
			t.Fatalf("gw did not become ready:\n%s", p.stderr.String())
		}
	}
}

// startProc starts cmd with its stderr kept.
func startProc(t *testing.T, cmd *exec.Cmd, addr string) *proc {
	t.Helper()
	buf := &lockedBuffer{}
	cmd.Stderr = buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &proc{cmd: cmd, addr: addr, stderr: buf}
}

// bindLost reports a start that lost the free-port race.
func (p *proc) bindLost() bool { return strings.Contains(p.stderr.String(), "address already in use") }

// stop ends gw (SIGTERM, then SIGKILL after 10 s) unless it has ended.
func (p *proc) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	stopCmd(p.cmd)
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v\n%s", url, err, b)
		}
	}
	return resp.StatusCode
}

type configStatus struct {
	State     string `json:"state"`
	ApplySeq  uint64 `json:"apply_seq"`
	AppliedAt string `json:"applied_at"`
	Rejected  []struct {
		Error string `json:"error"`
	} `json:"rejected"`
	UnknownKinds []struct {
		Kind string `json:"kind"`
	} `json:"unknown_kinds"`
}

func waitStatus(t *testing.T, addr string, ok func(configStatus) bool) configStatus {
	t.Helper()
	var st configStatus
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		st = configStatus{}
		getJSON(t, "http://"+addr+"/status/config", &st)
		if ok(st) {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("status never matched; last %+v", st)
	return st
}

func TestServeReloadAndStatus(t *testing.T) {
	p := writeTemp(t, "gw.yaml", validFile)
	g := startGW(t, p)
	base := "http://" + g.addr

	if code := getJSON(t, base+"/livez", nil); code != 200 {
		t.Fatalf("livez %d", code)
	}
	st := waitStatus(t, g.addr, func(s configStatus) bool { return s.State == "synced" })
	if st.ApplySeq != 1 || st.AppliedAt == "" || len(st.Rejected) != 0 {
		t.Fatalf("initial status %+v", st)
	}

	// Invalid file on SIGHUP: old snapshot keeps serving, state degraded, report exposed.
	if err := os.WriteFile(p, []byte(validFile+"  - display_name: broken\n    provider: openai\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g.cmd.Process.Signal(syscall.SIGHUP)
	st = waitStatus(t, g.addr, func(s configStatus) bool { return s.State == "degraded" })
	if st.ApplySeq != 1 || len(st.Rejected) == 0 || !strings.Contains(st.Rejected[0].Error, "models[1] (display_name=broken)") {
		t.Fatalf("degraded status %+v", st)
	}
	if code := getJSON(t, base+"/readyz", nil); code != 200 {
		t.Fatalf("readyz while degraded: %d (old snapshot must keep serving)", code)
	}

	// Valid again: synced, apply_seq advances.
	if err := os.WriteFile(p, []byte(validFile), 0o600); err != nil {
		t.Fatal(err)
	}
	g.cmd.Process.Signal(syscall.SIGHUP)
	st = waitStatus(t, g.addr, func(s configStatus) bool { return s.ApplySeq == 2 })
	if st.State != "synced" || len(st.Rejected) != 0 {
		t.Fatalf("resynced status %+v", st)
	}

	// Only entries of an unknown guardrail kind: synced, listed, counted.
	if err := os.WriteFile(p, []byte(validFile+"guardrails:\n  - {name: future, kind: quantum_filter, knob: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g.cmd.Process.Signal(syscall.SIGHUP)
	st = waitStatus(t, g.addr, func(s configStatus) bool { return s.ApplySeq == 3 })
	if st.State != "synced" || len(st.UnknownKinds) != 1 || st.UnknownKinds[0].Kind != "quantum_filter" {
		t.Fatalf("unknown-kind status %+v", st)
	}

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`gw_config_apply_duration_seconds_bucket{trigger="full",le="`, `gw_config_apply_duration_seconds_count{trigger="full"} 3`,
		`gw_config_apply_batch_events_count{trigger="full"} 3`, `gw_request_e2e_latency_seconds_bucket{side="downstream",le="`, "process_resident_memory_bytes", `gw_config_unknown_kind_resources{kind="quantum_filter"} 1`} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("metrics lack %q", want)
		}
	}
}

func TestServeGracefulShutdown(t *testing.T) {
	p := writeTemp(t, "gw.yaml", validFile)
	g := startGW(t, p)
	g.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- g.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, g.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("gw did not stop on SIGTERM")
	}
}

// exampleEnv is what `make run` exports for examples/gw.yaml.
var exampleEnv = []string{"OPENAI_API_KEY=sk-mock-openai", "ANTHROPIC_API_KEY=sk-mock-anthropic", "DEMO_CALLER_KEY=sk-gw-demo",
	"DEMO_TEAM_KEY=sk-gw-team", "DEMO_OIDC_HMAC=demo-hmac-secret-at-least-32-bytes-long", "MOCK_BASE=http://127.0.0.1:9999",
	`BEDROCK_CREDENTIALS={"access_key_id":"AKIAMOCKBEDROCK00001","secret_access_key":"mock/bedrock+secret/key/0000000000000000","region":"us-east-1"}`}

func TestExampleFileValidates(t *testing.T) {
	cmd := exec.Command(gwBin, "validate", "../../examples/gw.yaml")
	cmd.Env = append(os.Environ(), exampleEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("examples/gw.yaml does not validate: %v\n%s", err, out)
	}
	// The loader has nothing to warn about; the unenforced list (checked
	// item by item in admin/snapshot) is printed as warnings too.
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "warning") && !strings.Contains(l, "not enforced in this build") {
			t.Fatalf("examples/gw.yaml has a loader warning: %s", l)
		}
	}
	for _, c := range []string{"provider_keys=", "models=", "api_keys=", "oidc_providers=", "mcp_auth_settings=1", "claim_mappings=", "guardrails=", "guardrail_attachments=", "mcp_servers=", "a2a_agents=", "passthrough_routes=", "cache_policies=", "observability_exporters=", "rate_limit_policies="} {
		if !strings.Contains(string(out), c) || strings.Contains(string(out), c+"0") {
			t.Fatalf("example does not exercise %s: %s", strings.TrimSuffix(c, "="), out)
		}
	}
}

// startMock serves an in-process mock upstream on a loopback port, stops it
// with the test, and exports its base URL in the environment variable env
// (for the resource file's ${...}).
func startMock(t *testing.T, env string, cfg mock.Config) *mock.Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := mock.New(cfg)
	go m.Serve(ln)
	t.Cleanup(func() { m.Shutdown() })
	t.Setenv(env, "http://"+ln.Addr().String())
	return m
}

// TestValidateJSON: gw validate --format json writes one report on stdout
// with each error's position and the nearest valid name of a misspelt
// field; the exit status is the text format's.
func TestValidateJSON(t *testing.T) {
	bad := writeTemp(t, "bad.yaml", validFile+"  - display_name: g2\n    provider: openai\n    model_nmae: gpt-4o\n    provider_key: oa\n")
	out, err := gwCmd("validate", "--format", "json", bad).Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("want exit 1, got %v", err)
	}
	var rep struct {
		Valid  bool
		Errors []struct {
			Message, Collection, Path string
			Line, Column              int
		}
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := strings.Count(validFile, "\n") + 3 // the line of model_nmae
	if rep.Valid || len(rep.Errors) == 0 {
		t.Fatalf("report: %s", out)
	}
	found := false
	for _, e := range rep.Errors {
		if e.Path == "model_nmae" && e.Line == want && e.Column == 5 && strings.Contains(e.Message, "did you mean `model_name`?") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no error at line %d col 5 for model_nmae with a suggestion: %s", want, out)
	}
	ok := writeTemp(t, "ok.yaml", validFile)
	out, err = gwCmd("validate", "--format", "json", ok).Output()
	if err != nil || !json.Valid(out) || !strings.Contains(string(out), `"valid": true`) {
		t.Fatalf("valid file: %v\n%s", err, out)
	}
}
