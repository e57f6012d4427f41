package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"gw/edge/usage/usagetest"
	"gw/perf/mock"
)

// uploadsFile: transcription models on the mock (one behind a key that
// always answers 503, grouped with the healthy one for failover; one on an
// Anthropic key, which has no audio endpoints: 501), an image model with an
// input guardrail on the prompt, and a transcription model with an output
// guardrail on the transcription text.
const uploadsFile = `_format_version: "1"
provider_keys:
  - display_name: oa
    provider: openai
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${UP_MOCK}/v1
  - display_name: oa-down
    provider: openai
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${UP_MOCK}/knobs/status=503/v1
  - display_name: claude-key
    provider: anthropic
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${UP_MOCK}/v1
api_keys:
  - display_name: dev
    key_env: E2E_CALLER_KEY
    allowed_models: ["*"]
models:
  - {display_name: stt, provider: openai, model_name: gpt-4o-transcribe, provider_key: oa}
  - {display_name: whisper, provider: openai, model_name: whisper-1, provider_key: oa}
  - {display_name: stt-down, provider: openai, model_name: gpt-4o-transcribe, provider_key: oa-down}
  - display_name: stt-group
    routing:
      strategy: failover
      targets: [{model: stt-down, priority: 1}, {model: stt}]
  - {display_name: stt-claude, provider: anthropic, model_name: claude-x, provider_key: claude-key}
  - {display_name: stt-out, provider: openai, model_name: gpt-4o-transcribe, provider_key: oa}
  - {display_name: img, provider: openai, model_name: gpt-image-1, provider_key: oa}
  - {display_name: img-guard, provider: openai, model_name: gpt-image-1, provider_key: oa}
guardrails:
  - name: in-words
    kind: keyword
    hook_point: input
    patterns: [{kind: literal, value: forbidden-word}]
  - name: out-words
    kind: keyword
    hook_point: output
    patterns: [{kind: literal, value: gpt-4o-transcribe}]
guardrail_attachments:
  - {guardrail_id: in-words, scope_type: model, scope_id: img-guard}
  - {guardrail_id: out-words, scope_type: model, scope_id: stt-out}
`

// uploadLimit is the gw's server.max_upload_bytes in these tests.
const uploadLimit = 2 << 20

func startUploads(t *testing.T) (*mock.Server, string, openai.Client) {
	t.Helper()
	m := startMock(t, "UP_MOCK", mock.Config{})
	g := startGW(t, writeTemp(t, "uploads.yaml", uploadsFile), "--max-upload-bytes", strconv.Itoa(uploadLimit))
	t.Cleanup(func() {
		if log := g.stderr.String(); strings.Contains(log, "DATA RACE") || strings.Contains(log, "panic:") {
			t.Errorf("gw reported a race or a panic:\n%s", log)
		}
	})
	base := "http://" + g.addr + "/v1"
	return m, base, openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))
}

// audio is a fake audio file of n bytes (the mock counts, never decodes).
func audio(n int) io.Reader {
	return bytes.NewReader(bytes.Repeat([]byte{0x52, 0x49, 0x46, 0x46}, n/4))
}

// apiStatus is the HTTP status of an SDK error (0 when err is not one).
func apiStatus(err error) int {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode
	}
	return 0
}

// TestUploadsTranscriptions: every response_format through the SDK with a
// file (openai-go sends the file before `model`), the upstream model
// rewritten in the form (the mock's text names what it received), the
// content types relayed; a streamed transcription; a translation.
func TestUploadsTranscriptions(t *testing.T) {
	_, _, client := startUploads(t)
	ctx := context.Background()
	const size = 64 << 10
	want := mock.TranscriptText("transcribe", "gpt-4o-transcribe", size)

	tr, err := client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		Model: "stt", File: openai.File(audio(size), "speech.wav", "audio/wav")})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Text != want || tr.Usage.InputTokens == 0 || tr.Usage.TotalTokens == 0 {
		t.Fatalf("json: %+v; want text %q with token usage", tr, want)
	}

	for _, tc := range []struct {
		format openai.AudioResponseFormat
		ctype  string
		want   string
	}{
		{openai.AudioResponseFormatJSON, "application/json", `{"text":"` + want + `"`},
		{openai.AudioResponseFormatVerboseJSON, "application/json", `"segments":[{"id":0`},
		{openai.AudioResponseFormatText, "text/plain", want + "\n"},
		{openai.AudioResponseFormatSRT, "text/plain", "1\n00:00:00,000 --> 00:00:04,000\n" + want + "\n"},
		{openai.AudioResponseFormatVTT, "text/vtt", "WEBVTT\n\n00:00:00.000 --> 00:00:04.000\n" + want + "\n"},
	} {
		var resp *http.Response
		var body []byte
		_, err := client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
			Model: "stt", File: openai.File(audio(size), "speech.wav", "audio/wav"), ResponseFormat: tc.format},
			option.WithResponseInto(&resp), option.WithResponseBodyInto(&body))
		if resp == nil || err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.ctype) || !strings.Contains(string(body), tc.want) {
			t.Fatalf("%s: %d %q\n%s\nwant %q containing %q", tc.format, resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.ctype, tc.want)
		}
	}

	// whisper reports duration usage; the text is still relayed.
	tr, err = client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		Model: "whisper", File: openai.File(audio(size), "speech.wav", "audio/wav")})
	if err != nil || tr.Text != mock.TranscriptText("transcribe", "whisper-1", size) {
		t.Fatalf("whisper: %+v %v", tr, err)
	}

	stream := client.Audio.Transcriptions.NewStreaming(ctx, openai.AudioTranscriptionNewParams{
		Model: "stt", File: openai.File(audio(size), "speech.wav", "audio/wav")})
	var deltas, done string
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "transcript.text.delta":
			deltas += ev.Delta
		case "transcript.text.done":
			done = ev.Text
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if deltas != want || done != want {
		t.Fatalf("stream: deltas %q, done %q; want %q", deltas, done, want)
	}

	tl, err := client.Audio.Translations.New(ctx, openai.AudioTranslationNewParams{
		Model: "stt", File: openai.File(audio(size), "speech.wav", "audio/wav")})
	if err != nil || tl.Text != mock.TranscriptText("translate", "gpt-4o-transcribe", size) {
		t.Fatalf("translation: %+v %v", tl, err)
	}
}

// TestUploadsImageEdits: an edit with two images and a mask, buffered and
// streamed (partial images), through the SDK.
func TestUploadsImageEdits(t *testing.T) {
	_, _, client := startUploads(t)
	ctx := context.Background()
	png := func() io.Reader { return bytes.NewReader(bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 4096)) }

	resp, err := client.Images.Edit(ctx, openai.ImageEditParams{
		Model:  "img",
		Prompt: "add a hat",
		Image:  openai.ImageEditParamsImageUnion{OfFileArray: []io.Reader{openai.File(png(), "a.png", "image/png"), openai.File(png(), "b.png", "image/png")}},
		Mask:   openai.File(png(), "mask.png", "image/png"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Data) != 1 || resp.Data[0].B64JSON != mock.MockPNG || resp.Data[0].RevisedPrompt != "add a hat" || resp.Usage.InputTokens == 0 {
		t.Fatalf("edit: %+v", resp)
	}

	stream := client.Images.EditStreaming(ctx, openai.ImageEditParams{
		Model: "img", Prompt: "add a hat", PartialImages: openai.Int(2),
		Image: openai.ImageEditParamsImageUnion{OfFile: openai.File(png(), "a.png", "image/png")},
	})
	var partials, completed int
	for stream.Next() {
		switch stream.Current().Type {
		case "image_edit.partial_image":
			partials++
		case "image_edit.completed":
			completed++
		}
	}
	if err := stream.Err(); err != nil || partials != 2 || completed != 1 {
		t.Fatalf("stream: %d partial, %d completed, %v", partials, completed, err)
	}
}

// TestUploadsPolicy: failover within a group (the held upload is sent
// again to the second target), 501 for a provider without the endpoint, a
// guardrail block on the prompt field and on the transcription text, 400
// for a body that is not multipart or lacks the file.
func TestUploadsPolicy(t *testing.T) {
	m, base, client := startUploads(t)
	ctx := context.Background()
	const size = 300 << 10 // more than the 256 KiB held in memory: the retry reads the spill file

	before := m.Stats().Requests
	tr, err := client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		Model: "stt-group", File: openai.File(audio(size), "speech.wav", "audio/wav")})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Text != mock.TranscriptText("transcribe", "gpt-4o-transcribe", size) {
		t.Fatalf("failover: %q", tr.Text)
	}
	if n := m.Stats().Requests - before; n != 2 {
		t.Fatalf("failover: %d upstream requests; want 2 (503, then the healthy target)", n)
	}

	_, err = client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		Model: "stt-claude", File: openai.File(audio(1024), "speech.wav", "audio/wav")})
	if apiStatus(err) != 501 || !strings.Contains(err.Error(), "does not serve /v1/audio/transcriptions") {
		t.Fatalf("anthropic key: %v; want 501", err)
	}

	_, err = client.Images.Edit(ctx, openai.ImageEditParams{Model: "img-guard", Prompt: "draw the forbidden-word",
		Image: openai.ImageEditParamsImageUnion{OfFile: openai.File(bytes.NewReader([]byte("png")), "a.png", "image/png")}})
	if apiStatus(err) != 422 || !strings.Contains(err.Error(), "content_filter") {
		t.Fatalf("guarded prompt: %v; want 422 content_filter", err)
	}
	before = m.Stats().Requests
	if _, err := client.Images.Edit(ctx, openai.ImageEditParams{Model: "img-guard", Prompt: "draw a cat",
		Image: openai.ImageEditParamsImageUnion{OfFile: openai.File(bytes.NewReader([]byte("png")), "a.png", "image/png")}}); err != nil {
		t.Fatalf("clean prompt: %v", err)
	}
	if m.Stats().Requests-before != 1 {
		t.Fatal("the clean prompt did not reach the upstream")
	}

	_, err = client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		Model: "stt-out", File: openai.File(audio(1024), "speech.wav", "audio/wav"), ResponseFormat: openai.AudioResponseFormatText},
		option.WithResponseBodyInto(new([]byte)))
	if apiStatus(err) != 422 {
		t.Fatalf("guarded transcription text: %v; want 422", err)
	}

	for _, tc := range []struct {
		name, ctype, body string
		status            int
	}{
		{"json body", "application/json", `{"model":"stt"}`, 400},
		{"no file", "multipart/form-data; boundary=XX", "--XX\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nstt\r\n--XX--\r\n", 400},
		{"no model", "multipart/form-data; boundary=XX", "--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\nRIFF\r\n--XX--\r\n", 400},
		{"truncated", "multipart/form-data; boundary=XX", "--XX\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nstt\r\n--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\nRIFF", 400},
	} {
		req, _ := http.NewRequest("POST", base+"/audio/transcriptions", strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer caller-e2e")
		req.Header.Set("Content-Type", tc.ctype)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), `"error"`) {
			t.Fatalf("%s: %d %s; want %d", tc.name, resp.StatusCode, b, tc.status)
		}
	}
}

// TestUploadsTooLarge: an upload over server.max_upload_bytes is 413 —
// before the body is read when its Content-Length says so, as soon as it
// crosses the limit when chunked — and a chat body under max_body_bytes
// still works on the same listener.
func TestUploadsTooLarge(t *testing.T) {
	m, base, client := startUploads(t)
	ctx := context.Background()
	before := m.Stats().Requests

	// gw answers 413 after the headers (and the first 8 KiB the listener
	// reads with them) and closes the connection: a client still sending
	// may see the close (a reset) before it reads the answer.
	_, err := client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		Model: "stt", File: openai.File(audio(uploadLimit+4096), "speech.wav", "audio/wav")})
	if apiStatus(err) != 413 && (err == nil || !strings.Contains(err.Error(), "connection reset") && !strings.Contains(err.Error(), "broken pipe")) {
		t.Fatalf("Content-Length over the limit: %v; want 413 or the connection closed", err)
	}
	// The answer itself, read by a client that sends no more than gw reads.
	conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/v1"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer caller-e2e\r\n"+
		"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: %d\r\n\r\n%s", uploadLimit+1, strings.Repeat("x", 8<<10))
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	raw, _ := io.ReadAll(conn)
	if !strings.HasPrefix(string(raw), "HTTP/1.1 413") || !strings.Contains(string(raw), "request_too_large") || !strings.Contains(string(raw), "Connection: close") {
		t.Fatalf("Content-Length over the limit, raw: %s", raw)
	}

	// Chunked: the length is only known by reading.
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		_ = mw.WriteField("model", "stt")
		w, _ := mw.CreateFormFile("file", "speech.wav")
		_, _ = io.Copy(w, audio(uploadLimit+(64<<10)))
		_ = mw.Close()
		_ = pw.Close()
	}()
	req, _ := http.NewRequest("POST", base+"/audio/transcriptions", pr)
	req.Header.Set("Authorization", "Bearer caller-e2e")
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 {
			t.Fatalf("chunked over the limit: %d %s; want 413", resp.StatusCode, b)
		}
	} // else gw closed the connection while the client was still sending: also a refusal
	_ = pr.CloseWithError(io.ErrClosedPipe)

	if n := m.Stats().Requests - before; n != 0 {
		t.Fatalf("%d oversized uploads reached the upstream", n)
	}
	if _, err := client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		Model: "stt", File: openai.File(audio(uploadLimit/2), "speech.wav", "audio/wav")}); err != nil {
		t.Fatalf("upload under the limit: %v", err)
	}
}

// TestUploadsAudioSecondsE2E: the usage record of a transcription carries
// the audio duration the upstream reported (whisper's duration usage,
// verbose_json's duration), exported over OTLP as gw.usage.audio_seconds;
// an answer without one (token usage only) has none.
func TestUploadsAudioSecondsE2E(t *testing.T) {
	rcv := usagetest.StartOTLP(t)
	t.Setenv("UP_OTLP", rcv.URL)
	startMock(t, "UP_MOCK", mock.Config{})
	g := startGW(t, writeTemp(t, "uploads-usage.yaml", uploadsFile+`observability_exporters:
  - {name: otel, kind: otlp_http, endpoint: "${UP_OTLP}", batch_size: 1, flush_interval_ms: 100}
`))
	client := openai.NewClient(option.WithBaseURL("http://"+g.addr+"/v1"), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))
	ctx := context.Background()
	const size = 64 << 10 // the mock's audio is 16 kB/s: 4 s
	for i, tc := range []struct {
		model  string
		format openai.AudioResponseFormat
		want   any
	}{
		{"whisper", openai.AudioResponseFormatJSON, 4.0},
		{"stt", openai.AudioResponseFormatVerboseJSON, 4.0},
		{"stt", openai.AudioResponseFormatJSON, nil},
	} {
		var resp *http.Response
		if _, err := client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{Model: tc.model,
			File: openai.File(audio(size), "speech.wav", "audio/wav"), ResponseFormat: tc.format}, option.WithResponseInto(&resp)); err != nil {
			t.Fatalf("%s %s: %v", tc.model, tc.format, err)
		}
		usagetest.Eventually(t, 10*time.Second, "the usage record", func() bool { return len(rcv.Spans()) > i })
		sp := rcv.Spans()[i]
		if got := usagetest.Attr(sp, "gw.usage.audio_seconds"); got != tc.want || usagetest.Attr(sp, "gen_ai.request.model") != tc.model {
			t.Fatalf("%s %s: audio_seconds %v; want %v", tc.model, tc.format, got, tc.want)
		}
	}
}
