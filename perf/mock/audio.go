package mock

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"strconv"

	"github.com/valyala/fasthttp"

	"gw/sse/rawjson"
)

// OpenAI Speech: POST .../audio/speech. The audio is deterministic bytes
// (SpeechAudio) sent as Chunks writes of ChunkSize*128 bytes, ChunkDelay
// apart (the stall knobs apply), with the Content-Type of
// response_format. With "stream_format": "sse" the same bytes go out as
// speech.audio.delta events (base64), then speech.audio.done with the usage.

var openAISpeechRoute = route{
	method:      fasthttp.MethodPost,
	match:       func(path []byte) bool { return bytes.HasSuffix(path, strSpeechPath) },
	serve:       (*Server).serveOpenAISpeech,
	appendError: appendOpenAIError,
}

var (
	strSpeechPath = []byte("/audio/speech")
	speechKeys    = []string{"model", "input", "voice", "response_format", "stream_format"}
	speechTypes   = map[string]string{"mp3": "audio/mpeg", "opus": "audio/ogg", "aac": "audio/aac", "flac": "audio/flac", "wav": "audio/wav", "pcm": "audio/pcm"}
)

// speechChunkScale makes one audio chunk ChunkSize*speechChunkScale bytes.
const speechChunkScale = 128

// SpeechAudio returns the mock's audio for chunks pieces of chunkSize
// knob bytes: what a caller of /audio/speech receives, byte for byte.
func SpeechAudio(chunks, chunkSize int) []byte {
	return appendFiller(nil, 0, chunks*chunkSize*speechChunkScale)
}

func (s *Server) serveOpenAISpeech(ctx *fasthttp.RequestCtx, k *Knobs) {
	body := ctx.PostBody()
	var v [5][]byte
	if !rawjson.Valid(body) || rawjson.ScanTop(body, speechKeys, v[:]) != nil {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, msgBadJSON)
		return
	}
	if rawjson.KindOf(v[1]) != rawjson.String || len(v[1]) < 3 || v[2] == nil {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "'input' and 'voice' are required.")
		return
	}
	if k.Chunks*k.ChunkSize*speechChunkScale > maxContentSize {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, msgTooLarge)
		return
	}
	format := "mp3"
	if rawjson.KindOf(v[3]) == rawjson.String {
		format = string(v[3][1 : len(v[3])-1])
	}
	ctype, ok := speechTypes[format]
	if !ok {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "Invalid value for 'response_format'.")
		return
	}
	sseOut := rawjson.StringEquals(v[4], "sse")
	in := int64(promptTokens(len(v[1])))
	setRequestID(ctx, s.seq.Add(1))
	kk := *k
	ctx.SetStatusCode(fasthttp.StatusOK)
	if sseOut {
		ctx.SetContentType("text/event-stream")
	} else {
		ctx.SetContentType(ctype)
	}
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer s.stats.inFlight.Add(-1)
		size := kk.ChunkSize * speechChunkScale
		var b []byte
		if kk.FirstTokenDelay > 0 && !s.sleep(kk.FirstTokenDelay) {
			return
		}
		for i := 0; i < kk.Chunks; i++ {
			if i > 0 && kk.ChunkDelay > 0 && !s.sleep(kk.ChunkDelay) {
				return
			}
			if kk.Stall && i == kk.StallAfter && !s.sleep(kk.StallFor) {
				return
			}
			piece := appendFiller(nil, i*size, size)
			if sseOut {
				b = append(b[:0], `data: {"type":"speech.audio.delta","audio":"`...)
				b = base64.StdEncoding.AppendEncode(b, piece)
				b = append(b, "\"}\n\n"...)
			} else {
				b = piece
			}
			if _, err := w.Write(b); err != nil || w.Flush() != nil {
				return
			}
		}
		if sseOut {
			out := int64(kk.Chunks)
			b = append(b[:0], `data: {"type":"speech.audio.done","usage":{"input_tokens":`...)
			b = strconv.AppendInt(b, in, 10)
			b = append(b, `,"output_tokens":`...)
			b = strconv.AppendInt(b, out, 10)
			b = append(b, `,"total_tokens":`...)
			b = strconv.AppendInt(b, in+out, 10)
			b = append(b, "}}\n\n"...)
			_, _ = w.Write(b)
			_ = w.Flush()
		}
	})
}
