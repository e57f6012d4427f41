//go:build !race

package edge

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"gw/admin/snapshot"
)

// geminiFrames is a Gemini stream of n text events and a final one.
func geminiFrames(n int) [][]byte {
	var f [][]byte
	for i := 0; i < n; i++ {
		f = append(f, []byte(`data: {"candidates":[{"content":{"parts":[{"text":"tok`+strconv.Itoa(i)+` "}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":5,"totalTokenCount":5},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`+"\r\n\r\n"))
	}
	return append(f, []byte(`data: {"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":`+strconv.Itoa(n)+`,"totalTokenCount":`+strconv.Itoa(n+5)+`},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`+"\r\n\r\n"))
}

// vertexProxy serves model gpt from a vertex key (Gemini) at base, with a
// token endpoint of its own.
func vertexProxy(tb testing.TB, base string) *Proxy {
	tb.Helper()
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"ya29.test","expires_in":3600,"token_type":"Bearer"}`))
	}))
	tb.Cleanup(tokens.Close)
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		tb.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	doc, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "p", "client_email": "sa@p.iam.gserviceaccount.com",
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), "token_uri": tokens.URL})
	env := map[string]string{"SA": string(doc), "CALLER": "caller-key", "BASE": base}
	src := `_format_version: "1"
provider_keys:
  - {display_name: vx, adapter: vertex, api_key: "${SA}", api_base: "${BASE}"}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"]}
models:
  - {display_name: gpt, provider: google, model_name: gemini-2.5-flash, provider_key: vx, stream_timeout: 30000}
`
	h := &snapshot.Holder{}
	h.Store(compileFile(tb, src, env))
	return &Proxy{Holder: h}
}

// TestGeminiRelayAllocsPerEvent: the relay of a Gemini upstream (the
// protocol table's converter between the SSE reader and the caller) stays
// at 0 allocations per relayed event.
func TestGeminiRelayAllocsPerEvent(t *testing.T) {
	perStream := func(events int) float64 {
		p := vertexProxy(t, startRawUpstream(t, writeBurst, geminiFrames(events)))
		var w countingWriter
		w.buf.Grow(64 << 10)
		for i := 0; i < 20; i++ {
			w.buf.Reset()
			relayOnce(t, p, &w)
		}
		if s := w.buf.String(); strings.Count(s, `"content":"tok`) != events || !strings.HasSuffix(s, "data: [DONE]\n\n") {
			t.Fatalf("relayed:\n%s", s)
		}
		return testing.AllocsPerRun(200, func() {
			w.buf.Reset()
			relayOnce(t, p, &w)
		})
	}
	short, long := perStream(20), perStream(200)
	if perEvent := (long - short) / 180; perEvent > 0.02 {
		t.Fatalf("a 20-event stream allocates %.1f, a 200-event one %.1f: %.3f per event; want 0", short, long, perEvent)
	}
	t.Logf("allocations per stream: %.1f (20 events), %.1f (200 events)", short, long)
}
