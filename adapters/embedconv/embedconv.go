// Package embedconv converts between the caller-facing embeddings and
// rerank bodies (OpenAI /v1/embeddings, Cohere/Jina /v1/rerank) and the
// pieces of upstream bodies that carry them in another shape (Bedrock
// InvokeModel, Vertex predict), on the raw bytes (gw/sse/rawjson).
package embedconv

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"strconv"

	"gw/adapters"
	"gw/sse/rawjson"
)

// ErrAnswer means an upstream answer lacks the members its format needs.
var ErrAnswer = errors.New("the upstream answer is not the embeddings or rerank body its model returns")

// Request is what an embeddings body says.
type Request struct {
	// Texts are the inputs as JSON string literals, in order.
	Texts [][]byte
	// Dimensions is the raw `dimensions` number (nil when absent).
	Dimensions []byte
	// Base64 is encoding_format "base64".
	Base64 bool
	// InputType is the caller's `input_type` (Cohere) or `task_type`
	// (Vertex) literal, nil when absent.
	InputType []byte
}

var reqKeys = []string{"input", "dimensions", "encoding_format", "input_type", "task_type"}

// ParseRequest reads an embeddings body (the edge checked its shapes).
// Token-array inputs are a RequestError: these upstreams take text only.
// texts is reused for Request.Texts.
func ParseRequest(body []byte, texts [][]byte) (Request, error) {
	var v [5][]byte
	var r Request
	if rawjson.ScanTop(body, reqKeys, v[:]) != nil {
		return r, adapters.ErrBody
	}
	r.Texts = texts[:0]
	switch rawjson.KindOf(v[0]) {
	case rawjson.String:
		r.Texts = append(r.Texts, v[0])
	case rawjson.Array:
		err := rawjson.ForEachElem(v[0], func(_ int, val []byte, kind rawjson.Kind) bool {
			if kind != rawjson.String {
				return false
			}
			r.Texts = append(r.Texts, val)
			return true
		})
		if err != nil || len(r.Texts) == 0 || rawjson.KindOf(v[0]) == rawjson.Array && countElems(v[0]) != len(r.Texts) {
			return r, adapters.RequestError("`input` must be a string or an array of strings for this provider: token arrays are not accepted")
		}
	default:
		return r, adapters.RequestError("`input` must be a string or an array of strings")
	}
	if rawjson.KindOf(v[1]) == rawjson.Number {
		r.Dimensions = v[1]
	}
	r.Base64 = rawjson.StringEquals(v[2], "base64")
	if rawjson.KindOf(v[3]) == rawjson.String {
		r.InputType = v[3]
	} else if rawjson.KindOf(v[4]) == rawjson.String {
		r.InputType = v[4]
	}
	return r, nil
}

func countElems(arr []byte) int {
	n := 0
	_ = rawjson.ForEachElem(arr, func(int, []byte, rawjson.Kind) bool { n++; return true })
	return n
}

// List writes an OpenAI embeddings list:
// {"object":"list","data":[{"object":"embedding","index":i,"embedding":...}],
// "model":"","usage":{...}}; the edge sets model to the alias.
type List struct {
	out    []byte
	n      int
	base64 bool
	raw    []byte // float32 little-endian scratch of one vector
}

// Begin starts a list in dst; base64 selects encoding_format base64.
func Begin(dst []byte, base64 bool) List {
	return List{out: append(dst, `{"object":"list","data":[`...), base64: base64}
}

// Add appends one vector given as a JSON array of numbers.
func (l *List) Add(vec []byte) error {
	if rawjson.KindOf(vec) != rawjson.Array {
		return ErrAnswer
	}
	if l.n > 0 {
		l.out = append(l.out, ',')
	}
	l.out = append(l.out, `{"object":"embedding","index":`...)
	l.out = strconv.AppendInt(l.out, int64(l.n), 10)
	l.out = append(l.out, `,"embedding":`...)
	l.n++
	if !l.base64 {
		// Relayed as written once every element is a number: the answer
		// must stay JSON whatever the upstream sent.
		bad := false
		if err := rawjson.ForEachElem(vec, func(_ int, _ []byte, kind rawjson.Kind) bool {
			bad = kind != rawjson.Number
			return !bad
		}); err != nil || bad {
			return ErrAnswer
		}
		l.out = append(l.out, vec...)
		l.out = append(l.out, '}')
		return nil
	}
	// base64 is the vector's float32 values, little-endian, as OpenAI
	// encodes them.
	l.raw = l.raw[:0]
	bad := false
	err := rawjson.ForEachElem(vec, func(_ int, val []byte, kind rawjson.Kind) bool {
		f, ok := rawjson.ParseFloat(val)
		if kind != rawjson.Number || !ok {
			bad = true
			return false
		}
		l.raw = binary.LittleEndian.AppendUint32(l.raw, math.Float32bits(float32(f)))
		return true
	})
	if err != nil || bad {
		return ErrAnswer
	}
	l.out = append(l.out, '"')
	l.out = base64.StdEncoding.AppendEncode(l.out, l.raw)
	l.out = append(l.out, `"}`...)
	return nil
}

// Len is the number of vectors added.
func (l *List) Len() int { return l.n }

// End closes the list with the prompt token count (tokens < 0: no usage
// member) and returns it.
func (l *List) End(tokens int64) []byte {
	l.out = append(l.out, `],"model":""`...)
	if tokens >= 0 {
		l.out = append(l.out, `,"usage":{"prompt_tokens":`...)
		l.out = strconv.AppendInt(l.out, tokens, 10)
		l.out = append(l.out, `,"total_tokens":`...)
		l.out = strconv.AppendInt(l.out, tokens, 10)
		l.out = append(l.out, '}')
	}
	return append(l.out, '}')
}

// Rerank is what a rerank body says.
type Rerank struct {
	Query, Documents, TopN []byte // raw members; TopN nil when absent
	ReturnDocuments        bool
}

var rerankKeys = []string{"query", "documents", "top_n", "return_documents"}

// ParseRerank reads a rerank body (the edge checked its shapes).
func ParseRerank(body []byte) (Rerank, error) {
	var v [4][]byte
	if rawjson.ScanTop(body, rerankKeys, v[:]) != nil || rawjson.KindOf(v[0]) != rawjson.String || rawjson.KindOf(v[1]) != rawjson.Array {
		return Rerank{}, adapters.ErrBody
	}
	r := Rerank{Query: v[0], Documents: v[1], ReturnDocuments: rawjson.KindOf(v[3]) == rawjson.True}
	if rawjson.KindOf(v[2]) == rawjson.Number {
		r.TopN = v[2]
	}
	return r, nil
}

// AppendRerankAnswer appends the Cohere-shaped rerank answer
// {"id":...,"results":[{"index","relevance_score"[,"document"]}],"model":"",
// "usage":{...}} for an upstream results array whose entries carry index and
// relevance_score (Cohere and Amazon rerank on Bedrock). With
// return_documents each result carries its document from the caller's
// documents: {"text": ...} for a string, the object as sent otherwise.
// tokens < 0 writes no usage.
func AppendRerankAnswer(dst []byte, id, results []byte, r *Rerank, tokens int64) ([]byte, error) {
	if rawjson.KindOf(results) != rawjson.Array {
		return dst, ErrAnswer
	}
	out := append(dst, `{"id":`...)
	if rawjson.KindOf(id) == rawjson.String {
		out = append(out, id...)
	} else {
		out = append(out, `""`...)
	}
	out = append(out, `,"results":[`...)
	bad := false
	err := rawjson.ForEachElem(results, func(i int, res []byte, _ rawjson.Kind) bool {
		var v [2][]byte
		if rawjson.ScanTop(res, resultKeys, v[:]) != nil || rawjson.KindOf(v[0]) != rawjson.Number || rawjson.KindOf(v[1]) != rawjson.Number {
			bad = true
			return false
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"index":`...)
		out = append(out, v[0]...)
		out = append(out, `,"relevance_score":`...)
		out = append(out, v[1]...)
		if r.ReturnDocuments {
			idx, ok := rawjson.ParseInt(v[0])
			doc := nthElem(r.Documents, idx)
			if !ok || doc == nil {
				bad = true
				return false
			}
			out = append(out, `,"document":`...)
			if rawjson.KindOf(doc) == rawjson.String {
				out = append(out, `{"text":`...)
				out = append(out, doc...)
				out = append(out, '}')
			} else {
				out = append(out, doc...)
			}
		}
		out = append(out, '}')
		return true
	})
	if err != nil || bad {
		return dst, ErrAnswer
	}
	out = append(out, `],"model":""`...)
	if tokens >= 0 {
		out = append(out, `,"usage":{"prompt_tokens":`...)
		out = strconv.AppendInt(out, tokens, 10)
		out = append(out, `,"total_tokens":`...)
		out = strconv.AppendInt(out, tokens, 10)
		out = append(out, '}')
	}
	return append(out, '}'), nil
}

var resultKeys = []string{"index", "relevance_score"}

// nthElem returns the i-th element of a JSON array, nil when absent.
func nthElem(arr []byte, i int64) []byte {
	var got []byte
	_ = rawjson.ForEachElem(arr, func(j int, val []byte, _ rawjson.Kind) bool {
		if int64(j) == i {
			got = val
			return false
		}
		return true
	})
	return got
}
