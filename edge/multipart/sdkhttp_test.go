package multipart

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
)

// TestOpenAIGoClientUpload: the real openai-go client uploads a file to a
// server that streams the request body through a Reader as it arrives
// (net/http's body stream), rewrites model and checks the result with
// mime/multipart.
func TestOpenAIGoClientUpload(t *testing.T) {
	audio := payload(1<<20, 21)
	var upstream []byte
	var boundary, gotModel, gotPrompt string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r, err := Acquire(req.Body, []byte(req.Header.Get("Content-Type")), Limits{MaxBodyBytes: 8 << 20})
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		defer Release(r)
		if err := r.Prepare("model", "prompt"); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		m, _ := r.Value("model")
		gotModel, gotPrompt = string(m), string(r.AppendValues(nil, "prompt"))
		if _, err := r.Replace("model", []byte("upstream-whisper")); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		var out bytes.Buffer
		if _, err := r.WriteTo(&out); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		upstream, boundary = out.Bytes(), string(r.Boundary())
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"text":"hello"}`))
	}))
	defer srv.Close()

	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("test"), option.WithMaxRetries(0))
	res, err := client.Audio.Transcriptions.New(context.Background(), openai.AudioTranscriptionNewParams{
		File:     openai.File(bytes.NewReader(audio), "speech.wav", "audio/wav"),
		Model:    "my-alias",
		Prompt:   openai.String("Zoë"),
		Language: openai.String("de"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "hello" {
		t.Fatalf("text %q", res.Text)
	}
	if gotModel != "my-alias" || gotPrompt != "Zoë" {
		t.Fatalf("server saw model %q prompt %q", gotModel, gotPrompt)
	}
	got := readStd(t, upstream, boundary)
	want := []string{"file=<1048576>", "language=de", "model=upstream-whisper", "prompt=Zoë"}
	if len(got) != len(want) {
		t.Fatalf("upstream fields %q; want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("upstream fields %q; want %q", got, want)
		}
	}
}
