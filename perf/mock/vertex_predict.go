package mock

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/valyala/fasthttp"
)

// Vertex embeddings: POST .../publishers/google/models/{m}:predict with
// {"instances":[{"content","task_type"?,"title"?}],"parameters":{"outputDimensionality"?,"autoTruncate"?}}.
// Each instance gets the mock's deterministic Embedding of its content
// (768 values by default, gemini-embedding models 3072):
// {"predictions":[{"embeddings":{"values":[...],"statistics":{"truncated":false,"token_count":n}}}],
// "metadata":{"billableCharacterCount":n}}. An unknown member is a 400
// INVALID_ARGUMENT, as Vertex answers.
func (s *Server) serveVertexPredict(ctx *fasthttp.RequestCtx, model []byte) {
	var in struct {
		Instances []map[string]json.RawMessage `json:"instances"`
		Params    map[string]json.RawMessage   `json:"parameters"`
	}
	dec := json.NewDecoder(bytes.NewReader(ctx.PostBody()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || len(in.Instances) == 0 {
		s.writeError(ctx, appendGoogleError, fasthttp.StatusBadRequest, "Invalid JSON payload or no instances (mock).")
		return
	}
	dims := 768
	if len(model) >= 16 && string(model[:16]) == "gemini-embedding" {
		dims = 3072
	}
	for name, v := range in.Params {
		switch name {
		case "outputDimensionality":
			n, err := strconv.Atoi(string(v))
			if err != nil || n < 1 || n > dims {
				s.writeError(ctx, appendGoogleError, fasthttp.StatusBadRequest, "outputDimensionality out of range (mock).")
				return
			}
			dims = n
		case "autoTruncate":
		default:
			s.writeError(ctx, appendGoogleError, fasthttp.StatusBadRequest, "Unknown parameter "+strconv.Quote(name)+" (mock).")
			return
		}
	}
	out := append([]byte(nil), `{"predictions":[`...)
	chars := 0
	for i, inst := range in.Instances {
		var content string
		for name, v := range inst {
			switch name {
			case "content":
				if json.Unmarshal(v, &content) != nil {
					s.writeError(ctx, appendGoogleError, fasthttp.StatusBadRequest, "instances[].content must be a string (mock).")
					return
				}
			case "task_type", "title":
			default:
				s.writeError(ctx, appendGoogleError, fasthttp.StatusBadRequest, "Unknown instance member "+strconv.Quote(name)+" (mock).")
				return
			}
		}
		if i > 0 {
			out = append(out, ',')
		}
		chars += len(content)
		out = appendFloats(append(out, `{"embeddings":{"values":`...), Embedding([]byte(content), dims))
		out = append(out, `,"statistics":{"truncated":false,"token_count":`...)
		out = append(strconv.AppendInt(out, int64(max(1, len(content)/4)), 10), "}}}"...)
	}
	out = append(out, `],"metadata":{"billableCharacterCount":`...)
	out = append(strconv.AppendInt(out, int64(chars), 10), "}}"...)
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentTypeBytes(strJSON)
	ctx.SetBody(out)
}
