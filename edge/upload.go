package edge

import (
	"bytes"
	"errors"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/upstream"
	"gw/admin/snapshot"
	"gw/edge/guard"
	"gw/edge/multipart"
	"gw/sse"
	"gw/sse/rawjson"
)

// The multipart upload endpoints: /v1/audio/transcriptions,
// /v1/audio/translations and /v1/images/edits. They are endpoint surfaces
// (endpoints.go) whose body is multipart/form-data instead of JSON and may
// be hundreds of megabytes, so it is never held in memory: the listener
// streams it (server.go), edge/multipart reads it in one fixed buffer and
// holds it — 256 KiB in memory, the rest in an unlinked temporary file —
// so that a retry or a failover to another target can send it again
// (multipart PrepareAll / Rewind). Each attempt sends the held body with
// `model` replaced by the target's upstream model name (and a masked
// `prompt` when an input guardrail masked it).
//
// The read stage takes `model`, `stream`, `response_format` and `prompt`
// from the form. Guardrails judge the `prompt` field on the way in and the
// transcription text (or an edited image's revised_prompt) on the way out.
// Answers are relayed with the upstream's Content-Type: json and
// verbose_json as JSON, text / srt / vtt as text; `stream: true` relays the
// transcript.text.* or image_edit.* events.

var (
	pathTranscriptions = "/v1/audio/transcriptions"
	pathTranslations   = "/v1/audio/translations"
	pathImageEdits     = "/v1/images/edits"
)

var (
	surfTranscriptions = &surface{
		guardIn: guard.ImagesRequest, guardNative: guard.TextlessAnswer,
		path: pathTranscriptions, protocol: "audio", operation: "audio.transcriptions",
		endpoint: adapters.EndpointTranscriptions, nativeUsage: transcriptionUsage,
		nativeEvent: transcriptEvent, nativeFail: imagesFail, nativeErrBody: completionsErrBody,
	}
	surfTranslations = &surface{
		guardIn: guard.ImagesRequest, guardNative: guard.TextlessAnswer,
		path: pathTranslations, protocol: "audio", operation: "audio.translations",
		endpoint: adapters.EndpointTranslations, nativeUsage: transcriptionUsage,
		nativeEvent: transcriptEvent, nativeFail: imagesFail, nativeErrBody: completionsErrBody,
	}
	surfImageEdits = &surface{
		guardIn: guard.ImagesRequest, guardNative: guard.ImagesAnswer,
		path: pathImageEdits, protocol: "images", operation: "images.edits",
		endpoint: adapters.EndpointImageEdits, nativeUsage: imagesUsage,
		nativeEvent: imageEditEvent, nativeFail: imagesFail, nativeErrBody: completionsErrBody,
	}
)

func init() {
	// Assigned here: readUpload refers to the surfaces.
	surfTranscriptions.read = readUpload
	surfTranslations.read = readUpload
	surfImageEdits.read = readUpload
}

// Answer formats of a transcription (response_format).
const (
	fmtJSON    uint8 = iota // json (the default), verbose_json, diarized_json
	fmtVerbose              // verbose_json: text is repeated in segments and words
	fmtText                 // text, srt, vtt: the body is the text
)

// uploadState is the per-request state of an upload. Pooled.
type uploadState struct {
	limit  int64
	r      *multipart.Reader
	src    bytes.Reader // the body, when the listener buffered it (tests)
	read   bool         // the caller's body was read to its end
	format uint8
	prompt []byte // {"prompt":...}: what input guardrails judge
	ctype  []byte // the caller's Content-Type (the boundary goes upstream)
	val    []byte // scratch: a field value
	judge  []byte // scratch: the answer text as guardrails read it
	out    []byte // scratch: an answer rewritten with masked text
	// seconds is the audio duration the upstream reported (verbose_json's
	// duration, whisper's duration usage); 0 when it reported none.
	seconds float64
}

var uploadPool = sync.Pool{New: func() any { return new(uploadState) }}

func acquireUpload(limit int64) *uploadState {
	u := uploadPool.Get().(*uploadState)
	u.limit = limit
	return u
}

func releaseUpload(u *uploadState) {
	if u.r != nil {
		multipart.Release(u.r) // closes the spill file: its disk space is freed
	}
	u.r, u.read, u.format, u.seconds = nil, false, fmtJSON, 0
	u.src.Reset(nil)
	u.prompt, u.ctype, u.val, u.judge, u.out = u.prompt[:0], u.ctype[:0], u.val[:0], u.judge[:0], u.out[:0]
	uploadPool.Put(u)
}

// serveUpload runs an upload through the pipeline. A request whose body
// was not read to its end (rejected before or while reading it) closes the
// connection: the unread bytes must not be taken for the next request.
func (p *Proxy) serveUpload(ctx *fasthttp.RequestCtx, surf *surface) {
	if !ctx.IsPost() {
		methodNotAllowed(ctx, "POST")
		ctx.SetConnectionClose()
		return
	}
	c := acquireCall()
	c.surf, c.start, c.snap = surf, time.Now(), p.Holder.Load()
	c.up = acquireUpload(p.MaxUploadBytes)
	p.run(ctx, c)
	if !c.up.read {
		ctx.SetConnectionClose()
	}
	if c.committed {
		return // c belongs to the stream now
	}
	p.finish(ctx, c, ctx.Response.StatusCode())
}

// requestBytes is the caller's body size for the access log and usage
// record: an upload's bytes read so far (its body is never held whole).
func requestBytes(ctx *fasthttp.RequestCtx, c *call) int {
	if c.up != nil {
		if c.up.r == nil {
			return 0
		}
		return int(c.up.r.BytesRead())
	}
	return len(ctx.Request.Body())
}

var strMultipart = []byte("multipart/form-data")

// readUpload is the read stage of an upload: the whole multipart body is
// read (and held, see uploadState) before anything goes upstream, its
// fields checked: 400 for a malformed body or a missing field, 413 over
// server.max_upload_bytes.
func readUpload(ctx *fasthttp.RequestCtx, c *call) bool {
	u := c.up
	h := &ctx.Request.Header
	if cl := h.ContentLength(); u.limit > 0 && int64(cl) > u.limit {
		return uploadTooLarge(ctx, c)
	}
	ct := h.ContentType()
	if len(ct) < len(strMultipart) || !bytes.EqualFold(ct[:len(strMultipart)], strMultipart) {
		return badRequest(ctx, c, "invalid_content_type", c.surf.path+" takes a multipart/form-data body")
	}
	u.ctype = append(u.ctype[:0], ct...)
	src := ctx.RequestBodyStream()
	if src == nil {
		u.src.Reset(ctx.Request.Body())
		src = &u.src
	}
	r, err := multipart.Acquire(src, u.ctype, multipart.Limits{MaxBodyBytes: u.limit})
	if err != nil {
		return badRequest(ctx, c, "invalid_multipart", "the multipart/form-data Content-Type has no valid boundary")
	}
	u.r = r
	if err := r.PrepareAll("model", "prompt"); err != nil {
		return uploadReadError(ctx, c, err)
	}
	u.read = true
	ctx.Request.CloseBodyStream() //nolint:errcheck // read to its end; nothing to report
	model, ok := r.Value("model")
	if !ok || len(model) == 0 {
		return badRequest(ctx, c, errModelMissing.code, errModelMissing.msg)
	}
	c.cr.Model = append(c.cr.modelBuf[:0], model...)
	if v, ok := r.Value("stream"); ok {
		switch string(v) {
		case "true":
			if c.surf == surfTranslations {
				return badRequest(ctx, c, "invalid_value", "stream: "+c.surf.path+" does not stream")
			}
			c.cr.Stream = true
		case "false":
		default:
			return badRequest(ctx, c, errStreamNotBool.code, errStreamNotBool.msg)
		}
	}
	if code, msg := checkUploadFields(c.surf, r, u); code != "" {
		return badRequest(ctx, c, code, msg)
	}
	// Input guardrails read the prompt field(s) as an images request.
	u.val = r.AppendValues(u.val[:0], "prompt")
	u.prompt = append(u.prompt[:0], `{"prompt":`...)
	u.prompt = rawjson.AppendQuoteBytes(u.prompt, u.val)
	u.prompt = append(u.prompt, '}')
	c.body, c.origBody = u.prompt, u.prompt
	return true
}

// checkUploadFields checks the fields of each endpoint that gw reads or
// that the upstream would reject without them: the file, the images and
// their prompt; response_format is remembered to relay the answer.
func checkUploadFields(surf *surface, r *multipart.Reader, u *uploadState) (string, string) {
	files, images := 0, 0
	for i := 0; i < r.NumParts(); i++ {
		pt := r.Part(i)
		if !pt.File {
			continue
		}
		switch string(pt.Name) {
		case "file":
			files++
		case "image", "image[]":
			images++
		}
	}
	if surf == surfImageEdits {
		if images == 0 {
			return "missing_required_parameter", "image: at least one image file part (image or image[]) is required"
		}
		if v, ok := r.Value("prompt"); !ok || len(v) == 0 {
			return "missing_required_parameter", "prompt: a non-empty prompt field is required"
		}
		return "", ""
	}
	if files != 1 {
		return "missing_required_parameter", "file: exactly one audio file part is required"
	}
	u.format = fmtJSON
	if v, ok := r.Value("response_format"); ok {
		switch string(v) {
		case "json", "diarized_json":
		case "verbose_json":
			u.format = fmtVerbose
		case "text", "srt", "vtt":
			u.format = fmtText
		default:
			return "invalid_value", "response_format: must be one of json, text, srt, verbose_json, vtt, diarized_json"
		}
	}
	return "", ""
}

func uploadTooLarge(ctx *fasthttp.RequestCtx, c *call) bool {
	c.surf.writeError(ctx, fasthttp.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
		"the upload exceeds the gateway's limit (server.max_upload_bytes) or a multipart limit (256 parts, 16 KiB of headers per part, 1 MiB of text fields)")
	return false
}

// uploadReadError answers a body the first pass could not read.
func uploadReadError(ctx *fasthttp.RequestCtx, c *call, err error) bool {
	switch {
	case errors.Is(err, multipart.ErrTooLarge):
		return uploadTooLarge(ctx, c)
	case errors.Is(err, multipart.ErrMalformed):
		return badRequest(ctx, c, "invalid_multipart", "the body is not valid multipart/form-data: "+multipartReason(err))
	case errors.Is(err, multipart.ErrSpool):
		c.errClass = "spool"
		c.surf.writeError(ctx, fasthttp.StatusServiceUnavailable, "server_error", "upload_spool_failed",
			"the gateway cannot hold the upload in its temporary directory")
		return false
	}
	c.errClass = "client_gone"
	if upstream.IsTimeout(err) {
		c.surf.writeError(ctx, fasthttp.StatusRequestTimeout, "invalid_request_error", "request_timeout",
			"the upload was not received in time (server.body_timeout)")
		return false
	}
	return badRequest(ctx, c, "bad_request", "cannot read the request body")
}

// multipartReason is the package's static message (it never quotes body
// bytes), without its prefix.
func multipartReason(err error) string {
	var me *multipart.Error
	if errors.As(err, &me) {
		return me.Msg
	}
	return "malformed"
}

// buildUpload builds one attempt's upstream request of an upload: the held
// body, rewound for every attempt after the first, with the target's model
// (and a masked prompt) as a body stream of exact length.
func (p *Proxy) buildUpload(ctx *fasthttp.RequestCtx, c *call, up *snapshot.Upstream) (*fasthttp.Request, *upstream.Client) {
	c.native = true
	u := c.up
	r := u.r
	fail := func() (*fasthttp.Request, *upstream.Client) {
		c.surf.writeError(ctx, fasthttp.StatusInternalServerError, "server_error", "internal_error", "cannot build the upstream request")
		return nil, nil
	}
	if c.attempts > 1 {
		if err := r.Rewind(); err != nil {
			return fail()
		}
	}
	u.val = append(u.val[:0], c.in.UpstreamModel...)
	if _, err := r.Replace("model", u.val); err != nil {
		return fail()
	}
	if !bytes.Equal(c.origBody, u.prompt) { // an input guardrail masked the prompt
		v, _, _ := rawjson.Get(c.origBody, "prompt")
		m, err := rawjson.AppendUnquote(u.val[:0], v)
		if err != nil {
			return fail()
		}
		u.val = m
		if _, err := r.Replace("prompt", u.val); err != nil {
			return fail()
		}
	}
	req := fasthttp.AcquireRequest()
	if err := adapters.BuildUpload(up.Adapter, c.surf.endpoint, req, &c.in, u.ctype); err != nil {
		fasthttp.ReleaseRequest(req)
		if errors.Is(err, adapters.ErrUnsupported) {
			c.errClass = "unsupported"
			c.surf.writeError(ctx, fasthttp.StatusNotImplemented, "invalid_request_error", "not_implemented",
				"The provider of model `"+truncate(c.target.Alias, 256)+"` does not serve "+c.surf.endpoint.String()+".")
			return nil, nil
		}
		return fail()
	}
	req.SetBodyStream(r, int(r.OutputSize(r.BytesRead())))
	return req, up.Client
}

// textAnswer reports whether c's successful answer is text, not JSON
// (a transcription with response_format text, srt or vtt).
func (c *call) textAnswer() bool { return c.up != nil && c.up.format == fmtText && !c.cr.Stream }

var (
	ctJSON = []byte("application/json")
	ctText = []byte("text/plain; charset=utf-8")
)

// writeUpload relays a successful buffered upload answer with the
// upstream's Content-Type after the output policy: an image edit's
// revised_prompt; a transcription's text (the body itself for text, srt
// and vtt; `text` of json; `text`, segments and words of verbose_json — a
// masked verbose answer keeps `text` masked and drops segments and words,
// which repeat it unmasked).
func (p *Proxy) writeUpload(ctx *fasthttp.RequestCtx, c *call, resp *fasthttp.Response) {
	u := c.up
	body := resp.Body()
	if u.format != fmtText {
		c.usage, c.haveUsage = c.surf.nativeUsage(body)
		u.seconds = audioSeconds(body)
	}
	if c.outputOn() {
		var ok bool
		if c.surf == surfImageEdits {
			body, ok = p.guardAnswer(ctx, c, body, guard.ImagesAnswer)
		} else {
			body, ok = p.guardTranscript(ctx, c, body)
		}
		if !ok {
			return
		}
	}
	ctx.SetStatusCode(resp.StatusCode())
	switch ct := resp.Header.ContentType(); {
	case len(ct) > 0:
		ctx.Response.Header.SetContentTypeBytes(ct)
	case u.format == fmtText:
		ctx.Response.Header.SetContentTypeBytes(ctText)
	default:
		ctx.Response.Header.SetContentTypeBytes(ctJSON)
	}
	ctx.SetBody(body)
	c.respBytes = len(body)
	c.ttfb = time.Since(c.start)
}

// guardTranscript judges a transcription's text as output and returns the
// body to relay (masked when a guardrail masked the text).
func (p *Proxy) guardTranscript(ctx *fasthttp.RequestCtx, c *call, body []byte) ([]byte, bool) {
	u := c.up
	text := body
	if u.format != fmtText {
		v, kind, ok := rawjson.Get(body, "text")
		if !ok || kind != rawjson.String {
			text = nil
		} else if t, err := rawjson.AppendUnquote(u.out[:0], v); err == nil {
			u.out, text = t, t
		}
	}
	u.judge = append(u.judge[:0], `{"prompt":`...)
	u.judge = rawjson.AppendQuoteBytes(u.judge, text)
	u.judge = append(u.judge, '}')
	judged, ok := p.guardAnswer(ctx, c, u.judge, guard.ImagesRequest)
	if !ok || bytes.Equal(judged, u.judge) {
		return body, ok
	}
	v, _, _ := rawjson.Get(judged, "prompt")
	masked, err := rawjson.AppendUnquote(u.val[:0], v)
	if err != nil {
		return nil, false
	}
	u.val = masked
	if u.format == fmtText {
		return masked, true
	}
	out, err := rawjson.SetString(u.out[:0], body, "text", string(masked))
	if err != nil {
		return body, true
	}
	if u.format == fmtVerbose {
		for _, k := range [...]string{"segments", "words"} {
			if _, _, ok := rawjson.Get(out, k); ok {
				if d, err := rawjson.Delete(nil, out, k); err == nil {
					out = d
				}
			}
		}
	}
	u.out = out
	return out, true
}

// transcriptionUsage reads a transcription's token usage ({"type":"tokens",
// "input_tokens", "output_tokens", "total_tokens"}). Whisper's duration
// usage ({"type":"duration","seconds"}) has no token counts: no usage is
// recorded for it.
func transcriptionUsage(body []byte) (adapters.Usage, bool) {
	if t, _, ok := rawjson.GetPath(body, "usage", "type"); ok && rawjson.StringEquals(t, "duration") {
		return adapters.Usage{}, false
	}
	return imagesUsage(body)
}

// audioSeconds reads the audio duration of a transcription or translation
// answer: usage {"type":"duration","seconds"} (whisper's json answers and
// done events), else verbose_json's top-level duration (a number, or a
// numeric string as some OpenAI-compatible servers send it); 0 when none.
// The uploaded file's own header is not read: the file part streams through
// edge/multipart without gw looking into it (docs/USAGE.md).
func audioSeconds(body []byte) float64 {
	if t, _, ok := rawjson.GetPath(body, "usage", "type"); ok && rawjson.StringEquals(t, "duration") {
		if v, kind, ok := rawjson.GetPath(body, "usage", "seconds"); ok && kind == rawjson.Number {
			return parseSeconds(v)
		}
	}
	v, kind, ok := rawjson.Get(body, "duration")
	switch {
	case !ok:
		return 0
	case kind == rawjson.String:
		v = v[1 : len(v)-1]
	case kind != rawjson.Number:
		return 0
	}
	return parseSeconds(v)
}

func parseSeconds(v []byte) float64 {
	f, ok := rawjson.ParseFloat(v)
	if !ok || f < 0 || f != f || f > 1e9 {
		return 0
	}
	return f
}

var (
	evTranscriptDelta  = []byte("transcript.text.delta")
	evTranscriptDone   = []byte("transcript.text.done")
	evImageEditPrefix  = []byte("image_edit.")
	evImageEditPartial = []byte("image_edit.partial_image")
	evImageEditDone    = []byte("image_edit.completed")
)

// transcriptEvent relays one transcription event unchanged: deltas are
// content; transcript.text.done ends the stream with the usage.
func transcriptEvent(s *relayState, c *call, ev sse.Event) evFlags {
	typ := eventType(ev)
	s.out = sse.AppendEvent(s.out[:0], ev.Name, ev.Data)
	switch {
	case bytesEq(typ, evTranscriptDelta):
		return evContent
	case bytesEq(typ, evTranscriptDone):
		if u, ok := transcriptionUsage(ev.Data); ok {
			c.usage, c.haveUsage = u, true
		}
		c.up.seconds = audioSeconds(ev.Data)
		return evContent | evEnd
	case bytesEq(typ, evError), rawjson.KindOf(ev.Data) == rawjson.Object && hasErrorMember(ev.Data):
		c.errClass = "upstream_error_event"
		return evEnd | evFailed
	}
	return 0
}

// imageEditEvent relays one image-edit event unchanged, as imagesEvent
// does for generations.
func imageEditEvent(s *relayState, c *call, ev sse.Event) evFlags {
	typ := eventType(ev)
	s.out = sse.AppendEvent(s.out[:0], ev.Name, ev.Data)
	switch {
	case bytesEq(typ, evImageEditDone):
		if u, ok := imagesUsage(ev.Data); ok {
			c.usage, c.haveUsage = u, true
		}
		return evContent | evEnd
	case bytesEq(typ, evImageEditPartial), bytes.HasPrefix(typ, evImageEditPrefix):
		return evContent
	case bytesEq(typ, evError), bytes.HasPrefix(ev.Data, errorPrefixJSON):
		c.errClass = "upstream_error_event"
		return evEnd | evFailed
	}
	return 0
}

// UploadInfo is what the read stage takes from an upload.
type UploadInfo struct {
	Model  string
	Stream bool
	Text   bool   // response_format text, srt or vtt: the answer is relayed as text
	Prompt string // every prompt field, as input guardrails judge them
}

// ParseUploadRequest reads a multipart body of the upload endpoint at path
// (/v1/audio/transcriptions, /v1/audio/translations, /v1/images/edits)
// as the read stage does and returns it with the body an attempt sends
// upstream: the caller's, with model replaced by upstreamModel. The error
// text is the caller-facing message. For tests and fuzzing.
func ParseUploadRequest(path string, contentType, body []byte, upstreamModel string) (UploadInfo, []byte, error) {
	surf := surfTranscriptions
	switch path {
	case pathTranslations:
		surf = surfTranslations
	case pathImageEdits:
		surf = surfImageEdits
	}
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetContentTypeBytes(contentType)
	ctx.Request.SetBody(body)
	c := &call{surf: surf, up: acquireUpload(0)}
	defer releaseUpload(c.up)
	if !readUpload(&ctx, c) {
		msg, _, _ := rawjson.GetPath(ctx.Response.Body(), "error", "message")
		m, _ := rawjson.AppendUnquote(nil, msg)
		return UploadInfo{}, nil, errors.New(string(m))
	}
	r := c.up.r
	prompt, _, _ := rawjson.Get(c.up.prompt, "prompt")
	p, _ := rawjson.AppendUnquote(nil, prompt)
	info := UploadInfo{Model: string(c.cr.Model), Stream: c.cr.Stream, Text: c.up.format == fmtText, Prompt: string(p)}
	if _, err := r.Replace("model", []byte(upstreamModel)); err != nil {
		return info, nil, err
	}
	want := r.OutputSize(r.BytesRead())
	var out bytes.Buffer
	if _, err := r.WriteTo(&out); err != nil {
		return info, nil, err
	}
	if int64(out.Len()) != want {
		return info, nil, errors.New("edge: the upstream body is not the length announced in its Content-Length")
	}
	return info, out.Bytes(), nil
}
