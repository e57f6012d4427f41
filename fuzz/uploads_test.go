package fuzz

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"strings"
	"testing"

	"gw/edge"
)

// FuzzUploadRequest: the read stage of the upload endpoints on any body
// and Content-Type never panics; a body it accepts has a model, the body
// it sends upstream is exactly as long as announced (checked inside
// ParseUploadRequest), Go's mime/multipart reads it with `model` replaced
// by the upstream name (once), the same prompt the guardrails judged, and
// the file parts the endpoint needs.
func FuzzUploadRequest(f *testing.F) {
	for _, seed := range []struct {
		path string
		body func(w *multipart.Writer)
	}{
		{"/v1/audio/transcriptions", func(w *multipart.Writer) { // openai-go: file first
			fw, _ := w.CreateFormFile("file", "a.wav")
			fw.Write([]byte("RIFF\r\n--not-a-boundary"))
			w.WriteField("model", "stt")
			w.WriteField("response_format", "srt")
		}},
		{"/v1/audio/transcriptions", func(w *multipart.Writer) { // curl order, streamed
			w.WriteField("model", "stt")
			w.WriteField("stream", "true")
			w.WriteField("prompt", "names: Zoë")
			fw, _ := w.CreateFormFile("file", "a.mp3")
			fw.Write(bytes.Repeat([]byte{0xff, 0xfb}, 300))
		}},
		{"/v1/audio/translations", func(w *multipart.Writer) {
			w.WriteField("model", "whisper")
			fw, _ := w.CreateFormFile("file", "a.ogg")
			fw.Write([]byte("OggS"))
		}},
		{"/v1/images/edits", func(w *multipart.Writer) {
			for _, n := range []string{"image[]", "image[]", "mask"} {
				fw, _ := w.CreateFormFile(n, "x.png")
				fw.Write([]byte("\x89PNG"))
			}
			w.WriteField("prompt", "a hat")
			w.WriteField("model", "img")
		}},
	} {
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		seed.body(w)
		w.Close()
		f.Add(seed.path, []byte(w.FormDataContentType()), buf.Bytes())
	}
	f.Add("/v1/images/edits", []byte("multipart/form-data; boundary=b"), []byte("--b\r\nContent-Disposition: form-data; name=model\r\n\r\nm\r\n--b\r\nContent-Disposition: form-data; name=model\r\n\r\nm2\r\n--b--"))
	f.Add("/v1/audio/transcriptions", []byte("multipart/form-data"), []byte("--b--"))
	f.Add("/v1/audio/transcriptions", []byte("application/json"), []byte(`{"model":"m"}`))

	f.Fuzz(func(t *testing.T, path string, ctype, body []byte) {
		const upstream = "upstream-model"
		info, out, err := edge.ParseUploadRequest(path, ctype, body, upstream)
		if err != nil {
			if out != nil {
				t.Fatalf("rejected (%v) with an upstream body", err)
			}
			return
		}
		if info.Model == "" {
			t.Fatalf("accepted without a model: %q", body)
		}
		_, params, _ := strings.Cut(string(ctype), "boundary=")
		mr := multipart.NewReader(bytes.NewReader(out), strings.Trim(strings.SplitN(params, ";", 2)[0], `" `))
		models, files, images := 0, 0, 0
		var prompt strings.Builder
		for {
			p, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("mime/multipart cannot read the upstream body (%v): %q", err, out)
			}
			v, _ := io.ReadAll(p)
			switch {
			case p.FileName() != "":
				switch p.FormName() {
				case "file":
					files++
				case "image", "image[]":
					images++
				}
			case p.FormName() == "model":
				models++
				if string(v) != upstream {
					t.Fatalf("model upstream is %q; want %q", v, upstream)
				}
			case p.FormName() == "prompt":
				prompt.Write(v)
			}
		}
		if models != 1 {
			t.Fatalf("%d model fields upstream; want 1", models)
		}
		if prompt.String() != info.Prompt {
			t.Fatalf("guardrails judged %q; the upstream gets %q", info.Prompt, prompt.String())
		}
		if path == "/v1/images/edits" && images == 0 || path != "/v1/images/edits" && files != 1 {
			t.Fatalf("accepted with %d files, %d images for %s", files, images, path)
		}
	})
}
