package mock

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"

	"github.com/cespare/xxhash/v2"
	"github.com/valyala/fasthttp"

	"gw/sse/rawjson"
)

// OpenAI Embeddings: POST .../embeddings. Every input (a string, or one
// token-ID array) gets a deterministic unit vector: seeded by the xxhash of
// the input's bytes (the decoded string, or the token array as written), so
// the same input always gives the same vector, across runs and processes —
// semantic-routing and cache tests can compute the expected similarity.
// `dimensions` sets the length (default DefaultEmbeddingDimensions);
// `encoding_format: base64` answers the little-endian float32 bytes in
// base64, as OpenAI does.

var openAIEmbeddingsRoute = route{
	method:      fasthttp.MethodPost,
	match:       func(path []byte) bool { return bytes.HasSuffix(path, strEmbeddingsPath) },
	serve:       (*Server).serveOpenAIEmbeddings,
	appendError: appendOpenAIError,
}

var (
	strEmbeddingsPath = []byte("/embeddings")
	embeddingKeys     = []string{"model", "input", "dimensions", "encoding_format"}
)

// DefaultEmbeddingDimensions is the vector length without `dimensions`
// (text-embedding-3-small's).
const DefaultEmbeddingDimensions = 1536

const maxEmbeddingDimensions = 8192

// Embedding returns the mock's vector for input (a string's decoded bytes,
// or a token-ID array's JSON text): dims float32 values of unit L2 norm.
func Embedding(input []byte, dims int) []float32 {
	return appendEmbedding(nil, input, dims)
}

func appendEmbedding(dst []float32, input []byte, dims int) []float32 {
	seed := xxhash.Sum64(input)
	n := len(dst)
	var sum float64
	for i := 0; i < dims; i++ {
		seed += 0x9e3779b97f4a7c15 // splitmix64
		z := seed
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		v := float64(z>>11)/float64(1<<53)*2 - 1
		dst = append(dst, float32(v))
		sum += v * v
	}
	norm := float32(1 / math.Sqrt(sum))
	for i := n; i < len(dst); i++ {
		dst[i] *= norm
	}
	return dst
}

func (s *Server) serveOpenAIEmbeddings(ctx *fasthttp.RequestCtx, k *Knobs) {
	body := ctx.PostBody()
	var v [4][]byte
	if !rawjson.Valid(body) || rawjson.ScanTop(body, embeddingKeys, v[:]) != nil {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, msgBadJSON)
		return
	}
	if rawjson.KindOf(v[0]) != rawjson.String || len(v[0]) < 3 {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, msgNoModel)
		return
	}
	dims := DefaultEmbeddingDimensions
	if v[2] != nil {
		n, ok := rawjson.ParseInt(v[2])
		if !ok || n < 1 || n > maxEmbeddingDimensions {
			s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "Invalid 'dimensions': must be an integer from 1 to 8192.")
			return
		}
		dims = int(n)
	}
	b64 := rawjson.StringEquals(v[3], "base64")
	if v[3] != nil && !b64 && !rawjson.StringEquals(v[3], "float") {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "Invalid value for 'encoding_format': supported values are 'float' and 'base64'.")
		return
	}
	inputs, ok := embeddingInputs(v[1])
	if !ok {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "'input' must be a non-empty string, array of strings, array of tokens or array of token arrays.")
		return
	}
	bp := acquireBuf()
	out := append((*bp)[:0], `{"object":"list","data":[`...)
	var vec []float32
	var raw, text []byte
	tokens := 0
	for i, in := range inputs {
		if i > 0 {
			out = append(out, ',')
		}
		if rawjson.KindOf(in) == rawjson.String {
			text, _ = rawjson.AppendUnquote(text[:0], in)
			tokens += max(1, len(text)/4)
		} else {
			text = append(text[:0], in...)
			tokens += bytes.Count(in, []byte{','}) + 1
		}
		vec = appendEmbedding(vec[:0], text, dims)
		out = append(out, `{"object":"embedding","index":`...)
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, `,"embedding":`...)
		if b64 {
			raw = raw[:0]
			for _, f := range vec {
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(f))
			}
			out = append(out, '"')
			out = base64.StdEncoding.AppendEncode(out, raw)
			out = append(out, '"')
		} else {
			out = append(out, '[')
			for j, f := range vec {
				if j > 0 {
					out = append(out, ',')
				}
				out = strconv.AppendFloat(out, float64(f), 'g', -1, 32)
			}
			out = append(out, ']')
		}
		out = append(out, '}')
	}
	out = append(out, `],"model":`...)
	out = append(out, v[0][:len(v[0])-1]...)
	out = appendEscaped(out, k.ModelSuffix)
	out = append(out, `","usage":{"prompt_tokens":`...)
	out = strconv.AppendInt(out, int64(tokens), 10)
	out = append(out, `,"total_tokens":`...)
	out = strconv.AppendInt(out, int64(tokens), 10)
	out = append(out, "}}"...)
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentTypeBytes(strJSON)
	setRequestID(ctx, s.seq.Add(1))
	ctx.SetBody(out)
	*bp = out
	releaseBuf(bp)
}

// embeddingInputs splits an embeddings input into its items: a string, an
// array of strings, one token array, or an array of token arrays.
func embeddingInputs(in []byte) ([][]byte, bool) {
	switch rawjson.KindOf(in) {
	case rawjson.String:
		return [][]byte{in}, len(in) > 2
	case rawjson.Array:
	default:
		return nil, false
	}
	var items [][]byte
	tokens, ok := false, true
	_ = rawjson.ForEachElem(in, func(_ int, e []byte, k rawjson.Kind) bool {
		switch k {
		case rawjson.String, rawjson.Array:
			items = append(items, e)
		case rawjson.Number:
			tokens = true
		default:
			ok = false
		}
		return ok
	})
	if tokens {
		return [][]byte{in}, ok && len(items) == 0
	}
	return items, ok && len(items) > 0
}
