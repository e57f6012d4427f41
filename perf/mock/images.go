package mock

import (
	"bufio"
	"bytes"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"gw/sse/rawjson"
)

// OpenAI Images: POST .../images/generations (JSON). Each image is a 1×1
// PNG (MockPNG), base64 in b64_json, or a URL with response_format: url.
// With "stream": true (gpt-image-1) the answer is partial_images
// image_generation.partial_image events, then image_generation.completed
// with the usage.

var openAIImagesRoute = route{
	method:      fasthttp.MethodPost,
	match:       func(path []byte) bool { return bytes.HasSuffix(path, strImagesGenPath) },
	serve:       (*Server).serveOpenAIImages,
	appendError: appendOpenAIError,
}

// MockPNG is the base64 of the 1×1 PNG every mock image is.
const MockPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGMQaPgAAAIkAYFvkeRkAAAAAElFTkSuQmCC"

var (
	strImagesGenPath = []byte("/images/generations")
	imageKeys        = []string{"model", "prompt", "n", "stream", "partial_images", "response_format", "size"}
)

func (s *Server) serveOpenAIImages(ctx *fasthttp.RequestCtx, k *Knobs) {
	body := ctx.PostBody()
	var v [7][]byte
	if !rawjson.Valid(body) || rawjson.ScanTop(body, imageKeys, v[:]) != nil {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, msgBadJSON)
		return
	}
	if rawjson.KindOf(v[1]) != rawjson.String || len(v[1]) < 3 {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "Missing required parameter: 'prompt'.")
		return
	}
	n := int64(1)
	if v[2] != nil {
		var ok bool
		if n, ok = rawjson.ParseInt(v[2]); !ok || n < 1 || n > 10 {
			s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "Invalid 'n': must be an integer from 1 to 10.")
			return
		}
	}
	size := "1024x1024"
	if rawjson.KindOf(v[6]) == rawjson.String {
		size = string(v[6][1 : len(v[6])-1])
	}
	id := s.seq.Add(1)
	setRequestID(ctx, id)
	created := time.Now().Unix()
	in := int64(promptTokens(len(v[1])))
	out := int64(k.Chunks) * 16 * n
	usage := func(dst []byte) []byte {
		dst = append(dst, `"usage":{"input_tokens":`...)
		dst = strconv.AppendInt(dst, in, 10)
		dst = append(dst, `,"input_tokens_details":{"text_tokens":`...)
		dst = strconv.AppendInt(dst, in, 10)
		dst = append(dst, `,"image_tokens":0},"output_tokens":`...)
		dst = strconv.AppendInt(dst, out, 10)
		dst = append(dst, `,"total_tokens":`...)
		dst = strconv.AppendInt(dst, in+out, 10)
		return append(dst, '}')
	}
	if rawjson.KindOf(v[3]) != rawjson.True {
		url := rawjson.StringEquals(v[5], "url")
		b := append([]byte(nil), `{"created":`...)
		b = strconv.AppendInt(b, created, 10)
		b = append(b, `,"data":[`...)
		for i := int64(0); i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			if url {
				b = append(b, `{"url":"https://mock.invalid/images/`...)
				b = strconv.AppendUint(b, id, 10)
				b = append(b, '-')
				b = strconv.AppendInt(b, i, 10)
				b = append(b, `.png"`...)
			} else {
				b = append(b, `{"b64_json":"`+MockPNG+`"`...)
			}
			b = append(b, `,"revised_prompt":`...)
			b = append(b, v[1]...)
			b = append(b, '}')
		}
		b = append(b, `],"background":"opaque","output_format":"png","quality":"high","size":"`...)
		b = append(b, size...)
		b = append(usage(append(b, `",`...)), '}')
		ctx.SetStatusCode(fasthttp.StatusOK)
		ctx.SetContentTypeBytes(strJSON)
		ctx.SetBody(b)
		return
	}
	partials, _ := rawjson.ParseInt(v[4])
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
			b = append(b, `,"size":"`...)
			b = append(b, size...)
			b = append(b, `","quality":"high","background":"opaque","output_format":"png",`...)
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
			if !event("image_generation.partial_image", func(b []byte) []byte {
				return strconv.AppendInt(append(b, `"partial_image_index":`...), i, 10)
			}) {
				return
			}
		}
		event("image_generation.completed", usage)
	})
}
