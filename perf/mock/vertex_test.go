package mock_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"os"
	"strings"
	"testing"

	"golang.org/x/oauth2/google"

	"gw/perf/mock"
)

func vertexToken(t *testing.T, doc []byte) (string, error) {
	t.Helper()
	jc, err := google.JWTConfigFromJSON(doc, "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jc.TokenSource(context.Background()).Token()
	if err != nil {
		return "", err
	}
	return tok.AccessToken, nil
}

func TestVertex(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	tok, err := vertexToken(t, mock.VertexServiceAccount(base+"/vertex/token"))
	if err != nil {
		t.Fatal(err)
	}

	// An assertion signed by another key is refused.
	other, _ := rsa.GenerateKey(rand.Reader, 1024)
	der, _ := x509.MarshalPKCS8PrivateKey(other)
	var doc map[string]any
	_ = json.Unmarshal(mock.VertexServiceAccount(base+"/vertex/token"), &doc)
	doc["private_key"] = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	forged, _ := json.Marshal(doc)
	if _, err := vertexToken(t, forged); err == nil || !strings.Contains(err.Error(), "invalid_grant") {
		t.Fatalf("forged assertion: %v", err)
	}

	root := base + "/v1/projects/p/locations/us-central1/publishers/"
	gem := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	if r := post(t, c, root+"google/models/gemini-2.5-flash:generateContent", gem); r.StatusCode != 401 {
		t.Fatalf("no token: %d", r.StatusCode)
	}
	auth := []string{"Authorization", "Bearer " + tok}

	// Recorded fixtures, byte for byte.
	for model, file := range map[string]string{"gemini-2.0-flash-exp": "gemini_stream_text.sse", "gemini-3-pro-preview": "gemini_stream_function_call.sse"} {
		r := post(t, c, root+"google/models/"+model+":streamGenerateContent?alt=sse", gem, auth...)
		got, _ := io.ReadAll(r.Body)
		want, _ := os.ReadFile("testdata/" + file)
		if r.StatusCode != 200 || string(got) != string(want) {
			t.Fatalf("%s: %d\n%q", model, r.StatusCode, got)
		}
	}

	// Generated: thoughts, text, final event with usage.
	r := post(t, c, root+"google/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"thinkingConfig":{"includeThoughts":true}}}`, auth...)
	got, _ := io.ReadAll(r.Body)
	if s := string(got); strings.Count(s, "\r\n\r\n") != 8 || !strings.Contains(s, `"thought":true`) || !strings.Contains(s, `"finishReason":"STOP"`) || !strings.Contains(s, `"thoughtsTokenCount":2`) {
		t.Fatalf("generated stream:\n%s", s)
	}
	// Buffered, blocked prompt.
	r = post(t, c, root+"google/models/gemini-2.5-flash:generateContent", `{"contents":[{"role":"user","parts":[{"text":"mock:block_prompt"}]}]}`, auth...)
	got, _ = io.ReadAll(r.Body)
	if !strings.Contains(string(got), `"blockReason":"SAFETY"`) || strings.Contains(string(got), `"candidates":`) {
		t.Fatalf("blocked: %s", got)
	}

	// Claude: anthropic_version required, model refused in the body.
	cl := root + "anthropic/models/claude-x@1:rawPredict"
	if r := post(t, c, cl, `{"model":"x","anthropic_version":"vertex-2023-10-16","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, auth...); r.StatusCode != 400 {
		t.Fatalf("model in body: %d", r.StatusCode)
	}
	r = post(t, c, cl, `{"anthropic_version":"vertex-2023-10-16","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, auth...)
	got, _ = io.ReadAll(r.Body)
	if r.StatusCode != 200 || !strings.Contains(string(got), `"model":"claude-x@1"`) {
		t.Fatalf("rawPredict: %d %s", r.StatusCode, got)
	}
}
