package main

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"gw/perf/mock"
)

const passthroughSignedFile = `_format_version: "1"
provider_keys:
  - {display_name: br, adapter: bedrock, api_key: "${PTS_BEDROCK_CREDS}", api_base: "${PTS_MOCK}"}
  - {display_name: vx, adapter: vertex, api_key: "${PTS_VERTEX_SA}", api_base: "${PTS_MOCK}"}
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_routes: ["aws", "gcp"]}
passthrough_routes:
  - {name: aws, path: /aws, provider_key: br}
  - {name: gcp, path: /gcp, provider_key: vx}
`

// TestPassthroughSignedE2E: inject mode for the signed families through
// the real binary. The mock recomputes the SigV4 signature of the relayed
// Bedrock request (over its path, host and body as received) and checks
// the Vertex access token it issued; the caller's key and its x-amz-*
// headers never reach it.
func TestPassthroughSignedE2E(t *testing.T) {
	m := startMock(t, "PTS_MOCK", mock.Config{RecordLimit: 64})
	t.Setenv("PTS_BEDROCK_CREDS", `{"access_key_id":"`+mock.BedrockAccessKeyID+`","secret_access_key":"`+mock.BedrockSecretAccessKey+`","session_token":"tok/en+1","region":"eu-west-3"}`)
	t.Setenv("PTS_VERTEX_SA", string(mock.VertexServiceAccount(os.Getenv("PTS_MOCK")+"/vertex/token")))
	g := startGW(t, writeTemp(t, "pts.yaml", passthroughSignedFile))
	base := "http://" + g.addr

	post := func(t *testing.T, path string, body io.Reader, hdr map[string]string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, body)
		req.Header.Set("Authorization", "Bearer caller-e2e")
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	// last returns the mock's last request under path and checks that no
	// header carries the caller's key.
	last := func(t *testing.T, sub string) mock.RecordedRequest {
		t.Helper()
		rs := m.Requests()
		for i := len(rs) - 1; i >= 0; i-- {
			if strings.Contains(rs[i].Path, sub) {
				for k, vs := range rs[i].Header {
					for _, v := range vs {
						if strings.Contains(v, "caller-e2e") || strings.Contains(v, "evil") {
							t.Fatalf("the upstream saw the caller's %s: %q", k, v)
						}
					}
				}
				return rs[i]
			}
		}
		t.Fatalf("no request under %s recorded", sub)
		return mock.RecordedRequest{}
	}
	const converse = `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`

	t.Run("bedrock", func(t *testing.T) {
		for name, body := range map[string]func() io.Reader{
			"sized": func() io.Reader { return strings.NewReader(converse) },
			"chunked": func() io.Reader {
				return io.MultiReader(strings.NewReader(converse[:10]), strings.NewReader(converse[10:]))
			},
		} {
			resp, b := post(t, "/aws/model/amazon.nova-micro-v1:0/converse?x=1", body(), map[string]string{"X-Amz-Date": "evil", "X-Amz-Security-Token": "evil"})
			if resp.StatusCode != 200 || !strings.Contains(b, `"output"`) {
				t.Fatalf("%s: status %d: %s", name, resp.StatusCode, b)
			}
			r := last(t, "/converse")
			if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="+mock.BedrockAccessKeyID+"/") ||
				!strings.Contains(r.Header.Get("Authorization"), "/eu-west-3/bedrock/aws4_request") ||
				r.Header.Get("X-Amz-Security-Token") != "tok/en+1" || r.Body != converse || r.Query != "x=1" {
				t.Fatalf("%s: upstream request %+v", name, r)
			}
		}
	})
	t.Run("vertex", func(t *testing.T) {
		const path = "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent"
		for i := 0; i < 2; i++ { // the second call reuses the cached token
			resp, b := post(t, "/gcp"+path, strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`), nil)
			if resp.StatusCode != 200 || !strings.Contains(b, `"candidates"`) {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if r := last(t, ":generateContent"); !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") || r.Path != path {
				t.Fatalf("upstream request %+v", r)
			}
		}
		n := 0
		for _, r := range m.Requests() {
			if r.Path == "/vertex/token" {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d token requests; want 1 (the token is cached)", n)
		}
	})
}
