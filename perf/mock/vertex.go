package mock

import (
	"bufio"
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	_ "embed"
	"encoding/json"
	"encoding/pem"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/valyala/fasthttp"

	"gw/sse/rawjson"
)

// Google Vertex AI (protocols.md §6): the OAuth token endpoint of a service
// account, Gemini generateContent / streamGenerateContent?alt=sse, Claude's
// rawPredict / streamRawPredict, and the OpenAI-compatible chat endpoint of
// partner models.
//
//	POST /vertex/token[?ttl=2s]   the JWT-bearer grant: the assertion must be
//	        signed (RS256) by the test service account (testdata/
//	        vertex_service_account.json; a key generated for tests only) with
//	        iss = its client_email, aud = the token URI and the cloud-platform
//	        scope. The access token lives ttl (default 1h), so a test can let
//	        tokens expire mid-run. With fail_after=N, the token URI (as
//	        written, query included) grants N tokens and then answers 503,
//	        so a test can make a key's token endpoint fail mid-run.
//	POST /v1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent
//	POST .../publishers/google/models/{m}:streamGenerateContent?alt=sse
//	POST .../publishers/anthropic/models/{m}:rawPredict | :streamRawPredict
//	POST .../publishers/anthropic/models/count-tokens:rawPredict
//	POST .../endpoints/openapi/chat/completions
//	POST .../publishers/google/models/{m}:predict   embeddings (vertex_predict.go)
//
// Every /v1/projects/ request needs `Authorization: Bearer <token>` with an
// unexpired token from the token endpoint: else 401 UNAUTHENTICATED.
//
// Gemini answers: a stream of model gemini-2.0-flash-exp or
// gemini-3-pro-preview replays testdata/gemini_stream_text.sse or
// gemini_stream_function_call.sse byte for byte (events paced by
// chunk_delay; the fault knobs count its events). Other models get generated
// answers with the knobs of every format: chunks of filler text (or
// tool_calls functionCall parts, each whole in its own event, named after the
// request's functionDeclarations), preceded by two thought parts when the
// request asks generationConfig.thinkingConfig.includeThoughts; a final
// event with finishReason and usageMetadata (no_done omits it). A request
// whose body contains "mock:safety" gets one chunk then finishReason SAFETY;
// "mock:block_prompt" gets promptFeedback.blockReason SAFETY and no
// candidates. stream_error_after sends {"error":{"code":503,...,"status":
// "UNAVAILABLE"}}. Events end in CRLF CRLF, as Google's do.
//
// Claude: the body must carry anthropic_version vertex-2023-10-16 and no
// model; it is answered by the Anthropic Messages renderer with the model of
// the URL. Errors are Google's {"error":{code,message,status}}.

var vertexRoute = route{
	method: fasthttp.MethodPost,
	match: func(path []byte) bool {
		// Contains, not HasPrefix: a /knobs/ segment may come first.
		return bytes.Contains(path, strVertexProjects) || bytes.Equal(path, strVertexTokenPath)
	},
	serve:       (*Server).serveVertex,
	appendError: appendGoogleError,
}

var (
	strVertexProjects   = []byte("/v1/projects/")
	strVertexTokenPath  = []byte("/vertex/token")
	strVertexGoogle     = []byte("/publishers/google/models/")
	strVertexAnthropic  = []byte("/publishers/anthropic/models/")
	strVertexOpenAPI    = []byte("/endpoints/openapi/chat/completions")
	strVertexCountModel = []byte("count-tokens")
	strBearer           = []byte("Bearer ")
	strCRLF2            = []byte("\r\n\r\n")
)

// VertexAnthropicVersion is the anthropic_version Claude-on-Vertex bodies carry.
const VertexAnthropicVersion = "vertex-2023-10-16"

//go:embed testdata/vertex_service_account.json
var vertexServiceAccount []byte

//go:embed testdata/gemini_stream_text.sse
var geminiFixtureText []byte

//go:embed testdata/gemini_stream_function_call.sse
var geminiFixtureCall []byte

// VertexServiceAccount returns the test service account's credential
// document (a key generated for tests only) with token_uri set to tokenURI.
func VertexServiceAccount(tokenURI string) []byte {
	var doc map[string]any
	if err := json.Unmarshal(vertexServiceAccount, &doc); err != nil {
		panic("BUG: testdata/vertex_service_account.json: " + err.Error())
	}
	doc["token_uri"] = tokenURI
	b, _ := json.Marshal(doc)
	return b
}

// vertexAuth holds the issued access tokens.
type vertexAuth struct {
	once   sync.Once
	key    *rsa.PublicKey
	email  string
	mu     sync.Mutex
	tokens map[string]time.Time
	issued int
	perURI map[string]int // fail_after: tokens granted per token URI
}

var vertexState vertexAuth // one test key for every Server

func (a *vertexAuth) init() {
	a.once.Do(func() {
		var d struct {
			PrivateKey  string `json:"private_key"`
			ClientEmail string `json:"client_email"`
		}
		if err := json.Unmarshal(vertexServiceAccount, &d); err != nil {
			panic("BUG: testdata/vertex_service_account.json: " + err.Error())
		}
		blk, _ := pem.Decode([]byte(d.PrivateKey))
		if blk == nil {
			panic("BUG: testdata/vertex_service_account.json: no PEM private key")
		}
		k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			panic("BUG: testdata/vertex_service_account.json: " + err.Error())
		}
		a.key, a.email = &k.(*rsa.PrivateKey).PublicKey, d.ClientEmail
		a.tokens = map[string]time.Time{}
		a.perURI = map[string]int{}
	})
}

// VertexTokensIssued reports how many access tokens the token endpoint has
// issued (all Servers of the process).
func VertexTokensIssued() int {
	vertexState.mu.Lock()
	defer vertexState.mu.Unlock()
	return vertexState.issued
}

func (s *Server) serveVertex(ctx *fasthttp.RequestCtx, k *Knobs) {
	path := ctx.Path()
	if bytes.Equal(path, strVertexTokenPath) {
		s.serveVertexToken(ctx)
		return
	}
	if !vertexState.valid(ctx.Request.Header.Peek("Authorization")) {
		s.writeError(ctx, appendGoogleError, fasthttp.StatusUnauthorized,
			"Request had invalid authentication credentials. Expected OAuth 2 access token. (mock)")
		return
	}
	if bytes.HasSuffix(path, strVertexOpenAPI) {
		s.serveOpenAIChat(ctx, k)
		return
	}
	colon := bytes.LastIndexByte(path, ':')
	if colon < 0 {
		s.writeError(ctx, appendGoogleError, fasthttp.StatusNotFound, "mock: unknown Vertex path")
		return
	}
	method := string(path[colon+1:])
	if i := bytes.Index(path, strVertexGoogle); i >= 0 {
		model := path[i+len(strVertexGoogle) : colon]
		switch method {
		case "generateContent":
			s.serveGemini(ctx, k, model, false)
			return
		case "predict":
			s.serveVertexPredict(ctx, model) // vertex_predict.go
			return
		case "streamGenerateContent":
			if string(ctx.QueryArgs().Peek("alt")) != "sse" {
				s.writeError(ctx, appendGoogleError, fasthttp.StatusBadRequest, "mock: only alt=sse streams are served")
				return
			}
			s.serveGemini(ctx, k, model, true)
			return
		}
	}
	if i := bytes.Index(path, strVertexAnthropic); i >= 0 && (method == "rawPredict" || method == "streamRawPredict") {
		s.serveVertexClaude(ctx, k, path[i+len(strVertexAnthropic):colon])
		return
	}
	s.writeError(ctx, appendGoogleError, fasthttp.StatusNotFound, "mock: unknown Vertex method")
}

// valid reports whether hdr carries an unexpired issued token.
func (a *vertexAuth) valid(hdr []byte) bool {
	if !bytes.HasPrefix(hdr, strBearer) {
		return false
	}
	a.init()
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.tokens[string(hdr[len(strBearer):])]
	return ok && time.Now().Before(exp)
}

func (s *Server) serveVertexToken(ctx *fasthttp.RequestCtx) {
	a := &vertexState
	a.init()
	fail := func(desc string) {
		s.stats.errors.Add(1)
		ctx.SetStatusCode(fasthttp.StatusBadRequest)
		ctx.SetContentTypeBytes(strJSON)
		b, _ := json.Marshal(map[string]string{"error": "invalid_grant", "error_description": desc})
		ctx.SetBody(b)
	}
	args := ctx.PostArgs()
	if string(args.Peek("grant_type")) != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		fail("unsupported grant_type (mock)")
		return
	}
	ttl := time.Hour
	if v := ctx.QueryArgs().Peek("ttl"); len(v) > 0 {
		d, err := time.ParseDuration(string(v))
		if err != nil || d <= 0 {
			fail("bad ttl (mock)")
			return
		}
		ttl = d
	}
	var claims struct {
		jwt.RegisteredClaims
		Scope string `json:"scope"`
	}
	_, err := jwt.ParseWithClaims(string(args.Peek("assertion")), &claims, func(*jwt.Token) (any, error) { return a.key, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuedAt(), jwt.WithExpirationRequired())
	if err != nil {
		fail("Invalid JWT Signature. (mock)")
		return
	}
	// aud is the token URI the client posted to (scheme and host as it saw them).
	uri := "http://" + string(ctx.Host()) + string(ctx.RequestURI())
	if claims.Issuer != a.email || !strings.Contains(claims.Scope, "https://www.googleapis.com/auth/cloud-platform") ||
		len(claims.Audience) != 1 || claims.Audience[0] != uri {
		fail("Invalid JWT: iss, aud or scope (mock)")
		return
	}
	if v := ctx.QueryArgs().Peek("fail_after"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		a.mu.Lock()
		granted := a.perURI[uri]
		if err == nil && granted < n {
			a.perURI[uri] = granted + 1
		}
		a.mu.Unlock()
		if err != nil || granted >= n {
			s.stats.errors.Add(1)
			ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
			ctx.SetContentTypeBytes(strJSON)
			ctx.SetBodyString(`{"error":"temporarily_unavailable","error_description":"token endpoint down (mock fail_after)"}`)
			return
		}
	}
	id := s.seq.Add(1)
	tok := "ya29.mock-" + strconv.FormatUint(id, 10) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	a.mu.Lock()
	now := time.Now()
	for t, exp := range a.tokens {
		if now.After(exp) {
			delete(a.tokens, t)
		}
	}
	a.tokens[tok] = now.Add(ttl)
	a.issued++
	a.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"access_token": tok, "expires_in": int(ttl / time.Second), "token_type": "Bearer"})
	if ttl < time.Second {
		b, _ = json.Marshal(map[string]any{"access_token": tok, "expires_in": 1, "token_type": "Bearer"})
	}
	ctx.SetContentTypeBytes(strJSON)
	ctx.SetBody(b)
}

// serveVertexClaude answers rawPredict / streamRawPredict with the Anthropic
// renderer once the Vertex body rules are checked.
func (s *Server) serveVertexClaude(ctx *fasthttp.RequestCtx, k *Knobs, model []byte) {
	body, err := requestBody(ctx)
	if err != nil {
		s.writeError(ctx, appendGoogleError, fasthttp.StatusBadRequest, "mock: cannot decode the request body")
		return
	}
	if v, _, _ := rawjson.Get(body, "anthropic_version"); !rawjson.StringEquals(v, VertexAnthropicVersion) {
		s.writeError(ctx, appendGoogleError, fasthttp.StatusBadRequest, "anthropic_version: must be "+VertexAnthropicVersion+" (mock)")
		return
	}
	_, _, hasModel := rawjson.Get(body, "model")
	if bytes.Equal(model, strVertexCountModel) {
		if !hasModel {
			s.writeError(ctx, appendGoogleError, fasthttp.StatusBadRequest, "model: Field required (mock)")
			return
		}
		var buf [48]byte
		b := append(buf[:0], `{"input_tokens":`...)
		b = appendInt(b, promptTokens(len(body)))
		ctx.SetContentTypeBytes(strJSON)
		ctx.SetBody(append(b, '}'))
		return
	}
	if hasModel {
		s.writeError(ctx, appendGoogleError, fasthttp.StatusBadRequest, "model: not allowed in the body of rawPredict; it is in the URL (mock)")
		return
	}
	withModel, err := rawjson.SetString(nil, body, "model", string(model))
	if err != nil {
		s.writeError(ctx, appendGoogleError, fasthttp.StatusBadRequest, "mock: the body is not a JSON object")
		return
	}
	ctx.Request.SetBody(withModel)
	s.serveFormat(ctx, k, acquireMessagesAnswer(), appendAnthropicError, setAnthropicRequestID)
}

// geminiAnswer renders one Gemini answer, buffered or streamed; it
// implements formatAnswer.
type geminiAnswer struct {
	answerBase
	stream   bool
	thinking bool
	safety   uint8 // geminiSafe, geminiSafetyFinish, geminiBlocked
	fixture  [][]byte
	buf      []byte
}

const (
	geminiSafe uint8 = iota
	geminiSafetyFinish
	geminiBlocked
)

const geminiThoughts = 2

var geminiAnswerPool = sync.Pool{New: func() any { return new(geminiAnswer) }}

var (
	geminiFixtureTextEvents = splitSSE(geminiFixtureText)
	geminiFixtureCallEvents = splitSSE(geminiFixtureCall)
)

// splitSSE splits a recording into its events, each with its separator.
func splitSSE(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i, n := bytes.Index(b, strCRLF2), 4
		if j := bytes.Index(b, []byte("\n\n")); j >= 0 && (i < 0 || j < i) {
			i, n = j, 2
		}
		if i < 0 {
			out = append(out, b)
			break
		}
		out = append(out, b[:i+n])
		b = b[i+n:]
	}
	return out
}

func (s *Server) serveGemini(ctx *fasthttp.RequestCtx, k *Knobs, model []byte, stream bool) {
	a := geminiAnswerPool.Get().(*geminiAnswer)
	a.stream, a.fixture = stream, nil
	if stream {
		switch string(model) {
		case "gemini-2.0-flash-exp":
			a.fixture = geminiFixtureTextEvents
		case "gemini-3-pro-preview":
			a.fixture = geminiFixtureCallEvents
		}
	}
	a.model = append(a.model[:0], model...)
	s.serveFormat(ctx, k, a, appendGoogleError, setRequestID)
}

func (a *geminiAnswer) release() {
	a.trim()
	a.fixture = nil
	geminiAnswerPool.Put(a)
}

func (a *geminiAnswer) load(s *Server, k *Knobs, body []byte) string {
	contents, _, _ := rawjson.Get(body, "contents")
	if n, ok := countElems(contents); !ok || n == 0 {
		return "contents: must be a non-empty array (mock)"
	}
	var names [maxToolNames][]byte
	n := 0
	if tools, _, ok := rawjson.Get(body, "tools"); ok {
		_ = rawjson.ForEachElem(tools, func(_ int, t []byte, _ rawjson.Kind) bool {
			decls, _, _ := rawjson.Get(t, "functionDeclarations")
			_ = rawjson.ForEachElem(decls, func(_ int, d []byte, _ rawjson.Kind) bool {
				if nm, _, ok := rawjson.Get(d, "name"); ok && rawjson.KindOf(nm) == rawjson.String && n < maxToolNames {
					names[n] = nm[1 : len(nm)-1]
					n++
				}
				return true
			})
			return true
		})
	}
	it, _, _ := rawjson.GetPath(body, "generationConfig", "thinkingConfig", "includeThoughts")
	a.thinking = string(it) == "true"
	a.safety = geminiSafe
	switch {
	case bytes.Contains(body, []byte("mock:block_prompt")):
		a.safety = geminiBlocked
	case bytes.Contains(body, []byte("mock:safety")):
		a.safety = geminiSafetyFinish
	}
	model := append(a.buf[:0], a.model...)
	a.buf = model
	return a.prepareBase(s, k, len(body), model, n > 0, names[:n])
}

func (a *geminiAnswer) streaming() bool   { return a.stream }
func (a *geminiAnswer) requestID() uint64 { return a.id }

// thoughts is the number of thought events.
func (a *geminiAnswer) thoughts() int {
	if a.thinking && a.safety == geminiSafe {
		return geminiThoughts
	}
	return 0
}

func (a *geminiAnswer) events() int {
	switch {
	case a.fixture != nil:
		return len(a.fixture)
	case a.k.EmptyStream, a.safety == geminiBlocked:
		return 0
	case a.safety == geminiSafetyFinish:
		return min(1, a.k.Chunks)
	case a.toolCalls > 0:
		return a.thoughts() + a.toolCalls
	}
	return a.thoughts() + a.k.Chunks
}

const geminiThoughtText = "Thinking it over (mock). "

func (a *geminiAnswer) appendHead(dst []byte) []byte {
	return append(dst, `{"candidates":[{"content":{"role":"model","parts":[`...)
}

func (a *geminiAnswer) appendTail(dst []byte, finish string, final bool) []byte {
	dst = append(dst, `]},"index":0`...)
	if finish != "" {
		dst = append(dst, `,"finishReason":"`...)
		dst = append(dst, finish...)
		dst = append(dst, '"')
	}
	dst = append(dst, `}],`...)
	return a.appendMeta(dst, final)
}

// appendMeta appends usageMetadata, modelVersion and responseId and closes
// the object.
func (a *geminiAnswer) appendMeta(dst []byte, final bool) []byte {
	dst = append(dst, `"usageMetadata":{"promptTokenCount":`...)
	dst = appendInt(dst, a.promptTokens)
	total := a.promptTokens
	if final {
		out := a.outputTokens()
		if a.safety != geminiSafe {
			out = a.events()
		}
		dst = append(dst, `,"candidatesTokenCount":`...)
		dst = appendInt(dst, out)
		total += out
		if th := a.thoughts(); th > 0 {
			dst = append(dst, `,"thoughtsTokenCount":`...)
			dst = appendInt(dst, th)
			total += th
		}
	}
	dst = append(dst, `,"totalTokenCount":`...)
	dst = appendInt(dst, total)
	dst = append(dst, `},"modelVersion":"`...)
	dst = append(dst, a.model...)
	dst = append(dst, `","responseId":"mock-`...)
	dst = strconv.AppendUint(dst, a.id, 10)
	return append(dst, `"}`...)
}

func (a *geminiAnswer) appendCall(dst []byte, c int) []byte {
	dst = append(dst, `{"functionCall":{"name":"`...)
	dst = a.appendToolName(dst, c)
	dst = append(dst, `","args":`...)
	dst = append(dst, a.args...)
	return append(dst, `}}`...)
}

func (a *geminiAnswer) writeStart(*bufio.Writer) {}

func (a *geminiAnswer) writeEvent(w *bufio.Writer, i int) {
	if a.fixture != nil {
		w.Write(a.fixture[i])
		return
	}
	b := append(a.scratch[:0], "data: "...)
	b = a.appendHead(b)
	switch th := a.thoughts(); {
	case i < th:
		b = append(b, `{"text":"`...)
		b = append(b, geminiThoughtText...)
		b = append(b, `","thought":true}`...)
	case a.toolCalls > 0 && a.safety == geminiSafe:
		b = a.appendCall(b, i-th)
	default:
		b = append(b, `{"text":"`...)
		b = appendFiller(b, (i-th)*a.k.ChunkSize, a.k.ChunkSize)
		b = append(b, `"}`...)
	}
	b = a.appendTail(b, "", false)
	b = append(b, strCRLF2...)
	a.scratch = b
	w.Write(b)
}

func (a *geminiAnswer) writeEnd(w *bufio.Writer) {
	if a.fixture != nil || a.k.NoDone {
		return
	}
	b := append(a.scratch[:0], "data: "...)
	b = a.appendFinal(b, true)
	b = append(b, strCRLF2...)
	a.scratch = b
	w.Write(b)
}

// appendFinal appends the last event of a stream (an empty text part,
// finishReason and the final usage) or, with stream false, the whole
// buffered answer.
func (a *geminiAnswer) appendFinal(dst []byte, stream bool) []byte {
	if a.safety == geminiBlocked {
		dst = append(dst, `{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH","blocked":true}]},`...)
		return a.appendMeta(dst, true)
	}
	dst = a.appendHead(dst)
	if stream {
		dst = append(dst, `{"text":""}`...)
	} else {
		parts := 0
		if th := a.thoughts(); th > 0 {
			dst = append(dst, `{"text":"`...)
			for range th {
				dst = append(dst, geminiThoughtText...)
			}
			dst = append(dst, `","thought":true}`...)
			parts++
		}
		if a.toolCalls > 0 && a.safety == geminiSafe {
			for c := range a.toolCalls {
				if parts > 0 {
					dst = append(dst, ',')
				}
				dst = a.appendCall(dst, c)
				parts++
			}
		} else {
			if parts > 0 {
				dst = append(dst, ',')
			}
			n := a.contentLen()
			if a.safety == geminiSafetyFinish {
				n = min(n, a.k.ChunkSize)
			}
			dst = append(dst, `{"text":"`...)
			dst = appendFiller(dst, 0, n)
			dst = append(dst, `"}`...)
		}
	}
	finish := "STOP"
	if a.safety == geminiSafetyFinish {
		finish = "SAFETY"
	}
	return a.appendTail(dst, finish, true)
}

func (a *geminiAnswer) appendBuffered(dst []byte) []byte { return a.appendFinal(dst, false) }

var strGeminiStreamError = []byte(`data: {"error":{"code":503,"message":"The model is overloaded. (mock: stream_error_after)","status":"UNAVAILABLE"}}` + "\r\n\r\n")

func (a *geminiAnswer) writeStreamError(w *bufio.Writer) { w.Write(strGeminiStreamError) }

// appendGoogleError appends Google's error envelope.
func appendGoogleError(dst []byte, status int, message string) []byte {
	dst = append(dst, `{"error":{"code":`...)
	dst = appendInt(dst, status)
	dst = append(dst, `,"message":`...)
	dst = rawjson.AppendQuote(dst, message)
	dst = append(dst, `,"status":"`...)
	dst = append(dst, googleStatus(status)...)
	return append(dst, `"}}`...)
}

func googleStatus(status int) string {
	switch status {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 500:
		return "INTERNAL"
	case 501:
		return "UNIMPLEMENTED"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	return "UNKNOWN"
}
