package mock

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"
)

// AWS Bedrock InvokeModel for embeddings and rerank: POST .../model/{modelId}/invoke,
// signed like Converse. The body is the model's own, checked as strictly as Bedrock
// does (an unknown member is a 400 ValidationException):
//
//	amazon.titan-embed-*  {"inputText", "dimensions"?, "normalize"?, "embeddingConfig"?}
//	                      → {"embedding":[...],"inputTextTokenCount":n}
//	cohere.embed-*        {"texts", "input_type", "truncate"?, "embedding_types"?, "output_dimension"?}
//	                      → {"id","embeddings":[[...]] or {"float":[[...]]},"response_type","texts"}
//	cohere.rerank-*       {"query","documents","top_n"?,"api_version":2} → {"id","results":[{index,relevance_score}]}
//	amazon.rerank-*       {"query","documents","top_n"?} → {"results":[...]}
//
// Vectors are the mock's deterministic Embedding of each text; rerank scores are the
// cosine of the query's and the document's vectors, as /rerank scores them. Every answer
// carries X-Amzn-Bedrock-Input-Token-Count.

var strInvoke = []byte("/invoke")

const hdrBedrockInputTokens = "X-Amzn-Bedrock-Input-Token-Count"

func (s *Server) serveBedrockInvoke(ctx *fasthttp.RequestCtx, k *Knobs) {
	if typ, msg := verifyBedrockSignature(ctx); typ != "" {
		s.bedrockError(ctx, fasthttp.StatusForbidden, typ, msg)
		return
	}
	path := ctx.Path()
	i := bytes.Index(path, strBedrockModel) + len(strBedrockModel)
	if bytes.HasSuffix(path, strInvokeStream) {
		s.serveBedrockClaude(ctx, k, path[i:max(i, len(path)-len(strInvokeStream))], true) // bedrock_messages.go
		return
	}
	if m := path[i:max(i, len(path)-len(strInvoke))]; isBedrockClaude(m) {
		s.serveBedrockClaude(ctx, k, m, false)
		return
	}
	model := string(path[i:max(i, len(path)-len(strInvoke))])
	invalid := func(msg string) {
		s.bedrockError(ctx, fasthttp.StatusBadRequest, "ValidationException", msg)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(ctx.PostBody(), &body); err != nil {
		invalid("Malformed input request, please reformat your input and try again.")
		return
	}
	allowed := func(keys ...string) bool {
	next:
		for name := range body {
			for _, k := range keys {
				if name == k {
					continue next
				}
			}
			invalid("Malformed input request: #: extraneous key [" + name + "] is not permitted, please reformat your input and try again.")
			return false
		}
		return true
	}
	var out []byte
	tokens := 0
	switch {
	case strings.Contains(model, "titan-embed"):
		if !allowed("inputText", "dimensions", "normalize", "embeddingConfig", "embeddingTypes") {
			return
		}
		var in struct {
			InputText  *string `json:"inputText"`
			Dimensions int     `json:"dimensions"`
			Config     struct {
				Length int `json:"outputEmbeddingLength"`
			} `json:"embeddingConfig"`
		}
		if json.Unmarshal(ctx.PostBody(), &in) != nil || in.InputText == nil {
			invalid("Malformed input request: #: required key [inputText] not found, please reformat your input and try again.")
			return
		}
		dims := 1024
		if strings.Contains(model, "text-v1") || strings.Contains(model, "g1-text") {
			dims = 1536
		}
		if in.Dimensions > 0 {
			dims = in.Dimensions
		}
		if in.Config.Length > 0 {
			dims = in.Config.Length
		}
		tokens = max(1, len(*in.InputText)/4)
		out = append(appendFloats(append(out, `{"embedding":`...), Embedding([]byte(*in.InputText), dims)), `,"inputTextTokenCount":`...)
		out = append(strconv.AppendInt(out, int64(tokens), 10), '}')
	case strings.Contains(model, "cohere.embed"):
		if !allowed("texts", "input_type", "truncate", "embedding_types", "output_dimension", "images", "inputs", "max_tokens") {
			return
		}
		var in struct {
			Texts     []string `json:"texts"`
			InputType string   `json:"input_type"`
			Types     []string `json:"embedding_types"`
			Dims      int      `json:"output_dimension"`
		}
		if json.Unmarshal(ctx.PostBody(), &in) != nil || len(in.Texts) == 0 || in.InputType == "" {
			invalid("Malformed input request: #: required key [input_type] not found or texts empty, please reformat your input and try again.")
			return
		}
		dims := 1024
		if strings.Contains(model, "embed-v4") {
			dims = 1536
			if in.Dims > 0 {
				dims = in.Dims
			}
		}
		byType := len(in.Types) > 0
		out = append(out, `{"id":"mock-embed-`...)
		out = strconv.AppendUint(out, s.seq.Add(1), 10)
		out = append(out, `","embeddings":`...)
		if byType {
			out = append(out, `{"float":`...)
		}
		out = append(out, '[')
		for j, t := range in.Texts {
			if j > 0 {
				out = append(out, ',')
			}
			out = appendFloats(out, Embedding([]byte(t), dims))
			tokens += max(1, len(t)/4)
		}
		out = append(out, ']')
		if byType {
			out = append(out, `},"response_type":"embeddings_by_type"`...)
		} else {
			out = append(out, `,"response_type":"embeddings_floats"`...)
		}
		texts, _ := json.Marshal(in.Texts)
		out = append(append(append(out, `,"texts":`...), texts...), '}')
	case strings.Contains(model, "cohere.rerank"), strings.Contains(model, "amazon.rerank"):
		cohere := strings.Contains(model, "cohere.rerank")
		keys := []string{"query", "documents", "top_n"}
		if cohere {
			keys = append(keys, "api_version", "max_tokens_per_doc")
		}
		if !allowed(keys...) {
			return
		}
		var in struct {
			Query      *string           `json:"query"`
			Documents  []json.RawMessage `json:"documents"`
			TopN       int               `json:"top_n"`
			APIVersion int               `json:"api_version"`
		}
		if json.Unmarshal(ctx.PostBody(), &in) != nil || in.Query == nil || len(in.Documents) == 0 || cohere && in.APIVersion != 2 {
			invalid("Malformed input request: query, documents and (cohere) api_version 2 are required, please reformat your input and try again.")
			return
		}
		type result struct {
			index int
			score float64
		}
		results := make([]result, len(in.Documents))
		const dims = 64
		qv := Embedding([]byte(*in.Query), dims)
		tokens = max(1, len(*in.Query)/4)
		for j, d := range in.Documents {
			var text string
			if json.Unmarshal(d, &text) != nil {
				var obj struct {
					Text string `json:"text"`
				}
				_ = json.Unmarshal(d, &obj)
				text = obj.Text
			}
			tokens += max(1, len(text)/4)
			dv := Embedding([]byte(text), dims)
			var dot float64
			for m := range qv {
				dot += float64(qv[m]) * float64(dv[m])
			}
			results[j] = result{j, (dot + 1) / 2}
		}
		sort.SliceStable(results, func(a, b int) bool { return results[a].score > results[b].score })
		if in.TopN > 0 && in.TopN < len(results) {
			results = results[:in.TopN]
		}
		out = append(out, '{')
		if cohere {
			out = append(out, `"id":"mock-rerank-`...)
			out = append(strconv.AppendUint(out, s.seq.Add(1), 10), `",`...)
		}
		out = append(out, `"results":[`...)
		for j, r := range results {
			if j > 0 {
				out = append(out, ',')
			}
			out = append(strconv.AppendInt(append(out, `{"index":`...), int64(r.index), 10), `,"relevance_score":`...)
			out = append(strconv.AppendFloat(out, r.score, 'g', 6, 64), '}')
		}
		out = append(out, "]}"...)
	default:
		invalid("The provided model identifier is invalid or does not support InvokeModel in the mock: " + model)
		return
	}
	ctx.Response.Header.Set(hdrBedrockInputTokens, strconv.Itoa(tokens))
	setBedrockRequestID(ctx, s.seq.Add(1))
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentTypeBytes(strJSON)
	ctx.SetBody(out)
}

// appendFloats appends v as a JSON array.
func appendFloats(dst []byte, v []float32) []byte {
	dst = append(dst, '[')
	for i, f := range v {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendFloat(dst, float64(f), 'g', -1, 32)
	}
	return append(dst, ']')
}
