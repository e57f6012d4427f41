package mock

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"gw/sse/rawjson"
)

// OpenAI models: GET .../models (the list from Config.Models, rendered once in New) and
// GET .../models/{id} (echoes any id).

var openAIModelsRoute = route{
	method:      fasthttp.MethodGet,
	match:       func(path []byte) bool { return bytes.HasSuffix(path, strModelsPath) },
	serve:       (*Server).serveOpenAIModels,
	appendError: appendOpenAIError,
}

var openAIModelRoute = route{
	method:      fasthttp.MethodGet,
	match:       func(path []byte) bool { return len(modelID(path)) > 0 },
	serve:       (*Server).serveOpenAIModel,
	appendError: appendOpenAIError,
}

var (
	strModelsPath    = []byte("/models")
	strModelsSegment = []byte("/models/")
)

// openAIModelCreated is the fixed "created" of every listed model.
const openAIModelCreated = "1700000000"

// modelID returns the id of a .../models/{id} path; ids may contain '/'.
func modelID(path []byte) []byte {
	i := bytes.Index(path, strModelsSegment)
	if i < 0 {
		return nil
	}
	return path[i+len(strModelsSegment):]
}

func (s *Server) serveOpenAIModels(ctx *fasthttp.RequestCtx, _ *Knobs) {
	ctx.SetContentTypeBytes(strJSON)
	ctx.SetBody(s.models)
}

func (s *Server) serveOpenAIModel(ctx *fasthttp.RequestCtx, _ *Knobs) {
	bp := acquireBuf()
	*bp = appendOpenAIModel((*bp)[:0], modelID(ctx.Path()))
	ctx.SetContentTypeBytes(strJSON)
	ctx.SetBody(*bp)
	releaseBuf(bp)
}

func appendOpenAIModelList(dst []byte, models []string) []byte {
	dst = append(dst, `{"object":"list","data":[`...)
	for i, m := range models {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendOpenAIModel(dst, []byte(m))
	}
	return append(dst, "]}"...)
}

func appendOpenAIModel(dst, id []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = rawjson.AppendQuoteBytes(dst, id)
	dst = append(dst, `,"object":"model","created":`+openAIModelCreated+`,"owned_by":"gw-mock"}`...)
	return dst
}
