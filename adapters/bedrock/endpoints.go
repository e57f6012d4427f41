package bedrock

import (
	"strings"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/embedconv"
	"gw/sse/rawjson"
)

// Embeddings and rerank go through InvokeModel (/model/{id}/invoke) with
// the model's own body, built from the caller's OpenAI embeddings or
// Cohere rerank body; AnswerEndpoint turns the model's answer back into
// the caller's format. The model family is read from the model id:
//
//	amazon.titan-embed-*   {"inputText"} → {"embedding","inputTextTokenCount"}
//	cohere.embed-*         {"texts","input_type"} → {"embeddings"}
//	cohere.rerank-*        {"query","documents","top_n","api_version":2} → {"results"}
//	amazon.rerank-*        {"query","documents","top_n"} → {"results"}
var (
	_ adapters.EmbeddingsBuilder = (*Adapter)(nil)
	_ adapters.RerankBuilder     = (*Adapter)(nil)
	_ adapters.EndpointAnswerer  = (*Adapter)(nil)
)

const opInvoke = "/invoke"

// hdrInputTokens is the input token count Bedrock reports on every
// InvokeModel answer.
var hdrInputTokens = []byte("X-Amzn-Bedrock-Input-Token-Count")

// embedFamily is the embeddings body a model takes.
type embedFamily uint8

const (
	embedNone embedFamily = iota
	embedTitanText
	embedTitanTextV2
	embedTitanImage
	embedCohere
	embedCohereV4
)

func embedFamilyOf(model string) embedFamily {
	switch {
	case strings.Contains(model, "titan-embed-text-v2"):
		return embedTitanTextV2
	case strings.Contains(model, "titan-embed-image"):
		return embedTitanImage
	case strings.Contains(model, "titan-embed"):
		return embedTitanText
	case strings.Contains(model, "cohere.embed-v4"):
		return embedCohereV4
	case strings.Contains(model, "cohere.embed"):
		return embedCohere
	}
	return embedNone
}

// BuildEmbeddings implements adapters.EmbeddingsBuilder.
func (a *Adapter) BuildEmbeddings(req *fasthttp.Request, in *adapters.ChatInput) error {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	model := in.UpstreamModel
	r, err := embedconv.ParseRequest(in.Body, s.texts[:0])
	s.texts = r.Texts
	defer clear(s.texts) // they point into the caller's body
	if err != nil {
		return err
	}
	b := s.body[:0]
	switch fam := embedFamilyOf(model); fam {
	case embedTitanText, embedTitanTextV2, embedTitanImage:
		if len(r.Texts) != 1 {
			return adapters.RequestError("Titan embedding models embed one text per call: send `input` as one string")
		}
		b = append(append(b, `{"inputText":`...), r.Texts[0]...)
		switch {
		case r.Dimensions == nil:
		case fam == embedTitanTextV2:
			b = append(append(b, `,"dimensions":`...), r.Dimensions...)
		case fam == embedTitanImage:
			b = append(append(append(b, `,"embeddingConfig":{"outputEmbeddingLength":`...), r.Dimensions...), '}')
		default:
			return adapters.RequestError("`dimensions` is not accepted by " + model)
		}
		b = append(b, '}')
	case embedCohere, embedCohereV4:
		b = append(b, `{"texts":[`...)
		for i, t := range r.Texts {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, t...)
		}
		// input_type is required by Cohere embed; documents to index are
		// the common case of an OpenAI-style caller.
		b = append(b, `],"input_type":`...)
		if r.InputType != nil {
			b = append(b, r.InputType...)
		} else {
			b = append(b, `"search_document"`...)
		}
		switch {
		case r.Dimensions == nil:
		case fam == embedCohereV4:
			b = append(append(b, `,"output_dimension":`...), r.Dimensions...)
		default:
			return adapters.RequestError("`dimensions` is not accepted by " + model)
		}
		b = append(b, `,"embedding_types":["float"]}`...)
	default:
		return adapters.RequestError("model " + model + " has no embeddings body gw knows on Bedrock (Titan or Cohere embed models)")
	}
	s.body = b
	return a.send(req, in, s, model, opInvoke, false)
}

// BuildRerank implements adapters.RerankBuilder.
func (a *Adapter) BuildRerank(req *fasthttp.Request, in *adapters.ChatInput) error {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	model := in.UpstreamModel
	r, err := embedconv.ParseRerank(in.Body)
	if err != nil {
		return err
	}
	cohere := strings.Contains(model, "cohere.rerank")
	if !cohere && !strings.Contains(model, "amazon.rerank") {
		return adapters.RequestError("model " + model + " has no rerank body gw knows on Bedrock (cohere.rerank or amazon.rerank models)")
	}
	b := append(append(s.body[:0], `{"query":`...), r.Query...)
	b = append(append(b, `,"documents":`...), r.Documents...)
	if r.TopN != nil {
		b = append(append(b, `,"top_n":`...), r.TopN...)
	}
	if cohere {
		b = append(b, `,"api_version":2`...)
	}
	s.body = append(b, '}')
	return a.send(req, in, s, model, opInvoke, false)
}

var (
	keysEmbedAnswer = []string{"embedding", "inputTextTokenCount", "embeddings", "embeddingsByType"}
	keysRerank      = []string{"id", "results"}
)

// AnswerEndpoint implements adapters.EndpointAnswerer.
func (a *Adapter) AnswerEndpoint(dst []byte, e adapters.Endpoint, reqBody []byte, resp *fasthttp.Response) ([]byte, error) {
	body := resp.Body()
	tokens := int64(-1)
	if n, ok := rawjson.ParseInt(resp.Header.PeekBytes(hdrInputTokens)); ok {
		tokens = n
	}
	switch e {
	case adapters.EndpointEmbeddings:
		var v [4][]byte
		if rawjson.ScanTop(body, keysEmbedAnswer, v[:]) != nil {
			return dst, embedconv.ErrAnswer
		}
		l := embedconv.Begin(dst, rawjson.StringEquals(rawGet(reqBody, "encoding_format"), "base64"))
		switch {
		case v[0] != nil: // Titan
			if err := l.Add(v[0]); err != nil {
				return dst, err
			}
			if n, ok := rawjson.ParseInt(v[1]); ok {
				tokens = n
			}
		case v[2] != nil: // Cohere: a list of vectors, or by type
			vecs := v[2]
			if rawjson.KindOf(vecs) == rawjson.Object {
				vecs, _, _ = rawjson.Get(vecs, "float")
			}
			if rawjson.KindOf(vecs) != rawjson.Array {
				return dst, embedconv.ErrAnswer
			}
			var err error
			if e := rawjson.ForEachElem(vecs, func(_ int, vec []byte, _ rawjson.Kind) bool {
				err = l.Add(vec)
				return err == nil
			}); e != nil || err != nil {
				return dst, embedconv.ErrAnswer
			}
		default:
			return dst, embedconv.ErrAnswer
		}
		return l.End(tokens), nil
	case adapters.EndpointRerank:
		r, err := embedconv.ParseRerank(reqBody)
		if err != nil {
			return dst, err
		}
		var v [2][]byte
		if rawjson.ScanTop(body, keysRerank, v[:]) != nil {
			return dst, embedconv.ErrAnswer
		}
		return embedconv.AppendRerankAnswer(dst, v[0], v[1], &r, tokens)
	}
	return append(dst, body...), nil
}

// rawGet is rawjson.Get's value alone.
func rawGet(body []byte, key string) []byte {
	v, _, _ := rawjson.Get(body, key)
	return v
}
