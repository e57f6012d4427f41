package mock

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fasthttp"
)

// Alibaba Cloud Content Moderation (green-cip, 2022-03-02): POST / (or any path ending in
// /aliyun/) with x-acs-action TextModerationPlus or MultiModalGuard, Service in the query,
// ServiceParameters ({"content": ...}, at most 2,000 characters) in the form body. Every
// request must be signed ACS3-HMAC-SHA256 by AliyunAccessKeyID / AliyunAccessKeySecret: the
// mock rebuilds the canonical request from what it received and answers Aliyun's 400
// SignatureDoesNotMatch when the signature differs. Business errors come as HTTP 200 with
// a Code other than 200, as the service does. Markers: see guard_azure.go.

var aliyunRoute = route{
	method: fasthttp.MethodPost,
	match: func(p []byte) bool {
		return string(p) == "/" || bytes.HasSuffix(p, []byte("/aliyun/"))
	},
	serve:       (*Server).serveAliyun,
	appendError: appendAliyunError,
}

// appendAliyunError renders {"Code": ..., "Message": ..., "RequestId": ...}.
func appendAliyunError(dst []byte, status int, message string) []byte {
	code := "InternalError"
	switch status {
	case 400:
		code = "InvalidParameter"
	case 403:
		code = "Forbidden"
	case 429:
		code = "Throttling.User"
	}
	dst = append(dst, `{"Code":`...)
	dst = appendJSONString(dst, code)
	dst = append(dst, `,"Message":`...)
	dst = appendJSONString(dst, message)
	return append(dst, `,"RequestId":"MOCK-REQUEST-ID"}`...)
}

func aliyunEncode(s string) string {
	return strings.NewReplacer("+", "%20", "*", "%2A", "%7E", "~").Replace(url.QueryEscape(s))
}

// verifyAliyunSignature checks the ACS3-HMAC-SHA256 signature of the request as received.
// It returns Aliyun's error code and message, or "" when the signature holds.
func verifyAliyunSignature(ctx *fasthttp.RequestCtx) (string, string) {
	auth := string(ctx.Request.Header.Peek("Authorization"))
	rest, ok := strings.CutPrefix(auth, "ACS3-HMAC-SHA256 ")
	if !ok {
		return "MissingAuthorization", "Authorization is mandatory for this action."
	}
	parts := map[string]string{}
	for _, p := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		parts[k] = v
	}
	if parts["Credential"] != AliyunAccessKeyID {
		return "InvalidAccessKeyId.NotFound", "Specified access key is not found."
	}
	body := ctx.PostBody()
	sum := sha256.Sum256(body)
	if string(ctx.Request.Header.Peek("x-acs-content-sha256")) != hex.EncodeToString(sum[:]) {
		return "ContentSHA256NotMatched", "The content sha256 is not matched."
	}
	signed := strings.Split(parts["SignedHeaders"], ";")
	need := map[string]bool{"host": false, "x-acs-action": false, "x-acs-version": false, "x-acs-date": false,
		"x-acs-signature-nonce": false, "x-acs-content-sha256": false}
	var canonHeaders strings.Builder
	for i, h := range signed {
		if i > 0 && signed[i-1] >= h {
			return "SignatureDoesNotMatch", "Specified signature is not matched with our calculation."
		}
		v := string(ctx.Request.Header.Peek(h))
		if h == "host" {
			v = string(ctx.Host())
		}
		need[h] = true
		canonHeaders.WriteString(h + ":" + strings.TrimSpace(v) + "\n")
	}
	for h, seen := range need {
		if !seen {
			return "SignatureDoesNotMatch", "Header " + h + " must be signed."
		}
	}
	args := ctx.QueryArgs()
	var q []string
	for k, v := range args.All() {
		q = append(q, aliyunEncode(string(k))+"="+aliyunEncode(string(v)))
	}
	sort.Strings(q)
	canon := string(ctx.Method()) + "\n" + string(ctx.URI().PathOriginal()) + "\n" + strings.Join(q, "&") + "\n" +
		canonHeaders.String() + "\n" + parts["SignedHeaders"] + "\n" + hex.EncodeToString(sum[:])
	h := sha256.Sum256([]byte(canon))
	m := hmac.New(sha256.New, []byte(AliyunAccessKeySecret))
	m.Write([]byte("ACS3-HMAC-SHA256\n" + hex.EncodeToString(h[:])))
	if !hmac.Equal([]byte(hex.EncodeToString(m.Sum(nil))), []byte(parts["Signature"])) {
		return "SignatureDoesNotMatch", "Specified signature is not matched with our calculation."
	}
	return "", ""
}

func (s *Server) aliyunFail(ctx *fasthttp.RequestCtx, status int, code, msg string) {
	s.stats.errors.Add(1)
	b, _ := json.Marshal(map[string]any{"Code": code, "Message": msg, "RequestId": "MOCK-REQUEST-ID"})
	ctx.SetStatusCode(status)
	ctx.SetContentTypeBytes(strJSON)
	ctx.SetBody(b)
}

// aliyunBusiness answers HTTP 200 with a business error Code.
func aliyunBusiness(ctx *fasthttp.RequestCtx, code int, msg string) {
	b, _ := json.Marshal(map[string]any{"Code": code, "Message": msg, "RequestId": "MOCK-REQUEST-ID"})
	writeJSON(ctx, b)
}

func (s *Server) serveAliyun(ctx *fasthttp.RequestCtx, _ *Knobs) {
	if code, msg := verifyAliyunSignature(ctx); code != "" {
		s.aliyunFail(ctx, fasthttp.StatusBadRequest, code, msg)
		return
	}
	if v := string(ctx.Request.Header.Peek("x-acs-version")); v != "2022-03-02" {
		s.aliyunFail(ctx, fasthttp.StatusBadRequest, "InvalidVersion", "Specified parameter Version is not valid.")
		return
	}
	action := string(ctx.Request.Header.Peek("x-acs-action"))
	service := string(ctx.QueryArgs().Peek("Service"))
	form, err := url.ParseQuery(string(ctx.PostBody()))
	if err != nil {
		aliyunBusiness(ctx, 400, "ServiceParameters is not a form value")
		return
	}
	var params struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal([]byte(form.Get("ServiceParameters")), &params); err != nil || params.Content == nil {
		aliyunBusiness(ctx, 400, "ServiceParameters.content is required")
		return
	}
	if n := utf8.RuneCountInString(*params.Content); n > 2000 {
		aliyunBusiness(ctx, 400, "content exceeds 2000 characters")
		return
	}
	text := guardText(ctx, *params.Content)
	if strings.Contains(text, "mock:malformed") {
		writeJSON(ctx, []byte(`{"Code":200,"Message":"OK","RequestId":"MOCK-REQUEST-ID","Data":"not an object"}`))
		return
	}
	level := "none"
	for _, l := range [...]string{"low", "medium", "high"} {
		if strings.Contains(text, "risk:"+l) {
			level = l
		}
	}
	var data any
	switch action {
	case "TextModerationPlus":
		if service != "llm_query_moderation" && service != "llm_response_moderation" {
			aliyunBusiness(ctx, 400, "Service is not supported")
			return
		}
		label := "nonLabel"
		if level != "none" {
			label = "political_content"
		}
		data = map[string]any{"RiskLevel": level, "Result": []map[string]any{{"Label": label, "Confidence": 99.5, "Description": "mock"}}}
	case "MultiModalGuard":
		switch service {
		case "query_security_check", "query_security_check_pro", "response_security_check", "response_security_check_pro":
		default:
			aliyunBusiness(ctx, 400, "Service is not supported")
			return
		}
		attack := "none"
		if strings.Contains(text, "attack:high") {
			attack = "high"
		}
		sugg := func(l string) string {
			if l == "high" {
				return "block"
			}
			if l == "none" {
				return "pass"
			}
			return "watch"
		}
		overall := "pass"
		if level == "high" || attack == "high" {
			overall = "block"
		}
		data = map[string]any{"RiskLevel": level, "AttackLevel": attack, "Suggestion": overall,
			"Detail": []map[string]any{
				{"Type": "contentModeration", "Level": level, "Suggestion": sugg(level)},
				{"Type": "promptAttack", "Level": attack, "Suggestion": sugg(attack)},
			}}
	default:
		s.aliyunFail(ctx, fasthttp.StatusBadRequest, "InvalidAction.NotFound", "Specified api is not found, please check your url and method.")
		return
	}
	b, _ := json.Marshal(map[string]any{"Code": 200, "Message": "OK", "RequestId": "MOCK-REQUEST-ID", "Data": data})
	writeJSON(ctx, b)
}
