package vertex

import (
	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/embedconv"
	"gw/sse/rawjson"
)

// Embeddings on Gemini keys: the text-embedding and gemini-embedding models
// of publishers/google answer `predict`:
//
//	{"instances":[{"content":...,"task_type"?}],"parameters":{"outputDimensionality"?}}
//	→ {"predictions":[{"embeddings":{"values":[...],"statistics":{"token_count":n}}}]}
//
// Claude and partner-model keys serve no embeddings (Capable).
var (
	_ adapters.EmbeddingsBuilder = (*Adapter)(nil)
	_ adapters.EndpointAnswerer  = (*Adapter)(nil)
	_ adapters.Capable           = (*Adapter)(nil)
)

const sfxPredict = ":predict"

// Serves implements adapters.Capable.
func (a *Adapter) Serves(e adapters.Endpoint) bool {
	return e == adapters.EndpointEmbeddings && a.mode == ModeGemini
}

// BuildEmbeddings implements adapters.EmbeddingsBuilder.
func (a *Adapter) BuildEmbeddings(req *fasthttp.Request, in *adapters.ChatInput) error {
	if a.mode != ModeGemini {
		return adapters.ErrUnsupported
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	r, err := embedconv.ParseRequest(in.Body, s.texts[:0])
	s.texts = r.Texts
	defer clear(s.texts) // they point into the caller's body
	if err != nil {
		return err
	}
	b := append(s.body[:0], `{"instances":[`...)
	for i, t := range r.Texts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(b, `{"content":`...), t...)
		if r.InputType != nil {
			b = append(append(b, `,"task_type":`...), r.InputType...)
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if r.Dimensions != nil {
		b = append(append(b, `,"parameters":{"outputDimensionality":`...), r.Dimensions...)
		b = append(b, '}')
	}
	s.body = append(b, '}')
	s.url = appendModelURL(append(s.url[:0], a.prefix...), in.UpstreamModel, sfxPredict)
	return a.finish(req, in, s)
}

var (
	keysPrediction = []string{"embeddings"}
	keysEmbedding  = []string{"values", "statistics"}
)

// AnswerEndpoint implements adapters.EndpointAnswerer: predictions become
// an OpenAI embeddings list; usage is the sum of the token counts.
func (a *Adapter) AnswerEndpoint(dst []byte, e adapters.Endpoint, reqBody []byte, resp *fasthttp.Response) ([]byte, error) {
	if e != adapters.EndpointEmbeddings || a.mode != ModeGemini {
		return append(dst, resp.Body()...), nil
	}
	preds, kind, _ := rawjson.Get(resp.Body(), "predictions")
	if kind != rawjson.Array {
		return dst, embedconv.ErrAnswer
	}
	enc, _, _ := rawjson.Get(reqBody, "encoding_format")
	l := embedconv.Begin(dst, rawjson.StringEquals(enc, "base64"))
	var tokens int64
	var err error
	ferr := rawjson.ForEachElem(preds, func(_ int, p []byte, _ rawjson.Kind) bool {
		var pv [1][]byte
		var ev [2][]byte
		if rawjson.ScanTop(p, keysPrediction, pv[:]) != nil || rawjson.ScanTop(pv[0], keysEmbedding, ev[:]) != nil {
			err = embedconv.ErrAnswer
			return false
		}
		if err = l.Add(ev[0]); err != nil {
			return false
		}
		if n, _, ok := rawjson.Get(ev[1], "token_count"); ok {
			if t, ok := rawjson.ParseFloat(n); ok {
				tokens += int64(t)
			}
		}
		return true
	})
	if ferr != nil || err != nil {
		return dst, embedconv.ErrAnswer
	}
	return l.End(tokens), nil
}
