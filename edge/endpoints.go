package edge

import (
	"bytes"
	"errors"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/openai"
	"gw/adapters/upstream"
	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/guard"
	"gw/sse"
	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// The caller endpoints beyond chat (adapters.Endpoint): /v1/embeddings,
// /v1/completions, /v1/rerank. Each is a surface of the same pipeline as
// chat — authenticate, read, plan, limits, input policy, dispatch with
// routing groups, retries, failover, cooldown and the commit point, output
// policy, finish — whose body goes upstream in its own wire format with
// only `model` rewritten (c.native). An alias serves the endpoint when its
// provider key's adapter builds it (snapshot Plan.Endpoints, compiled at
// load; a group only when every target does); otherwise the plan stage
// answers before any limit is charged: 400 when the model is of the wrong
// kind (embeddings on a chat model), 501 when the provider lacks the
// capability.

var (
	pathEmbeddings  = "/v1/embeddings"
	pathCompletions = "/v1/completions"
	pathRerank      = "/v1/rerank"
)

// endpointSpec is what the read stage checks of an endpoint's body.
type endpointSpec struct {
	// keys are the members read in one pass: model, stream, stream_options,
	// then the endpoint's own (the first of them required).
	keys    []string
	streams bool // the endpoint accepts stream: true
}

const (
	epModel = iota
	epStream
	epStreamOptions
	epFirst // the endpoint's own members
)

var (
	specEmbeddings = endpointSpec{
		keys: []string{"model", "stream", "stream_options", "input", "encoding_format", "dimensions"},
	}
	specCompletions = endpointSpec{
		keys: []string{"model", "stream", "stream_options", "prompt"}, streams: true,
	}
	specRerank = endpointSpec{
		keys: []string{"model", "stream", "stream_options", "query", "documents", "top_n", "return_documents"},
	}
)

var (
	surfEmbeddings = &surface{
		read:    func(ctx *fasthttp.RequestCtx, c *call) bool { return readEndpoint(ctx, c, &specEmbeddings) },
		guardIn: guard.EmbeddingsRequest, guardNative: guard.TextlessAnswer,
		path: pathEmbeddings, protocol: "embeddings", operation: "embeddings",
		endpoint: adapters.EndpointEmbeddings, nativeUsage: openai.ExtractUsage, noOutput: true,
	}
	surfCompletions = &surface{
		read:    func(ctx *fasthttp.RequestCtx, c *call) bool { return readEndpoint(ctx, c, &specCompletions) },
		guardIn: guard.CompletionsRequest, guardNative: guard.CompletionsAnswer,
		path: pathCompletions, protocol: "completions", operation: "completions",
		endpoint: adapters.EndpointCompletions, nativeUsage: openai.ExtractUsage,
		nativeEvent: completionsEvent, nativeFail: completionsFail, nativeErrBody: completionsErrBody,
	}
	surfRerank = &surface{
		read:    func(ctx *fasthttp.RequestCtx, c *call) bool { return readEndpoint(ctx, c, &specRerank) },
		guardIn: guard.RerankRequest, guardNative: guard.TextlessAnswer,
		path: pathRerank, protocol: "rerank", operation: "rerank",
		endpoint: adapters.EndpointRerank, nativeUsage: openai.ExtractUsage, noOutput: true,
	}
)

// readEndpoint is the read stage of an endpoint surface: a JSON object with
// a string model and the endpoint's members in their documented shapes
// (400 otherwise, before any upstream call). The body goes upstream as is
// but for `model`; policy reads it as it is.
func readEndpoint(ctx *fasthttp.RequestCtx, c *call, sp *endpointSpec) bool {
	body := ctx.PostBody()
	var vals [8][]byte
	valid, folded := rawjson.ValidNames(body)
	if !valid || rawjson.KindOf(body) != rawjson.Object || rawjson.ScanTop(body, sp.keys, vals[:]) != nil {
		return badRequest(ctx, c, errBodyNotJSON.code, errBodyNotJSON.msg)
	}
	if folded != nil {
		return badRequest(ctx, c, "invalid_request", rawjson.Folded(folded).Error())
	}
	switch rawjson.KindOf(vals[epModel]) {
	case rawjson.String:
	case rawjson.Invalid:
		return badRequest(ctx, c, errModelMissing.code, errModelMissing.msg)
	default:
		return badRequest(ctx, c, errModelNotString.code, errModelNotString.msg)
	}
	m, err := rawjson.AppendUnquote(c.cr.modelBuf[:0], vals[epModel])
	if err != nil {
		return badRequest(ctx, c, errModelNotString.code, errModelNotString.msg)
	}
	c.cr.Model = m
	switch rawjson.KindOf(vals[epStream]) {
	case rawjson.Invalid, rawjson.False, rawjson.Null:
	case rawjson.True:
		if !sp.streams {
			return badRequest(ctx, c, "invalid_value", "stream: "+c.surf.path+" does not stream")
		}
		c.cr.Stream = true
		if v, k, ok := rawjson.Get(vals[epStreamOptions], "include_usage"); ok && k == rawjson.True && len(v) > 0 {
			c.cr.IncludeUsage = true
		}
	default:
		return badRequest(ctx, c, errStreamNotBool.code, errStreamNotBool.msg)
	}
	if p := sp.keys[epFirst]; vals[epFirst] == nil {
		return badRequest(ctx, c, "missing_required_parameter", "you must provide a "+p+" parameter")
	}
	// A static call per endpoint (a func value would move vals to the heap).
	var code, msg string
	switch own := vals[epFirst:len(sp.keys)]; c.surf.endpoint {
	case adapters.EndpointEmbeddings:
		code, msg = checkEmbeddings(own)
	case adapters.EndpointCompletions:
		code, msg = checkCompletions(own)
	case adapters.EndpointRerank:
		code, msg = checkRerank(own)
	case adapters.EndpointImages:
		code, msg = checkImages(own) // images.go
	case adapters.EndpointVideos:
		code, msg = checkVideos(own) // videos.go
	case adapters.EndpointSpeech:
		code, msg = checkSpeech(own) // speech.go
		c.cr.Stream = rawjson.StringEquals(own[2], "sse")
	}
	if code != "" {
		return badRequest(ctx, c, code, msg)
	}
	c.body, c.origBody = body, body
	return true
}

func badRequest(ctx *fasthttp.RequestCtx, c *call, code, msg string) bool {
	c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", code, msg)
	return false
}

// checkEmbeddings: input is a non-empty string, or a non-empty array of
// strings, of token IDs, or of token-ID arrays; encoding_format is float
// or base64 (relayed: a base64 answer passes through undecoded);
// dimensions is a positive integer.
func checkEmbeddings(v [][]byte) (string, string) {
	if !textOrTokens(v[0]) {
		return "invalid_type", "input: must be a non-empty string, array of strings, array of token IDs or array of token-ID arrays"
	}
	if f := v[1]; f != nil && !rawjson.StringEquals(f, "float") && !rawjson.StringEquals(f, "base64") {
		return "invalid_value", "encoding_format: must be 'float' or 'base64'"
	}
	if d := v[2]; d != nil {
		if n, ok := rawjson.ParseInt(d); !ok || n < 1 {
			return "invalid_value", "dimensions: must be a positive integer"
		}
	}
	return "", ""
}

// checkCompletions: prompt has the shapes of an embeddings input.
func checkCompletions(v [][]byte) (string, string) {
	if !textOrTokens(v[0]) {
		return "invalid_type", "prompt: must be a string, array of strings, array of token IDs or array of token-ID arrays"
	}
	return "", ""
}

// checkRerank: query is a string, documents a non-empty array of strings
// or objects, top_n a positive integer, return_documents a boolean.
func checkRerank(v [][]byte) (string, string) {
	if rawjson.KindOf(v[0]) != rawjson.String {
		return "invalid_type", "query: must be a string"
	}
	docs := v[1]
	if rawjson.KindOf(docs) != rawjson.Array {
		return "missing_required_parameter", "documents: must be an array of strings or objects"
	}
	n, bad := 0, false
	_ = rawjson.ForEachElem(docs, func(_ int, d []byte, k rawjson.Kind) bool {
		n++
		bad = k != rawjson.String && k != rawjson.Object
		return !bad
	})
	if n == 0 || bad {
		return "invalid_type", "documents: must be a non-empty array of strings or objects"
	}
	if t := v[2]; t != nil {
		if n, ok := rawjson.ParseInt(t); !ok || n < 1 {
			return "invalid_value", "top_n: must be a positive integer"
		}
	}
	if r := v[3]; r != nil && rawjson.KindOf(r) != rawjson.True && rawjson.KindOf(r) != rawjson.False {
		return "invalid_type", "return_documents: must be a boolean"
	}
	return "", ""
}

// textOrTokens reports whether v is a non-empty string or a non-empty
// array whose elements are all strings, all integers, or all non-empty
// integer arrays.
func textOrTokens(v []byte) bool {
	switch rawjson.KindOf(v) {
	case rawjson.String:
		return len(v) > 2
	case rawjson.Array:
	default:
		return false
	}
	n, ok := 0, true
	var first rawjson.Kind
	_ = rawjson.ForEachElem(v, func(i int, e []byte, k rawjson.Kind) bool {
		n++
		if i == 0 {
			first = k
		}
		switch {
		case k != first:
			ok = false
		case k == rawjson.Number:
			_, ok = rawjson.ParseInt(e)
		case k == rawjson.Array:
			ok = tokenArray(e)
		case k != rawjson.String:
			ok = false
		}
		return ok
	})
	return ok && n > 0
}

func tokenArray(v []byte) bool {
	n, ok := 0, true
	_ = rawjson.ForEachElem(v, func(_ int, e []byte, k rawjson.Kind) bool {
		n++
		if k == rawjson.Number {
			_, ok = rawjson.ParseInt(e)
		} else {
			ok = false
		}
		return ok
	})
	return ok && n > 0
}

// servesEndpoint is the plan stage's check for an endpoint surface: the
// alias serves it (Plan.Endpoints, compiled at load), or the caller gets
// 400 for a model of the wrong kind and 501 for a provider without the
// capability.
func (p *Proxy) servesEndpoint(ctx *fasthttp.RequestCtx, c *call) bool {
	e := c.surf.endpoint
	if e == adapters.EndpointVideos && c.plan.Kind == resources.KindRouting {
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_request",
			"The model `"+truncate(c.plan.Alias, 256)+"` is a routing group: "+pathVideos+" needs a direct model, since a video task stays on the provider that created it.")
		c.errClass = "unsupported"
		return false
	}
	if c.plan.Endpoints.Has(e) {
		return true
	}
	embedding := c.plan.Model.Embedding != nil
	if len(c.plan.Targets) > 0 {
		embedding = c.plan.Targets[0].Plan.Model.Embedding != nil
	}
	alias := truncate(c.plan.Alias, 256)
	switch {
	case e == adapters.EndpointEmbeddings && !embedding:
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "model_not_embedding",
			"The model `"+alias+"` is not an embedding model (it has no `embedding` block); "+pathEmbeddings+" serves embedding models only.")
	case e != adapters.EndpointEmbeddings && embedding:
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "model_is_embedding",
			"The model `"+alias+"` is an embedding model; it serves "+pathEmbeddings+" only.")
	case len(c.plan.Targets) > 0:
		c.surf.writeError(ctx, fasthttp.StatusNotImplemented, "invalid_request_error", "not_implemented",
			"Not every target of model `"+alias+"` can serve "+e.String()+".")
	default:
		c.surf.writeError(ctx, fasthttp.StatusNotImplemented, "invalid_request_error", "not_implemented",
			"The provider of model `"+alias+"` (provider key "+c.plan.Model.ProviderKeyName+") does not serve "+e.String()+".")
	}
	c.errClass = "unsupported"
	return false
}

// unguardedStream decides a stream of an endpoint whose events no output
// guardrail can read (completions chunks carry choices[].text, which the
// stream window does not judge; speech is audio): the chain's fail-open
// rules decide, as
// for any content a check cannot read — 422 guardrail_unavailable before
// any upstream call, or a recorded bypass and the stream relayed.
func (p *Proxy) unguardedStream(ctx *fasthttp.RequestCtx, c *call) bool {
	g := &c.g
	if g.e.Unreadable(guard.Output, g.e.Chain.Output) >= guard.Blocked {
		c.errClass = "guardrail_unavailable"
		c.surf.writeError(ctx, fasthttp.StatusUnprocessableEntity, "invalid_request_error", codeUnavailable, msgUnavailable)
		return false
	}
	g.e.Chain.Output = g.e.Chain.Output[:0] // bypass recorded: relay unjudged
	return true
}

// buildEndpoint builds one attempt's upstream request of an endpoint
// surface: the caller's body with the target's model, through the
// adapter's builder for the endpoint (adapters.BuildEndpoint).
func (p *Proxy) buildEndpoint(ctx *fasthttp.RequestCtx, c *call, up *snapshot.Upstream) (*fasthttp.Request, *upstream.Client) {
	if c.up != nil {
		return p.buildUpload(ctx, c, up) // upload.go
	}
	c.native = true
	c.in.Body = c.origBody
	req := fasthttp.AcquireRequest()
	err := adapters.BuildEndpoint(up.Adapter, c.surf.endpoint, req, &c.in)
	if err == nil {
		return req, up.Client
	}
	fasthttp.ReleaseRequest(req)
	switch {
	case errors.Is(err, adapters.ErrUnsupported):
		c.errClass = "unsupported"
		c.surf.writeError(ctx, fasthttp.StatusNotImplemented, "invalid_request_error", "not_implemented",
			"The provider of model `"+truncate(c.target.Alias, 256)+"` does not serve "+c.surf.endpoint.String()+".")
	case errors.Is(err, adapters.ErrBody):
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_json", "the request body must be a JSON object")
	case errors.Is(err, adapters.ErrCredential):
		c.credFail = true // failover, as for chat (credentialFailed)
	case errors.As(err, new(adapters.RequestError)):
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_request", err.Error())
	default:
		c.surf.writeError(ctx, fasthttp.StatusInternalServerError, "server_error", "internal_error", "cannot build the upstream request")
	}
	return nil, nil
}

var (
	completionsDone = []byte("data: [DONE]\n\n")
	errorPrefixJSON = []byte(`{"error"`)
)

// completionsEvent appends one text-completion chunk to s.out: `model`
// becomes the alias, usage is recorded, the usage-only chunk gw asked for
// (the caller did not) is dropped. A chunk with text or a finish reason is
// content (the commit point); [DONE] ends the stream; an {"error":...}
// chunk is the upstream's in-band failure.
func completionsEvent(s *relayState, c *call, ev sse.Event) evFlags {
	data := ev.Data
	s.out = s.out[:0]
	switch {
	case sse.IsDone(data):
		s.out = append(s.out, completionsDone...)
		return evEnd
	case bytes.HasPrefix(data, errorPrefixJSON):
		c.errClass = "upstream_error_event"
		s.out = sse.AppendEvent(s.out, nil, data)
		return evEnd | evFailed
	}
	if openai.IsUsageOnlyChunk(data) {
		if u, ok := openai.ExtractUsage(data); ok {
			c.usage, c.haveUsage = u, true
		}
		if c.in.ForceUsage {
			return 0
		}
	}
	if out, ok := editChunk(append(s.out, "data: "...), data, c.plan.AliasJSON, c.in.ForceUsage); ok {
		s.out = append(out, "\n\n"...)
	} else {
		s.out = append(s.out[:0], "data: "...)
		s.out = openai.RewriteModel(s.out, data, c.plan.AliasJSON)
		s.out = append(s.out, "\n\n"...)
	}
	if completionHasText(data) {
		return evContent
	}
	return 0
}

// completionHasText reports whether a chunk carries text or a finish reason.
func completionHasText(data []byte) bool {
	choices, kind, ok := rawjson.Get(data, "choices")
	if !ok || kind != rawjson.Array {
		return false
	}
	found := false
	_ = rawjson.ForEachElem(choices, func(_ int, ch []byte, k rawjson.Kind) bool {
		if k != rawjson.Object {
			return true
		}
		if t, tk, ok := rawjson.Get(ch, "text"); ok && tk == rawjson.String && len(t) > 2 {
			found = true
		} else if fr, fk, ok := rawjson.Get(ch, "finish_reason"); ok && fk == rawjson.String && len(fr) > 2 {
			found = true
		}
		return !found
	})
	return found
}

var (
	completionsTimeout = []byte(`data: {"error":{"type":"server_error","code":"` + transcode.CodeTimeout + `","message":"the upstream stream stalled longer than stream_timeout"}}` + "\n\n")
	completionsBroken  = []byte(`data: {"error":{"type":"server_error","code":"` + transcode.CodeUpstreamStreamFail + `","message":"the upstream stream failed"}}` + "\n\n")
)

// completionsFail ends a completions stream gw cuts short the way OpenAI
// ends one in-band: a data line with an error object, no [DONE].
func completionsFail(dst []byte, _ *relayState, _ *call, code string) []byte {
	if code == transcode.CodeTimeout {
		return append(dst, completionsTimeout...)
	}
	return append(dst, completionsBroken...)
}

// completionsErrBody: an error chunk that opened the stream is already the
// OpenAI error envelope.
func completionsErrBody(data []byte) []byte { return append([]byte(nil), data...) }

// EndpointInfo is what the read stage takes from an endpoint body.
type EndpointInfo struct {
	Model        string
	Stream       bool
	IncludeUsage bool
}

// ParseEndpointRequest validates the body of the endpoint at path
// (/v1/embeddings, /v1/completions, /v1/rerank) as the read stage does.
// The error text is the caller-facing message. For tests and fuzzing.
func ParseEndpointRequest(path string, body []byte) (EndpointInfo, error) {
	surf, sp := surfEmbeddings, &specEmbeddings
	switch path {
	case pathCompletions:
		surf, sp = surfCompletions, &specCompletions
	case pathRerank:
		surf, sp = surfRerank, &specRerank
	case pathImages:
		surf, sp = surfImages, &specImages
	case pathSpeech:
		surf, sp = surfSpeech, &specSpeech
	case pathVideos:
		surf, sp = surfVideos, &specVideos
	}
	var ctx fasthttp.RequestCtx
	ctx.Request.SetBody(body)
	c := &call{surf: surf}
	if !readEndpoint(&ctx, c, sp) {
		msg, _, _ := rawjson.GetPath(ctx.Response.Body(), "error", "message")
		m, _ := rawjson.AppendUnquote(nil, msg)
		return EndpointInfo{}, errors.New(string(m))
	}
	return EndpointInfo{Model: string(c.cr.Model), Stream: c.cr.Stream, IncludeUsage: c.cr.IncludeUsage}, nil
}
