package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// unenforcedFile configures things this build cannot act on: an ensemble
// alias whose panel weight is ignored (spec) and that can be served. (A
// passthrough route injecting a Bedrock key was on the list until inject
// mode learnt to sign: it must stay off it.)
const unenforcedFile = `_format_version: "1"
provider_keys:
  - display_name: oa
    api_key: ${E2E_OPENAI_KEY}
    api_base: http://127.0.0.1:9/v1
  - display_name: br
    adapter: bedrock
    api_key: ${UNENF_BEDROCK_CREDS}
    api_base: http://127.0.0.1:9
api_keys:
  - display_name: dev
    key_env: E2E_CALLER_KEY
    allowed_models: ["*"]
models:
  - display_name: gpt
    provider: openai
    model_name: gpt-4o
    provider_key: oa
  - display_name: panel
    ensemble:
      panel: [{model: gpt, weight: 2}, {model: gpt}]
      judge: {model: gpt}
passthrough_routes:
  - name: signed
    path: /bedrock
    provider_key: br
`

// TestUnenforcedIsLoud: what loads but has no effect is warned about at
// startup, listed in /status/config, counted by a gauge and printed by
// gw validate; aliases that cannot be served leave /v1/models.
func TestUnenforcedIsLoud(t *testing.T) {
	t.Setenv("UNENF_BEDROCK_CREDS", `{"access_key_id":"AKIDEXAMPLE","secret_access_key":"not-a-secret","region":"us-east-1"}`)
	path := writeTemp(t, "unenforced.yaml", unenforcedFile)
	g := startGW(t, path, "--admin-listen=127.0.0.1:0", "--gateway-listen=127.0.0.1:0", "--admin-key=e2e-admin-key-not-used", "--data-dir="+t.TempDir())
	logs := g.stderr.String()
	for _, want := range []string{
		`"collection":"models","entry":"display_name=panel","field":"ensemble.panel[].weight"`,
		`"collection":"startup","entry":"","field":"admin.listen"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("startup log lacks %s:\n%s", want, logs)
		}
	}
	var st struct {
		Unenforced []struct{ Collection, Entry, Field, Missing string } `json:"unenforced"`
	}
	getJSON(t, "http://"+g.addr+"/status/config", &st)
	var got []string
	for _, u := range st.Unenforced {
		got = append(got, u.Collection+"|"+u.Entry+"|"+u.Field)
		if u.Missing == "" {
			t.Errorf("%+v: no reason", u)
		}
	}
	want := "startup||admin.listen models|display_name=panel|ensemble.panel[].weight"
	if strings.Join(got, " ") != want {
		t.Fatalf("/status/config unenforced: %v; want %s", got, want)
	}
	resp, err := http.Get("http://" + g.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(logs, `"collection":"passthrough_routes"`) {
		t.Errorf("the signed route is reported unenforced:\n%s", logs)
	}
	for _, series := range []string{`gw_config_unenforced_resources{collection="startup"} 1`, `gw_config_unenforced_resources{collection="models"} 1`} {
		if !bytes.Contains(m, []byte(series)) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
	var models struct{ Data []struct{ ID string } }
	req, _ := http.NewRequest("GET", "http://"+g.addr+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer caller-e2e")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if err != nil || len(models.Data) != 2 || models.Data[0].ID != "gpt" || models.Data[1].ID != "panel" {
		t.Fatalf("/v1/models lists %+v; want gpt and panel", models.Data)
	}

	// gw validate: warnings on stderr, exit 0.
	var stdout, stderr bytes.Buffer
	cmd := gwCmd("validate", path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("validate: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{
		"warning: models (display_name=panel): ensemble.panel[].weight: not enforced in this build",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("validate output lacks %q:\n%s", want, stderr.String())
		}
	}
	if strings.Contains(stderr.String(), "passthrough_routes") {
		t.Errorf("validate reports the signed route:\n%s", stderr.String())
	}
}
