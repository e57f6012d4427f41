package mock

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/valyala/fasthttp"
)

// Lakera Guard v2 (POST .../v2/guard), as documented: {"messages":[{role,
// content}], "project_id"?, "breakdown"?, "payload"?, "dev_info"?} answers
// {"flagged": bool, "metadata": {"request_uuid"}} plus, with breakdown
// true, "breakdown": [{project_id, policy_id, detector_id, detector_type,
// detected, message_id}] for every detector run. An Authorization: Bearer
// header is required (401 without).
//
// Verdict knobs in a message's content:
//
//	[flag:<detector_type>]          that detector fires (prompt_attack,
//	                                moderated_content/hate, pii/email, ...)
//	ignore previous instructions    prompt_attack fires (case-insensitive)
//	[malformed]                     the answer is 200 and not the documented shape
//
// and a /flag-on=<word>/ segment in the base URL fires prompt_attack on
// every message containing <word>.
var lakeraGuardRoute = route{
	method:      fasthttp.MethodPost,
	match:       func(path []byte) bool { return bytes.HasSuffix(path, strLakeraGuardPath) },
	serve:       (*Server).serveLakeraGuard,
	appendError: appendLakeraError,
}

var strLakeraGuardPath = []byte("/v2/guard")

// lakeraDetectors are the detector types the mock reports in a breakdown.
var lakeraDetectors = []string{"prompt_attack", "moderated_content/hate", "moderated_content/violence", "pii/email", "unknown_links"}

func appendLakeraError(dst []byte, status int, message string) []byte {
	b, _ := json.Marshal(map[string]string{"message": message})
	return append(dst, b...)
}

type lakeraDetector struct {
	ProjectID    string `json:"project_id"`
	PolicyID     string `json:"policy_id"`
	DetectorID   string `json:"detector_id"`
	DetectorType string `json:"detector_type"`
	Detected     bool   `json:"detected"`
	MessageID    int    `json:"message_id"`
}

func (s *Server) serveLakeraGuard(ctx *fasthttp.RequestCtx, k *Knobs) {
	if !bytes.HasPrefix(ctx.Request.Header.Peek("Authorization"), []byte("Bearer ")) {
		s.writeError(ctx, appendLakeraError, fasthttp.StatusUnauthorized, "mock: missing bearer token")
		return
	}
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		ProjectID string `json:"project_id"`
		Breakdown bool   `json:"breakdown"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &req); err != nil || len(req.Messages) == 0 {
		s.writeError(ctx, appendLakeraError, fasthttp.StatusBadRequest, "mock: body must be {messages: [{role, content}]}")
		return
	}
	project := req.ProjectID
	if project == "" {
		project = "project-default"
	}
	fired := map[string]int{} // detector → message index
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "user", "assistant":
		default:
			s.writeError(ctx, appendLakeraError, fasthttp.StatusBadRequest, "mock: unknown role "+m.Role)
			return
		}
		if strings.Contains(m.Content, "[malformed]") {
			ctx.SetContentTypeBytes(strJSON)
			ctx.SetBodyString(`{"flagged": "maybe"}`)
			return
		}
		for c := range guardFlags(m.Content) {
			if _, ok := fired[c]; !ok {
				fired[c] = i
			}
		}
		if w := guardFlagWord(ctx); (w != "" && strings.Contains(m.Content, w)) ||
			strings.Contains(strings.ToLower(m.Content), "ignore previous instructions") {
			if _, ok := fired["prompt_attack"]; !ok {
				fired["prompt_attack"] = i
			}
		}
	}
	out := map[string]any{"flagged": len(fired) > 0, "metadata": map[string]string{"request_uuid": "mock-" + project}}
	if req.Breakdown {
		var bd []lakeraDetector
		types := append([]string(nil), lakeraDetectors...)
		var extra []string
		for t := range fired {
			if !contains(types, t) {
				extra = append(extra, t)
			}
		}
		sort.Strings(extra)
		types = append(types, extra...)
		for _, t := range types {
			i, hit := fired[t]
			bd = append(bd, lakeraDetector{ProjectID: project, PolicyID: "policy-mock", DetectorID: "detector-" + t,
				DetectorType: t, Detected: hit, MessageID: i})
		}
		out["breakdown"] = bd
	}
	writeMockJSON(ctx, out)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
