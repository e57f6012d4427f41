package mock

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"gw/sse/rawjson"
)

// OpenAI uploads (multipart/form-data): POST .../audio/transcriptions,
// .../audio/translations and .../images/edits. The body is read part by
// part as it arrives (the listener streams request bodies) and file parts
// are counted, never held, so a 200 MB upload costs the mock no memory.
//
// Transcriptions and translations answer every response_format the way
// OpenAI does: json ({"text","usage"}), verbose_json (task, language,
// duration, text, segments), text, srt and vtt as text; with
// "stream": "true" a transcription is Chunks transcript.text.delta events
// (ChunkDelay apart) and transcript.text.done with the usage. The text
// names the model the mock received and the audio size —
// "Mock transcription of 1234 bytes by gpt-4o-transcribe." — so tests see
// what the gateway sent upstream. Models whose name starts with "whisper"
// report duration usage, the others token usage (as OpenAI does).
//
// Image edits answer like generations (images.go): one MockPNG per n in
// b64_json with the usage; with "stream": "true" partial_images
// image_edit.partial_image events, then image_edit.completed.

var (
	openAITranscriptionsRoute = route{
		method:      fasthttp.MethodPost,
		match:       func(path []byte) bool { return bytes.HasSuffix(path, strTranscriptionsPath) },
		serve:       (*Server).serveOpenAITranscriptions,
		appendError: appendOpenAIError,
	}
	openAITranslationsRoute = route{
		method:      fasthttp.MethodPost,
		match:       func(path []byte) bool { return bytes.HasSuffix(path, strTranslationsPath) },
		serve:       (*Server).serveOpenAITranslations,
		appendError: appendOpenAIError,
	}
	openAIImageEditsRoute = route{
		method:      fasthttp.MethodPost,
		match:       func(path []byte) bool { return bytes.HasSuffix(path, strImageEditsPath) },
		serve:       (*Server).serveOpenAIImageEdits,
		appendError: appendOpenAIError,
	}
)

var (
	strTranscriptionsPath = []byte("/audio/transcriptions")
	strTranslationsPath   = []byte("/audio/translations")
	strImageEditsPath     = []byte("/images/edits")
)

// upload is what the mock read of a multipart body: text fields, and per
// file field name the number of files and their bytes.
type upload struct {
	fields    map[string]string
	files     map[string]int
	fileBytes int64
	fileType  string // Content-Type of the first file part
}

// readUpload reads a multipart body part by part, discarding file bytes.
func readUpload(ctx *fasthttp.RequestCtx) (*upload, error) {
	boundary := ctx.Request.Header.MultipartFormBoundary()
	if len(boundary) == 0 {
		return nil, errors.New("Invalid Content-Type: expected multipart/form-data with a boundary.")
	}
	var src io.Reader = ctx.RequestBodyStream()
	if src == nil {
		src = bytes.NewReader(ctx.Request.Body())
	}
	mr := multipart.NewReader(src, string(boundary))
	u := &upload{fields: map[string]string{}, files: map[string]int{}}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			// The epilogue, if any, so that the connection can be reused.
			if _, err := io.Copy(io.Discard, src); err != nil {
				return nil, errors.New("Could not read the request body.")
			}
			ctx.Request.CloseBodyStream() //nolint:errcheck // read to its end
			return u, nil
		}
		if err != nil {
			return nil, errors.New("Could not parse multipart form.")
		}
		name := p.FormName()
		if p.FileName() != "" {
			n, err := io.Copy(io.Discard, p)
			if err != nil {
				return nil, errors.New("Could not read the uploaded file.")
			}
			if u.fileType == "" {
				u.fileType = p.Header.Get("Content-Type")
			}
			u.files[name]++
			u.fileBytes += n
			continue
		}
		v, err := io.ReadAll(io.LimitReader(p, 1<<20))
		if err != nil {
			return nil, errors.New("Could not parse multipart form.")
		}
		if _, dup := u.fields[name]; !dup {
			u.fields[name] = string(v)
		}
	}
}

func (s *Server) serveOpenAITranscriptions(ctx *fasthttp.RequestCtx, k *Knobs) {
	s.serveAudioText(ctx, k, "transcribe")
}

func (s *Server) serveOpenAITranslations(ctx *fasthttp.RequestCtx, k *Knobs) {
	s.serveAudioText(ctx, k, "translate")
}

// TranscriptText is the text of a mock transcription of size audio bytes
// by model (translations say "translation").
func TranscriptText(task, model string, size int64) string {
	what := "transcription"
	if task == "translate" {
		what = "translation"
	}
	return "Mock " + what + " of " + strconv.FormatInt(size, 10) + " bytes by " + model + "."
}

func (s *Server) serveAudioText(ctx *fasthttp.RequestCtx, k *Knobs, task string) {
	u, err := readUpload(ctx)
	if err != nil {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, err.Error())
		ctx.SetConnectionClose() // the rest of the body is unread
		return
	}
	model := u.fields["model"]
	if model == "" || u.files["file"] != 1 {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "'model' and one 'file' are required.")
		return
	}
	format := u.fields["response_format"]
	if format == "" {
		format = "json"
	}
	text := TranscriptText(task, model, u.fileBytes)
	seconds := max(1, u.fileBytes/16000) // as if 16 kB/s audio
	in := seconds * 10                   // audio tokens
	out := int64(promptTokens(len(text)))
	usage := func(dst []byte) []byte {
		if strings.HasPrefix(model, "whisper") {
			dst = append(dst, `"usage":{"type":"duration","seconds":`...)
			return append(strconv.AppendInt(dst, seconds, 10), '}')
		}
		dst = append(dst, `"usage":{"type":"tokens","input_tokens":`...)
		dst = strconv.AppendInt(dst, in, 10)
		dst = append(dst, `,"input_token_details":{"text_tokens":0,"audio_tokens":`...)
		dst = strconv.AppendInt(dst, in, 10)
		dst = append(dst, `},"output_tokens":`...)
		dst = strconv.AppendInt(dst, out, 10)
		dst = append(dst, `,"total_tokens":`...)
		return append(strconv.AppendInt(dst, in+out, 10), '}')
	}
	setRequestID(ctx, s.seq.Add(1))
	if u.fields["stream"] == "true" && task == "transcribe" {
		s.streamTranscript(ctx, k, text, usage)
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	end := strconv.FormatFloat(float64(seconds), 'f', 3, 64)
	switch format {
	case "json":
		b := rawjson.AppendQuote(append([]byte(nil), `{"text":`...), text)
		b = append(usage(append(b, ',')), '}')
		ctx.SetContentTypeBytes(strJSON)
		ctx.SetBody(b)
	case "verbose_json":
		lang := "english"
		if l := u.fields["language"]; l != "" && task == "transcribe" {
			lang = l
		}
		b := append([]byte(nil), `{"task":"`...)
		b = append(b, task...)
		b = append(b, `","language":`...)
		b = rawjson.AppendQuote(b, lang)
		b = append(b, `,"duration":`...)
		b = append(b, end...)
		b = rawjson.AppendQuote(append(b, `,"text":`...), text)
		b = append(b, `,"segments":[{"id":0,"seek":0,"start":0.0,"end":`...)
		b = append(b, end...)
		b = rawjson.AppendQuote(append(b, `,"text":`...), text)
		b = append(b, `,"tokens":[50364,50464],"temperature":0.0,"avg_logprob":-0.25,"compression_ratio":1.1,"no_speech_prob":0.01}],`...)
		b = append(usage(b), '}')
		ctx.SetContentTypeBytes(strJSON)
		ctx.SetBody(b)
	case "text":
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString(text + "\n")
	case "srt":
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString("1\n00:00:00,000 --> " + srtTime(seconds, ',') + "\n" + text + "\n\n")
	case "vtt":
		ctx.SetContentType("text/vtt; charset=utf-8")
		ctx.SetBodyString("WEBVTT\n\n00:00:00.000 --> " + srtTime(seconds, '.') + "\n" + text + "\n\n")
	default:
		ctx.SetStatusCode(fasthttp.StatusBadRequest)
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "Invalid value for 'response_format'.")
	}
}

// srtTime formats whole seconds as hh:mm:ss<sep>000.
func srtTime(sec int64, sep byte) string {
	two := func(b []byte, n int64) []byte {
		if n < 10 {
			b = append(b, '0')
		}
		return strconv.AppendInt(b, n, 10)
	}
	b := two(nil, sec/3600)
	b = two(append(b, ':'), sec/60%60)
	b = two(append(b, ':'), sec%60)
	return string(append(append(b, sep), "000"...))
}

// streamTranscript sends text as Chunks delta events, then the done event.
func (s *Server) streamTranscript(ctx *fasthttp.RequestCtx, k *Knobs, text string, usage func([]byte) []byte) {
	kk := *k
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("text/event-stream")
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer s.stats.inFlight.Add(-1)
		if kk.FirstTokenDelay > 0 && !s.sleep(kk.FirstTokenDelay) {
			return
		}
		n := max(1, kk.Chunks)
		words := strings.SplitAfter(text, " ")
		for i := 0; i < n; i++ {
			if i > 0 && kk.ChunkDelay > 0 && !s.sleep(kk.ChunkDelay) {
				return
			}
			// The deltas concatenate to text: word by word, the last
			// delta carrying what is left.
			lo, hi := i*len(words)/n, (i+1)*len(words)/n
			if lo == hi {
				continue
			}
			b := append([]byte(nil), `data: {"type":"transcript.text.delta","delta":`...)
			b = rawjson.AppendQuote(b, strings.Join(words[lo:hi], ""))
			b = append(b, "}\n\n"...)
			if _, err := w.Write(b); err != nil || w.Flush() != nil {
				return
			}
		}
		b := rawjson.AppendQuote(append([]byte(nil), `data: {"type":"transcript.text.done","text":`...), text)
		b = append(usage(append(b, ',')), "}\n\n"...)
		if _, err := w.Write(b); err == nil {
			_ = w.Flush()
		}
	})
}

func (s *Server) serveOpenAIImageEdits(ctx *fasthttp.RequestCtx, k *Knobs) {
	u, err := readUpload(ctx)
	if err != nil {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, err.Error())
		ctx.SetConnectionClose() // the rest of the body is unread
		return
	}
	prompt := u.fields["prompt"]
	images := u.files["image"] + u.files["image[]"]
	if prompt == "" || images == 0 {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "'prompt' and at least one 'image' are required.")
		return
	}
	n := int64(1)
	if v := u.fields["n"]; v != "" {
		var err error
		if n, err = strconv.ParseInt(v, 10, 64); err != nil || n < 1 || n > 10 {
			s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "Invalid 'n': must be an integer from 1 to 10.")
			return
		}
	}
	size := u.fields["size"]
	if size == "" {
		size = "1024x1024"
	}
	setRequestID(ctx, s.seq.Add(1))
	created := time.Now().Unix()
	in := int64(promptTokens(len(prompt))) + int64(images)*65 // image input tokens
	out := int64(k.Chunks) * 16 * n
	usage := func(dst []byte) []byte {
		dst = append(dst, `"usage":{"input_tokens":`...)
		dst = strconv.AppendInt(dst, in, 10)
		dst = append(dst, `,"input_tokens_details":{"text_tokens":`...)
		dst = strconv.AppendInt(dst, int64(promptTokens(len(prompt))), 10)
		dst = append(dst, `,"image_tokens":`...)
		dst = strconv.AppendInt(dst, int64(images)*65, 10)
		dst = append(dst, `},"output_tokens":`...)
		dst = strconv.AppendInt(dst, out, 10)
		dst = append(dst, `,"total_tokens":`...)
		dst = strconv.AppendInt(dst, in+out, 10)
		return append(dst, '}')
	}
	if u.fields["stream"] != "true" {
		b := append([]byte(nil), `{"created":`...)
		b = strconv.AppendInt(b, created, 10)
		b = append(b, `,"data":[`...)
		for i := int64(0); i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"b64_json":"`+MockPNG+`","revised_prompt":`...)
			b = append(rawjson.AppendQuote(b, prompt), '}')
		}
		b = append(b, `],"background":"opaque","output_format":"png","quality":"high","size":`...)
		b = rawjson.AppendQuote(b, size)
		b = append(usage(append(b, ',')), '}')
		ctx.SetStatusCode(fasthttp.StatusOK)
		ctx.SetContentTypeBytes(strJSON)
		ctx.SetBody(b)
		return
	}
	partials, _ := strconv.ParseInt(u.fields["partial_images"], 10, 64)
	kk := *k
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("text/event-stream")
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer s.stats.inFlight.Add(-1)
		event := func(typ string, extra func([]byte) []byte) bool {
			b := append([]byte("event: "), typ...)
			b = append(b, "\ndata: {\"type\":\""...)
			b = append(b, typ...)
			b = append(b, `","b64_json":"`+MockPNG+`","created_at":`...)
			b = strconv.AppendInt(b, created, 10)
			b = rawjson.AppendQuote(append(b, `,"size":`...), size)
			b = append(b, `,"quality":"high","background":"opaque","output_format":"png",`...)
			b = append(extra(b), "}\n\n"...)
			_, err := w.Write(b)
			return err == nil && w.Flush() == nil
		}
		if kk.FirstTokenDelay > 0 && !s.sleep(kk.FirstTokenDelay) {
			return
		}
		for i := int64(0); i < partials; i++ {
			if i > 0 && kk.ChunkDelay > 0 && !s.sleep(kk.ChunkDelay) {
				return
			}
			if !event("image_edit.partial_image", func(b []byte) []byte {
				return strconv.AppendInt(append(b, `"partial_image_index":`...), i, 10)
			}) {
				return
			}
		}
		event("image_edit.completed", usage)
	})
}
