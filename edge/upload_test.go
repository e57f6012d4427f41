package edge

import (
	"bytes"
	"mime/multipart"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/admin/snapshot"
	"gw/edge/usage"
)

// uploadBody is a multipart body with the fields in order and one file
// part of size bytes called file.
func uploadBody(t *testing.T, file string, size int, fields ...string) (ctype string, body []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	fw, _ := w.CreateFormFile(file, "x.bin")
	fw.Write(bytes.Repeat([]byte("a"), size))
	for i := 0; i+1 < len(fields); i += 2 {
		w.WriteField(fields[i], fields[i+1])
	}
	w.Close()
	return w.FormDataContentType(), buf.Bytes()
}

// TestUploadUsageRecords: a transcription records the upstream's token
// usage with its cost and the upload's size as request bytes; whisper's
// duration usage records no tokens; an image edit records its tokens.
func TestUploadUsageRecords(t *testing.T) {
	base := startMock(t)
	src := `_format_version: "1"
provider_keys:
  - {display_name: oa, api_key: "${K}", api_base: "${BASE}/v1"}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"]}
models:
  - {display_name: stt, provider: openai, model_name: gpt-4o-transcribe, provider_key: oa, cost: {input_per_1k: 1, output_per_1k: 2}}
  - {display_name: whisper, provider: openai, model_name: whisper-1, provider_key: oa}
  - {display_name: img, provider: openai, model_name: gpt-image-1, provider_key: oa}
`
	h := &snapshot.Holder{}
	h.Store(compileFile(t, src, map[string]string{"K": "sk", "CALLER": "caller-key", "BASE": base}))
	sink := &collectSink{}
	us := NewUsageStream()
	us.SetSinks([]usage.SinkSpec{sink.spec()})
	defer us.Close(usageGrace)
	p := &Proxy{Holder: h, Usage: us}
	do := func(path, ctype string, body []byte) string {
		t.Helper()
		ctx := &fasthttp.RequestCtx{}
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI(path)
		ctx.Request.Header.Set("Authorization", "Bearer caller-key")
		ctx.Request.Header.SetContentType(ctype)
		ctx.Request.SetBody(body)
		p.Handle(ctx)
		if ctx.Response.StatusCode() != 200 {
			t.Fatalf("%s: %d %s", path, ctx.Response.StatusCode(), ctx.Response.Body())
		}
		return string(ctx.Response.Body())
	}
	ct, body := uploadBody(t, "file", 40000, "model", "stt")
	if got := do(pathTranscriptions, ct, body); !strings.Contains(got, "of 40000 bytes by gpt-4o-transcribe") {
		t.Fatalf("transcription: %s", got)
	}
	e := sink.wait(t, 1)[0]
	if e.Operation != "audio.transcriptions" || e.InboundProtocol != "audio" || e.Model != "stt" || e.UpstreamModel != "gpt-4o-transcribe" ||
		e.PromptTokens == 0 || e.CompletionTokens == 0 || e.TotalTokens != e.PromptTokens+e.CompletionTokens || e.CostUSD <= 0 ||
		e.RequestBodyBytes != int64(len(body)) {
		t.Fatalf("transcription record: %+v (body %d bytes)", e, len(body))
	}

	ct, body = uploadBody(t, "file", 1000, "model", "whisper", "response_format", "vtt")
	if got := do(pathTranslations, ct, body); !strings.HasPrefix(got, "WEBVTT") {
		t.Fatalf("translation: %s", got)
	}
	if e := sink.wait(t, 2)[1]; e.Operation != "audio.translations" || e.TotalTokens != 0 || e.StatusCode != 200 {
		t.Fatalf("whisper record: %+v", e)
	}

	ct, body = uploadBody(t, "image[]", 500, "model", "img", "prompt", "a hat")
	do(pathImageEdits, ct, body)
	if e := sink.wait(t, 3)[2]; e.Operation != "images.edits" || e.PromptTokens == 0 || e.TotalTokens == 0 {
		t.Fatalf("image edit record: %+v", e)
	}
}

// TestParseUploadRequest: the read stage's checks, and the upstream body
// with only model replaced.
func TestParseUploadRequest(t *testing.T) {
	f := func(path, wantErr string, file string, fields ...string) {
		t.Helper()
		ct, body := uploadBody(t, file, 10, fields...)
		info, out, err := ParseUploadRequest(path, []byte(ct), body, "up-model")
		if wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), wantErr) {
				t.Fatalf("%s %v: err %v; want %q", path, fields, err, wantErr)
			}
			return
		}
		if err != nil {
			t.Fatalf("%s %v: %v", path, fields, err)
		}
		want := strings.Replace(string(body), "\r\n\r\n"+info.Model+"\r\n", "\r\n\r\nup-model\r\n", 1)
		if string(out) != want {
			t.Fatalf("%s: upstream body\n%q\nwant\n%q", path, out, want)
		}
	}
	f(pathTranscriptions, "", "file", "model", "stt", "response_format", "srt", "prompt", "Zoë")
	f(pathTranscriptions, "", "file", "model", "stt", "stream", "true")
	f(pathTranslations, "does not stream", "file", "model", "stt", "stream", "true")
	f(pathTranscriptions, "must be one of", "file", "model", "stt", "response_format", "mp3")
	f(pathTranscriptions, "exactly one audio file", "audio", "model", "stt")
	f(pathTranscriptions, "model", "file")
	f(pathTranscriptions, "stream", "file", "model", "stt", "stream", "yes")
	f(pathImageEdits, "", "image[]", "model", "img", "prompt", "a hat")
	f(pathImageEdits, "", "image", "model", "img", "prompt", "a hat", "n", "2")
	f(pathImageEdits, "prompt", "image", "model", "img")
	f(pathImageEdits, "image", "file", "model", "img", "prompt", "a hat")
	f(pathImageEdits, "a needed field occurs twice", "image", "model", "img", "prompt", "a", "prompt", "b")

	if _, _, err := ParseUploadRequest(pathTranscriptions, []byte("application/json"), []byte(`{"model":"stt"}`), "m"); err == nil || !strings.Contains(err.Error(), "multipart/form-data") {
		t.Fatalf("JSON body: %v", err)
	}
}

// TestUploadUnreadBodyClosesConnection: an upload rejected before its body
// was read (a wrong key, a Content-Length over the upload limit) closes the
// connection, so its unread bytes — here a smuggled second request — are
// never served; a model the gw accepts reads the body and keeps the
// connection.
func TestUploadUnreadBodyClosesConnection(t *testing.T) {
	lim := testLimits()
	lim.MaxUploadBytes = 4 << 10
	addr, _ := startEdge(t, lim)
	smuggled := "GET /v1/models HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer caller-key\r\n\r\n"
	upload := func(key string, cl int, body string) string {
		return "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer " + key +
			"\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: " + strconv.Itoa(cl) + "\r\n\r\n" + body
	}
	// The body is the smuggled request: the handler never reads it.
	out, closed := exchange(t, addr, upload("wrong-key", len(smuggled), smuggled))
	if !strings.Contains(out, "401") || strings.Contains(out, `"object":"list"`) || !closed {
		t.Fatalf("wrong key: closed %v\n%s", closed, out)
	}
	// (Under 8 KiB: the listener reads that much with the headers.)
	over := smuggled + strings.Repeat("x", 6<<10-len(smuggled))
	out, closed = exchange(t, addr, upload("caller-key", len(over), over))
	if !strings.Contains(out, "413") || strings.Contains(out, `"object":"list"`) || !closed {
		t.Fatalf("over the limit: closed %v\n%s", closed, out)
	}
	// Read whole (a 400 for the missing file): the next request is served.
	body := "--b\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\ngpt\r\n--b--\r\n"
	out, _ = exchange(t, addr, upload("caller-key", len(body), body)+smuggled)
	if !strings.Contains(out, "missing_required_parameter") || !strings.Contains(out, `"object":"list"`) {
		t.Fatalf("read upload then a request: %s", out)
	}
}
