package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"gw/perf/mock"
)

const statusUIFile = `_format_version: "1"
provider_keys:
  - {display_name: good, api_key: "${E2E_OPENAI_KEY}", api_base: "${E2E_MOCK}/v1"}
  - {display_name: flaky, api_key: "${E2E_OPENAI_KEY}", api_base: "${E2E_MOCK}/knobs/status=503/v1"}
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
models:
  - {display_name: backup, provider: openai, model_name: gpt-4o-mini, provider_key: good}
  - {display_name: failing, provider: openai, model_name: gpt-4o, provider_key: flaky}
  - display_name: grp
    routing: {targets: [{model: failing, priority: 1}, {model: backup}]}
`

// chromium finds the browser the status page test drives (make deps
// installs Debian's chromium); "" skips.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestStatusPageInBrowser loads /ui in headless Chromium: the page shows
// the configured models, then reflects traffic sent while it is open (a
// routing group whose first target fails: its errors per target and the
// recent-errors list) and a SIGHUP reload that adds a model, each within
// seconds, through the page's own event stream.
func TestStatusPageInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("chromium not found in PATH; install it (apt-get install -y chromium) to run the status page test")
	}
	startMock(t, "E2E_MOCK", mock.Config{})
	file := writeTemp(t, "statusui.yaml", statusUIFile)
	g := startGW(t, file)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 1400))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()

	// until waits for a JavaScript condition on the live page.
	until := func(what, js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(10*time.Second), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("%s: %v\npage text:\n%s", what, err, body)
		}
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate("http://"+g.addr+"/ui")); err != nil {
		t.Fatal(err)
	}
	until("the configured models", `!!document.querySelector('#models tr[data-model="backup"]') && !!document.querySelector('#models tr[data-model="failing"]')`)
	until("the routing group", `!!document.querySelector('[data-group="grp"] tr[data-target="failing"]')`)
	until("config state", `document.getElementById('config-state').textContent === 'config: synced'`)
	seq, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.applySeq`))
	if err != nil || seq == "" {
		t.Fatalf("apply_seq on the page: %q %v", seq, err)
	}

	// Traffic while the page is open: grp fails over from its first target
	// to backup (200), and direct calls to the failing model answer 503.
	for i := 0; i < 4; i++ {
		if st, _, body := chatStatus(t, g.addr, "caller-e2e", "grp"); st != 200 {
			t.Fatalf("grp: %d %s", st, body)
		}
	}
	for i := 0; i < 2; i++ {
		if st, _, _ := chatStatus(t, g.addr, "caller-e2e", "failing"); st != 503 && st != 502 {
			t.Fatalf("failing: status %d", st)
		}
	}
	until("the failing target's errors", `(() => { const r = document.querySelector('[data-group="grp"] tr[data-target="failing"]'); return !!r && r.lastElementChild.textContent !== '0'; })()`)
	until("backup's requests", `(() => { const r = document.querySelector('[data-group="grp"] tr[data-target="backup"]'); return !!r && /\b4$/.test(r.children[6].textContent); })()`)
	until("the recent errors", `[...document.querySelectorAll('#errors tbody tr')].filter(r => r.textContent.includes('failing')).length >= 2`)
	until("requests since start", `document.getElementById('totals').textContent.startsWith('6 ')`)

	// A reload that adds a model shows within seconds, with a new apply_seq.
	if err := os.WriteFile(file, []byte(strings.Replace(statusUIFile, "  - display_name: grp\n",
		"  - {display_name: added, provider: openai, model_name: gpt-4o, provider_key: good}\n  - display_name: grp\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	until("the reloaded model", `!!document.querySelector('#models tr[data-model="added"]') && document.body.dataset.applySeq !== '`+seq+`'`)

	if out := os.Getenv("GW_UI_SCREENSHOT"); out != "" { // docs/img/status-page.png (quality 100: PNG)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
