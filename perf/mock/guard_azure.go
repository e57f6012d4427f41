package mock

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fasthttp"
)

// Guardrail services (guard_azure.go, guard_aliyun.go, guard_bedrock.go) speak the
// documented request and answer shapes of the cloud guardrail services gw calls, check
// their credentials or signatures, and decide from markers in the judged text:
//
//	Azure text:analyze   "<Category>:<n>" (Hate:4, Sexual:2, SelfHarm:6, Violence:7) sets that
//	                     category's severity (FourSeverityLevels rounds down to 0/2/4/6);
//	                     "blocklisted" hits the first blocklist named in the request
//	Azure shieldPrompt   "ignore previous instructions" (any case) is an attack, in the
//	                     userPrompt or in a document
//	Aliyun               "risk:high" / "risk:medium" / "risk:low" sets RiskLevel
//	                     (TextModerationPlus) or the content-moderation verdict, with
//	                     Suggestion block at high (MultiModalGuard); "attack:high" a prompt
//	                     attack (MultiModalGuard)
//	Bedrock              "BLOCKME" intervenes with a BLOCKED topic policy; an e-mail address
//	                     is ANONYMIZED to {EMAIL} (outputs carry every text, masked)
//	every service        "mock:malformed" answers 200 with a body of the wrong shape
//
// A gw guardrail cannot add x-mock-* headers, so knobs ride in the endpoint URL: the
// /knobs/ segment (latency=..., status=..., as for every route) and a /guardmock/ segment
// of word=marker pairs that make a text containing word judged as if it also held marker:
// endpoint http://mock/guardmock/deterministic=Violence:6 blocks the mock provider's filler
// answer (which says "deterministic") on output.

// Credentials the guardrail mocks accept.
const (
	AzureContentSafetyKey = "mock-azure-content-safety-key"
	AliyunAccessKeyID     = "LTAImockaliyun0001"
	AliyunAccessKeySecret = "mock-aliyun-secret-0000000000"
)

var (
	azureTextRoute = route{
		method:      fasthttp.MethodPost,
		match:       func(p []byte) bool { return bytes.HasSuffix(p, []byte("/contentsafety/text:analyze")) },
		serve:       (*Server).serveAzureText,
		appendError: appendAzureError,
	}
	azureShieldRoute = route{
		method:      fasthttp.MethodPost,
		match:       func(p []byte) bool { return bytes.HasSuffix(p, []byte("/contentsafety/text:shieldPrompt")) },
		serve:       (*Server).serveAzureShield,
		appendError: appendAzureError,
	}
)

// appendAzureError renders Azure AI services' {"error":{"code","message"}}.
func appendAzureError(dst []byte, status int, message string) []byte {
	dst = append(dst, `{"error":{"code":`...)
	dst = appendJSONString(dst, azureCode(status))
	dst = append(dst, `,"message":`...)
	dst = appendJSONString(dst, message)
	return append(dst, "}}"...)
}

func azureCode(status int) string {
	switch status {
	case 400:
		return "InvalidRequestBody"
	case 401:
		return "401"
	case 429:
		return "TooManyRequests"
	}
	return "InternalServerError"
}

func appendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s)
	return append(dst, b...)
}

// guardText is the text a guardrail mock judges: text plus the markers its
// /guardmock/ aliases add.
func guardText(ctx *fasthttp.RequestCtx, text string) string {
	raw := string(ctx.URI().PathOriginal())
	i := strings.Index(raw, "/guardmock/")
	if i < 0 {
		return text
	}
	seg := raw[i+len("/guardmock/"):]
	if j := strings.IndexByte(seg, '/'); j >= 0 {
		seg = seg[:j]
	}
	out := text
	for _, pair := range strings.Split(seg, ",") {
		w, m, ok := strings.Cut(pair, "=")
		if !ok {
			continue
		}
		w, _ = url.PathUnescape(w)
		m, _ = url.PathUnescape(m)
		if w != "" && strings.Contains(text, w) {
			out += " " + m
		}
	}
	return out
}

func (s *Server) azureAuth(ctx *fasthttp.RequestCtx) bool {
	if string(ctx.Request.Header.Peek("Ocp-Apim-Subscription-Key")) != AzureContentSafetyKey {
		s.writeError(ctx, appendAzureError, fasthttp.StatusUnauthorized,
			"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.")
		return false
	}
	if len(ctx.QueryArgs().Peek("api-version")) == 0 {
		s.writeError(ctx, appendAzureError, fasthttp.StatusNotFound, "Resource not found")
		return false
	}
	return true
}

var azureCategories = []string{"Hate", "Sexual", "SelfHarm", "Violence"}

func (s *Server) serveAzureText(ctx *fasthttp.RequestCtx, _ *Knobs) {
	if !s.azureAuth(ctx) {
		return
	}
	var in struct {
		Text               *string  `json:"text"`
		Categories         []string `json:"categories"`
		BlocklistNames     []string `json:"blocklistNames"`
		HaltOnBlocklistHit bool     `json:"haltOnBlocklistHit"`
		OutputType         string   `json:"outputType"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &in); err != nil || in.Text == nil {
		s.writeError(ctx, appendAzureError, fasthttp.StatusBadRequest, "The request body is invalid: text is required.")
		return
	}
	if n := utf8.RuneCountInString(*in.Text); n > 10000 || n == 0 {
		s.writeError(ctx, appendAzureError, fasthttp.StatusBadRequest, "The text length must be between 1 and 10000 characters.")
		return
	}
	eight := in.OutputType == "EightSeverityLevels"
	if in.OutputType != "" && !eight && in.OutputType != "FourSeverityLevels" {
		s.writeError(ctx, appendAzureError, fasthttp.StatusBadRequest, "outputType is invalid.")
		return
	}
	text := guardText(ctx, *in.Text)
	if strings.Contains(text, "mock:malformed") {
		writeJSON(ctx, []byte(`{"categoriesAnalysis":"not an array"}`))
		return
	}
	cats := in.Categories
	if len(cats) == 0 {
		cats = azureCategories
	}
	type match struct {
		Name string `json:"blocklistName"`
		ID   string `json:"blocklistItemId"`
		Text string `json:"blocklistItemText"`
	}
	type analysis struct {
		Category string `json:"category"`
		Severity int    `json:"severity"`
	}
	out := struct {
		Blocklists []match    `json:"blocklistsMatch"`
		Categories []analysis `json:"categoriesAnalysis"`
	}{Blocklists: []match{}, Categories: []analysis{}}
	if len(in.BlocklistNames) > 0 && strings.Contains(text, "blocklisted") {
		out.Blocklists = append(out.Blocklists, match{Name: in.BlocklistNames[0], ID: "mock-item-1", Text: "blocklisted"})
	}
	if len(out.Blocklists) == 0 || !in.HaltOnBlocklistHit {
		for _, c := range cats {
			sev := markerDigit(text, c+":")
			if !eight {
				sev &^= 1
				sev = min(sev, 6)
			}
			out.Categories = append(out.Categories, analysis{Category: c, Severity: sev})
		}
	}
	b, _ := json.Marshal(out)
	writeJSON(ctx, b)
}

// markerDigit returns the digit after the last prefix in text (0 when none).
func markerDigit(text, prefix string) int {
	i := strings.LastIndex(text, prefix)
	if i < 0 || i+len(prefix) >= len(text) {
		return 0
	}
	if c := text[i+len(prefix)]; c >= '0' && c <= '9' {
		return int(c - '0')
	}
	return 0
}

func writeJSON(ctx *fasthttp.RequestCtx, b []byte) {
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentTypeBytes(strJSON)
	ctx.SetBody(b)
}

func (s *Server) serveAzureShield(ctx *fasthttp.RequestCtx, _ *Knobs) {
	if !s.azureAuth(ctx) {
		return
	}
	var in struct {
		UserPrompt *string  `json:"userPrompt"`
		Documents  []string `json:"documents"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &in); err != nil || in.UserPrompt == nil {
		s.writeError(ctx, appendAzureError, fasthttp.StatusBadRequest, "The request body is invalid: userPrompt is required.")
		return
	}
	total := utf8.RuneCountInString(*in.UserPrompt)
	for _, d := range in.Documents {
		total += utf8.RuneCountInString(d)
	}
	if total > 10000 {
		s.writeError(ctx, appendAzureError, fasthttp.StatusBadRequest, "The total length of userPrompt and documents must not exceed 10000 characters.")
		return
	}
	attack := func(t string) bool {
		t = guardText(ctx, t)
		return strings.Contains(strings.ToLower(t), "ignore previous instructions")
	}
	if strings.Contains(guardText(ctx, *in.UserPrompt+strings.Join(in.Documents, " ")), "mock:malformed") {
		writeJSON(ctx, []byte(`{"userPromptAnalysis":{}}`))
		return
	}
	type res struct {
		Attack bool `json:"attackDetected"`
	}
	out := struct {
		User res   `json:"userPromptAnalysis"`
		Docs []res `json:"documentsAnalysis"`
	}{User: res{attack(*in.UserPrompt)}, Docs: []res{}}
	for _, d := range in.Documents {
		out.Docs = append(out.Docs, res{attack(d)})
	}
	b, _ := json.Marshal(out)
	writeJSON(ctx, b)
}
