package main

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"gw/perf/mock"
)

const healthFile = `_format_version: "1"
provider_keys:
  - {display_name: good, api_key: "${E2E_OPENAI_KEY}", api_base: "${E2E_MOCK}/v1"}
  - {display_name: flaky, api_key: "${E2E_OPENAI_KEY}", api_base: "${E2E_MOCK}/knobs/status=503/v1"}
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
models:
  - {display_name: backup, provider: openai, model_name: gpt-4o-mini, provider_key: good}
  - display_name: checked
    provider: openai
    model_name: gpt-4o
    provider_key: flaky
    background_model_check: {enabled: true, interval_seconds: 5, timeout_seconds: 2, prompt: ping, max_tokens: 1, stale_after_seconds: 60}
  - display_name: grp
    routing: {targets: [{model: checked, priority: 1}, {model: backup}]}
`

type modelsStatus struct {
	Models []struct {
		Model     string `json:"model"`
		Healthy   bool   `json:"healthy"`
		Checked   bool   `json:"checked"`
		LastError string `json:"last_error"`
	} `json:"models"`
}

func modelHealth(t *testing.T, addr, model string) (healthy, checked bool) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/status/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st modelsStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	for _, m := range st.Models {
		if m.Model == model {
			return m.Healthy, m.Checked
		}
	}
	t.Fatalf("model %s not in /status/models", model)
	return false, false
}

func TestBackgroundModelCheck(t *testing.T) {
	m := startMock(t, "E2E_MOCK", mock.Config{})
	p := writeTemp(t, "health.yaml", healthFile)
	g := startGW(t, p)

	// The first probe runs at once and fails (503): the model is excluded.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if h, checked := modelHealth(t, g.addr, "checked"); checked && !h {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if h, checked := modelHealth(t, g.addr, "checked"); !checked || h {
		t.Fatalf("checked model: healthy %v checked %v; want an unhealthy result", h, checked)
	}
	before := m.Stats().Requests
	st, _, body := chatStatus(t, g.addr, "caller-e2e", "grp")
	if st != 200 || !strings.Contains(body, `"model":"grp"`) {
		t.Fatalf("group: %d %s", st, body)
	}
	if n := m.Stats().Requests - before; n != 1 {
		t.Fatalf("the unhealthy target was tried (%d upstream requests; want 1, the backup's)", n)
	}
	// Recovery: the upstream is fixed and the config reloaded; the probe
	// state (keyed by the model's derived ID) turns healthy.
	if err := os.WriteFile(p, []byte(strings.Replace(healthFile, "/knobs/status=503/v1", "/v1", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	g.cmd.Process.Signal(syscall.SIGHUP)
	deadline = time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if h, _ := modelHealth(t, g.addr, "checked"); h {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("model did not recover after a passing probe")
}
