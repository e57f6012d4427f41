package mock

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/valyala/fasthttp"
)

// Amazon Bedrock Guardrails ApplyGuardrail: POST .../guardrail/{id}/version/{version}/apply
// with {"source": "INPUT"|"OUTPUT", "content": [{"text": {"text": ...}}]}, SigV4-signed by
// BedrockAccessKeyID / BedrockSecretAccessKey (signing name bedrock; checked as for
// Converse). The answer has action NONE or GUARDRAIL_INTERVENED, outputs, assessments and
// usage in Bedrock's shapes. Markers: see guard_azure.go.

var bedrockGuardrailRoute = route{
	method: fasthttp.MethodPost,
	match: func(p []byte) bool {
		return bytes.Contains(p, []byte("/guardrail/")) && bytes.HasSuffix(p, []byte("/apply"))
	},
	serve:       (*Server).serveBedrockGuardrail,
	appendError: appendBedrockError,
}

var (
	mockEmailRE        = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)
	bedrockVersionPath = regexp.MustCompile(`/guardrail/[^/]+/version/(DRAFT|[1-9][0-9]*)/apply$`)
)

// BedrockBlockedMessage is the blocked-input message the mock guardrail returns.
const BedrockBlockedMessage = "Sorry, the model cannot answer this question."

func (s *Server) serveBedrockGuardrail(ctx *fasthttp.RequestCtx, _ *Knobs) {
	if typ, msg := verifyBedrockSignature(ctx); typ != "" {
		s.bedrockError(ctx, fasthttp.StatusForbidden, typ, msg)
		return
	}
	if !bedrockVersionPath.Match(ctx.URI().PathOriginal()) {
		s.bedrockError(ctx, fasthttp.StatusBadRequest, "ValidationException", "The guardrail version is invalid.")
		return
	}
	var in struct {
		Source  string `json:"source"`
		Content []struct {
			Text *struct {
				Text string `json:"text"`
			} `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &in); err != nil || (in.Source != "INPUT" && in.Source != "OUTPUT") || len(in.Content) == 0 {
		s.bedrockError(ctx, fasthttp.StatusBadRequest, "ValidationException", "1 validation error detected: source and content are required.")
		return
	}
	texts := make([]string, len(in.Content))
	all := ""
	for i, c := range in.Content {
		if c.Text == nil {
			s.bedrockError(ctx, fasthttp.StatusBadRequest, "ValidationException", "content blocks must be text.")
			return
		}
		texts[i] = c.Text.Text
		all += guardText(ctx, c.Text.Text) + "\n"
	}
	if strings.Contains(all, "mock:malformed") {
		writeJSON(ctx, []byte(`{"action":5,"outputs":{}}`))
		return
	}
	usage := map[string]int{"topicPolicyUnits": len(texts), "contentPolicyUnits": len(texts), "wordPolicyUnits": len(texts),
		"sensitiveInformationPolicyUnits": len(texts), "sensitiveInformationPolicyFreeUnits": 0, "contextualGroundingPolicyUnits": 0}
	out := map[string]any{"usage": usage, "action": "NONE", "outputs": []any{}, "assessments": []any{}}
	switch {
	case strings.Contains(all, "BLOCKME"):
		out["action"] = "GUARDRAIL_INTERVENED"
		out["actionReason"] = "Guardrail blocked."
		out["outputs"] = []map[string]string{{"text": BedrockBlockedMessage}}
		out["assessments"] = []any{map[string]any{"topicPolicy": map[string]any{
			"topics": []map[string]any{{"name": "mock-denied-topic", "type": "DENY", "action": "BLOCKED", "detected": true}}}}}
	case mockEmailRE.MatchString(all):
		var pii []map[string]any
		outs := make([]map[string]string, len(texts))
		for i, t := range texts {
			for _, m := range mockEmailRE.FindAllString(t, -1) {
				pii = append(pii, map[string]any{"match": m, "type": "EMAIL", "action": "ANONYMIZED", "detected": true})
			}
			outs[i] = map[string]string{"text": mockEmailRE.ReplaceAllString(t, "{EMAIL}")}
		}
		out["action"] = "GUARDRAIL_INTERVENED"
		out["actionReason"] = "Guardrail masked."
		out["outputs"] = outs
		out["assessments"] = []any{map[string]any{"sensitiveInformationPolicy": map[string]any{"piiEntities": pii}}}
	}
	b, _ := json.Marshal(out)
	writeJSON(ctx, b)
}
