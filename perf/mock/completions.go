package mock

import (
	"bufio"
	"bytes"
	"sort"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"gw/sse/rawjson"
)

// OpenAI legacy Completions: POST .../completions (not .../chat/completions,
// which the chat route takes first). The text is the mock's filler, Chunks
// pieces of ChunkSize bytes; a stream sends one text_completion chunk per
// piece, a final chunk with finish_reason, the usage chunk when
// stream_options.include_usage is set, then data: [DONE].
//
// Rerank (Cohere/Jina shape): POST .../rerank. Each document's
// relevance_score is the cosine of the mock embeddings of query and
// document (deterministic), results sorted by score and cut to top_n.

var openAICompletionsRoute = route{
	method: fasthttp.MethodPost,
	match: func(path []byte) bool {
		return bytes.HasSuffix(path, strCompletionsPath) && !bytes.HasSuffix(path, strChatCompletionsPath)
	},
	serve:       (*Server).serveOpenAICompletions,
	appendError: appendOpenAIError,
}

var rerankRoute = route{
	method:      fasthttp.MethodPost,
	match:       func(path []byte) bool { return bytes.HasSuffix(path, strRerankPath) },
	serve:       (*Server).serveRerank,
	appendError: appendOpenAIError,
}

var (
	strCompletionsPath = []byte("/completions")
	strRerankPath      = []byte("/rerank")
	completionKeys     = []string{"model", "prompt", "stream", "stream_options"}
	rerankKeys         = []string{"model", "query", "documents", "top_n", "return_documents"}
)

func (s *Server) serveOpenAICompletions(ctx *fasthttp.RequestCtx, k *Knobs) {
	body := ctx.PostBody()
	var v [4][]byte
	if !rawjson.Valid(body) || rawjson.ScanTop(body, completionKeys, v[:]) != nil {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, msgBadJSON)
		return
	}
	if rawjson.KindOf(v[0]) != rawjson.String || len(v[0]) < 3 {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, msgNoModel)
		return
	}
	if v[1] == nil {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "Missing required parameter: 'prompt'.")
		return
	}
	if k.Chunks*k.ChunkSize > maxContentSize {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, msgTooLarge)
		return
	}
	id := s.seq.Add(1)
	created := time.Now().Unix()
	model := appendEscaped(append([]byte(nil), v[0][1:len(v[0])-1]...), k.ModelSuffix)
	prompt := promptTokens(len(body))
	usage := func(dst []byte) []byte {
		dst = append(dst, `"usage":{"prompt_tokens":`...)
		dst = strconv.AppendInt(dst, int64(prompt), 10)
		dst = append(dst, `,"completion_tokens":`...)
		dst = strconv.AppendInt(dst, int64(k.Chunks), 10)
		dst = append(dst, `,"total_tokens":`...)
		dst = strconv.AppendInt(dst, int64(prompt+k.Chunks), 10)
		return append(dst, '}')
	}
	head := func(dst []byte) []byte {
		dst = append(dst, `{"id":"cmpl-mock-`...)
		dst = strconv.AppendUint(dst, id, 10)
		dst = append(dst, `","object":"text_completion","created":`...)
		dst = strconv.AppendInt(dst, created, 10)
		dst = append(dst, `,"model":"`...)
		dst = append(dst, model...)
		return append(dst, `",`...)
	}
	setRequestID(ctx, id)
	if rawjson.KindOf(v[2]) != rawjson.True {
		out := head(nil)
		out = append(out, `"choices":[{"text":"`...)
		out = appendFiller(out, 0, k.Chunks*k.ChunkSize)
		out = append(out, `","index":0,"logprobs":null,"finish_reason":"stop"}],`...)
		out = append(usage(out), '}')
		ctx.SetStatusCode(fasthttp.StatusOK)
		ctx.SetContentTypeBytes(strJSON)
		ctx.SetBody(out)
		return
	}
	inclUsage := false
	if u, kind, ok := rawjson.Get(v[3], "include_usage"); ok && kind == rawjson.True && len(u) > 0 {
		inclUsage = true
	}
	kk := *k
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("text/event-stream")
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer s.stats.inFlight.Add(-1)
		var b []byte
		send := func() bool {
			_, err := w.Write(b)
			return err == nil && w.Flush() == nil
		}
		if kk.FirstTokenDelay > 0 && !s.sleep(kk.FirstTokenDelay) {
			return
		}
		for i := 0; i < kk.Chunks; i++ {
			if i > 0 && kk.ChunkDelay > 0 && !s.sleep(kk.ChunkDelay) {
				return
			}
			if kk.StreamError && i == kk.StreamErrorAfter {
				b = append(b[:0], strChatStreamError...)
				send()
				return
			}
			b = append(head(append(b[:0], "data: "...)), `"choices":[{"text":"`...)
			b = appendFiller(b, i*kk.ChunkSize, kk.ChunkSize)
			b = append(b, `","index":0,"logprobs":null,"finish_reason":null}]`...)
			if inclUsage {
				b = append(b, `,"usage":null`...)
			}
			b = append(b, "}\n\n"...)
			if !send() {
				return
			}
		}
		b = append(head(append(b[:0], "data: "...)), `"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}]`...)
		if inclUsage {
			b = append(b, `,"usage":null`...)
		}
		b = append(b, "}\n\n"...)
		if inclUsage {
			b = append(head(append(b, "data: "...)), `"choices":[],`...)
			b = append(usage(b), "}\n\n"...)
		}
		if !kk.NoDone {
			b = append(b, strSSEDone...)
		}
		send()
	})
}

func (s *Server) serveRerank(ctx *fasthttp.RequestCtx, k *Knobs) {
	body := ctx.PostBody()
	var v [5][]byte
	if !rawjson.Valid(body) || rawjson.ScanTop(body, rerankKeys, v[:]) != nil {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, msgBadJSON)
		return
	}
	if rawjson.KindOf(v[0]) != rawjson.String || len(v[0]) < 3 {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, msgNoModel)
		return
	}
	query, err := rawjson.AppendUnquote(nil, v[1])
	if rawjson.KindOf(v[1]) != rawjson.String || err != nil || rawjson.KindOf(v[2]) != rawjson.Array {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "'query' (a string) and 'documents' (an array) are required.")
		return
	}
	type result struct {
		index int
		score float64
		doc   []byte // raw JSON: a string or an object
		text  []byte
	}
	var results []result
	_ = rawjson.ForEachElem(v[2], func(i int, d []byte, kind rawjson.Kind) bool {
		r := result{index: i, doc: d}
		switch kind {
		case rawjson.String:
			r.text, _ = rawjson.AppendUnquote(nil, d)
		case rawjson.Object:
			if t, tk, ok := rawjson.Get(d, "text"); ok && tk == rawjson.String {
				r.text, _ = rawjson.AppendUnquote(nil, t)
			} else {
				r.text = d
			}
		}
		results = append(results, r)
		return true
	})
	const dims = 64
	qv := Embedding(query, dims)
	for i := range results {
		dv := Embedding(results[i].text, dims)
		var dot float64
		for j := range qv {
			dot += float64(qv[j]) * float64(dv[j])
		}
		results[i].score = (dot + 1) / 2 // cosine in [-1,1] → a relevance in [0,1]
	}
	sort.SliceStable(results, func(a, b int) bool { return results[a].score > results[b].score })
	if n, ok := rawjson.ParseInt(v[3]); ok && n > 0 && int(n) < len(results) {
		results = results[:n]
	}
	withDocs := rawjson.KindOf(v[4]) == rawjson.True
	id := s.seq.Add(1)
	out := append([]byte(nil), `{"id":"rerank-mock-`...)
	out = strconv.AppendUint(out, id, 10)
	out = append(out, `","model":"`...)
	out = append(out, v[0][1:len(v[0])-1]...)
	out = appendEscaped(out, k.ModelSuffix)
	out = append(out, `","results":[`...)
	for i, r := range results {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"index":`...)
		out = strconv.AppendInt(out, int64(r.index), 10)
		out = append(out, `,"relevance_score":`...)
		out = strconv.AppendFloat(out, r.score, 'g', 6, 64)
		if withDocs {
			out = append(out, `,"document":`...)
			if rawjson.KindOf(r.doc) == rawjson.String {
				out = append(append(append(out, `{"text":`...), r.doc...), '}')
			} else {
				out = append(out, r.doc...)
			}
		}
		out = append(out, '}')
	}
	out = append(out, `],"usage":{"total_tokens":`...)
	out = strconv.AppendInt(out, int64(promptTokens(len(body))), 10)
	out = append(out, "}}"...)
	setRequestID(ctx, id)
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentTypeBytes(strJSON)
	ctx.SetBody(out)
}
