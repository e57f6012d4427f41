package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestStatusAddr(t *testing.T) {
	startupFile := filepath.Join(t.TempDir(), "startup.yaml")
	if err := os.WriteFile(startupFile, []byte("listen: 0.0.0.0:7000\nstatus:\n  listen: :7001\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"defaults", nil, "127.0.0.1:8080"},
		{"listen env", map[string]string{"GW_LISTEN": "0.0.0.0:8080"}, "0.0.0.0:8080"},
		{"status listener wins", map[string]string{"GW_LISTEN": ":8080", "GW_STATUS_LISTEN": ":9090"}, ":9090"},
		{"startup file", map[string]string{"GW_CONFIG": startupFile}, ":7001"},
		{"env over file", map[string]string{"GW_CONFIG": startupFile, "GW_STATUS_LISTEN": "10.0.0.1:1"}, "10.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := statusAddr(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if err != nil || got != tc.want {
				t.Fatalf("statusAddr = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := statusAddr(func(k string) (string, bool) {
		return map[string]string{"GW_CONFIG": filepath.Join(t.TempDir(), "missing.yaml")}[k], k == "GW_CONFIG"
	}); err == nil {
		t.Fatal("a missing GW_CONFIG file must be an error")
	}
}

func TestDialable(t *testing.T) {
	for in, want := range map[string]string{
		":8080":          "127.0.0.1:8080",
		"0.0.0.0:8080":   "127.0.0.1:8080",
		"[::]:8080":      "[::1]:8080",
		"10.1.2.3:8080":  "10.1.2.3:8080",
		"localhost:9090": "localhost:9090",
	} {
		if got := dialable(in); got != want {
			t.Errorf("dialable(%q) = %q; want %q", in, got, want)
		}
	}
}

// TestHealthcheckCLI runs the real binary's healthcheck against a real gw
// (its listener found from GW_LISTEN with a wildcard host, or given by
// --addr), against an address nobody serves, and with a stray argument.
func TestHealthcheckCLI(t *testing.T) {
	g := startGW(t, writeTemp(t, "gw.yaml", validFile))
	port := g.addr[strings.LastIndexByte(g.addr, ':'):]
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		code int
		out  string
	}{
		{"livez by env", []string{"healthcheck"}, []string{"GW_LISTEN=0.0.0.0" + port}, 0, "/livez: ok"},
		{"readyz by flag", []string{"healthcheck", "--ready", "--addr", g.addr}, nil, 0, "/readyz: ok"},
		{"nobody listening", []string{"healthcheck", "--addr", freeAddr(t), "--timeout", "1s"}, nil, 1, "cannot reach"},
		{"bad startup env", []string{"healthcheck"}, []string{"GW_IDLE_TIMEOUT=soon"}, 1, "GW_IDLE_TIMEOUT"},
		{"stray argument", []string{"healthcheck", "now"}, nil, 2, "unexpected argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := gwCmd(tc.args...)
			cmd.Env = append(cmd.Env, tc.env...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(out.String(), tc.out) {
				t.Fatalf("exit %d (want %d), output %q (want %q)", code, tc.code, out.String(), tc.out)
			}
		})
	}
}

// TestHealthcheckNotOK: any answer but 200 (a gw without an active snapshot
// answers /readyz with 503) fails the check, and the body is reported.
func TestHealthcheckNotOK(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		http.Error(w, "no active snapshot", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	var out, errb bytes.Buffer
	if code := run([]string{"healthcheck", "--ready", "--addr", addr}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "answered 503: no active snapshot") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}
