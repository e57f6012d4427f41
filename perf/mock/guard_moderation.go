package mock

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"
)

// OpenAI moderation (POST .../moderations), as documented: {"model",
// "input": string or array of strings} answers {"id","model","results":[
// {"flagged","categories":{c: bool},"category_scores":{c: float},
// "category_applied_input_types":{c: ["text"]}}]}, one result per input.
//
// Verdict knobs ride in the judged text, the only thing a gateway test
// controls end to end:
//
//	[flag:<category>]        that category scores 0.95 (flagged)
//	[flag:<category>=<score>] that category scores <score>; flagged when >= 0.5
//	[malformed]              the answer is 200 with a body that is not JSON
//
// Every other category scores 0.0001. A /flag-on=<word>/ segment in the
// base URL (percent-decoded) flags every input containing <word> as
// violence: the way to flag an upstream's fixed answer in a gateway test.
// The knobs of every route (latency, status, error_body, ...) apply too.
var openAIModerationRoute = route{
	method:      fasthttp.MethodPost,
	match:       func(path []byte) bool { return bytes.HasSuffix(path, strModerationsPath) },
	serve:       (*Server).serveModeration,
	appendError: appendOpenAIError,
}

var strModerationsPath = []byte("/moderations")

// ModerationCategories are the categories of omni-moderation-latest.
var ModerationCategories = []string{"harassment", "harassment/threatening", "hate", "hate/threatening",
	"illicit", "illicit/violent", "self-harm", "self-harm/intent", "self-harm/instructions",
	"sexual", "sexual/minors", "violence", "violence/graphic"}

var (
	reGuardFlag      = regexp.MustCompile(`\[flag:([a-z_/\-]+)(?:=([0-9.]+))?\]`)
	strMockMalformed = []byte("[malformed]")
)

var strFlagOn = []byte("/flag-on=")

// guardFlagWord returns the word of a /flag-on=<word>/ segment of the raw
// request path, "" when there is none.
func guardFlagWord(ctx *fasthttp.RequestCtx) string {
	raw := ctx.URI().PathOriginal()
	i := bytes.Index(raw, strFlagOn)
	if i < 0 {
		return ""
	}
	seg := raw[i+len(strFlagOn):]
	if j := bytes.IndexByte(seg, '/'); j >= 0 {
		seg = seg[:j]
	}
	w, err := url.PathUnescape(string(seg))
	if err != nil {
		return ""
	}
	return w
}

// guardFlags reads the [flag:...] knobs of text: category → score.
func guardFlags(text string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range reGuardFlag.FindAllStringSubmatch(text, -1) {
		score := 0.95
		if m[2] != "" {
			if f, err := strconv.ParseFloat(m[2], 64); err == nil {
				score = f
			}
		}
		out[m[1]] = score
	}
	return out
}

type moderationResult struct {
	Flagged      bool                `json:"flagged"`
	Categories   map[string]bool     `json:"categories"`
	Scores       map[string]float64  `json:"category_scores"`
	AppliedTypes map[string][]string `json:"category_applied_input_types"`
}

func (s *Server) serveModeration(ctx *fasthttp.RequestCtx, k *Knobs) {
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &req); err != nil || len(req.Input) == 0 {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "mock: body must be {model, input}")
		return
	}
	var inputs []string
	if req.Input[0] == '"' {
		var one string
		if json.Unmarshal(req.Input, &one) != nil {
			s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "mock: input must be a string or an array of strings")
			return
		}
		inputs = []string{one}
	} else if json.Unmarshal(req.Input, &inputs) != nil {
		s.writeError(ctx, appendOpenAIError, fasthttp.StatusBadRequest, "mock: input must be a string or an array of strings")
		return
	}
	if req.Model == "" {
		req.Model = "omni-moderation-latest"
	}
	out := struct {
		ID      string             `json:"id"`
		Model   string             `json:"model"`
		Results []moderationResult `json:"results"`
	}{ID: "modr-" + strconv.FormatUint(s.seq.Add(1), 10), Model: req.Model}
	for _, in := range inputs {
		if bytes.Contains([]byte(in), strMockMalformed) {
			ctx.SetContentTypeBytes(strJSON)
			ctx.SetBodyString(`{"results": [ {"flagged": tru`)
			return
		}
		flags := guardFlags(in)
		if w := guardFlagWord(ctx); w != "" && strings.Contains(in, w) {
			flags["violence"] = 0.95
		}
		r := moderationResult{Categories: map[string]bool{}, Scores: map[string]float64{}, AppliedTypes: map[string][]string{}}
		for _, c := range ModerationCategories {
			score, ok := flags[c]
			if !ok {
				score = 0.0001
			}
			r.Scores[c] = score
			r.Categories[c] = score >= 0.5
			r.Flagged = r.Flagged || score >= 0.5
			r.AppliedTypes[c] = []string{"text"}
		}
		out.Results = append(out.Results, r)
	}
	writeMockJSON(ctx, out)
}

// writeMockJSON answers 200 with v as JSON.
func writeMockJSON(ctx *fasthttp.RequestCtx, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		ctx.Error("mock: "+err.Error(), fasthttp.StatusInternalServerError)
		return
	}
	ctx.SetContentTypeBytes(strJSON)
	ctx.SetBody(b)
}
