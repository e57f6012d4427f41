// Package aliyunguard is the `aliyun_ai_guardrail` guardrail kind:
// Alibaba Cloud AI Guardrails (action MultiModalGuard, text services
// query_security_check / response_security_check, with the _pro suffix
// for service_level pro), signed ACS3-HMAC-SHA256.
//
// A check's texts are joined by a newline and split into chunks of at
// most 2,000 characters; one sequential call per chunk, each bounded by
// timeout_ms. The service gives its own verdict: a chunk blocks when
// Data.Suggestion, or the Suggestion of any Data.Detail entry, is
// "block"; an answer without any Suggestion blocks when RiskLevel or
// AttackLevel is high. The rule recorded is the blocking Detail's Type
// (contentModeration, promptAttack, sensitiveData, ...). Detection only:
// masking suggestions are not applied (the mask answer's shape is not
// part of the documented text API), so "mask" passes.
package aliyunguard

import (
	"context"
	"errors"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/aliyunapi"
	"gw/edge/guard/remote"
	"gw/sse/rawjson"
)

// Action is the AI Guardrails API action.
const Action = "MultiModalGuard"

// Interface guards.
var _ guard.Checker = (*Checker)(nil)

// Checker is one compiled guardrail. Immutable, safe for concurrent use.
type Checker struct {
	api     *aliyunapi.Client
	in, out string // services
}

// New compiles g.
func New(g *resources.Guardrail) (guard.Checker, error) {
	o, ok := g.Options.(*resources.AliyunAIGuardrailOptions)
	if !ok || o == nil {
		return nil, errors.New("cannot build guardrail \"" + g.Name + "\": options are not aliyun_ai_guardrail options")
	}
	c, err := NewChecker(g.Name, o, g.TimeoutMS)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Services returns the input and output services of a service level.
func Services(level string) (in, out string) {
	if level == "basic" {
		return "query_security_check", "response_security_check"
	}
	return "query_security_check_pro", "response_security_check_pro"
}

// NewChecker is New with the concrete type.
func NewChecker(name string, o *resources.AliyunAIGuardrailOptions, timeoutMS int64) (*Checker, error) {
	in, out := Services(o.ServiceLevel)
	api, err := aliyunapi.New(name, &o.AliyunCredentials, timeoutMS, Action, in, out)
	if err != nil {
		return nil, err
	}
	return &Checker{api: api, in: in, out: out}, nil
}

// API is the client (tests).
func (c *Checker) API() *aliyunapi.Client { return c.api }

// CallDeadlines (guard.CallDeadlines, from the remote layer's branch):
// timeout_ms bounds each chunk's call, not the whole check.
func (*Checker) CallDeadlines() {}

// Check judges req's texts chunk by chunk.
func (c *Checker) Check(ctx context.Context, req *guard.Request, v *guard.Verdict) error {
	service := c.in
	if req.Phase == guard.Output {
		service = c.out
	}
	buf := remote.GetBuffer()
	defer remote.PutBuffer(buf)
	buf.Aux = aliyunapi.Join(buf.Aux[:0], req)
	var arr [8][]byte
	for _, chunk := range remote.Chunks(arr[:0], buf.Aux, aliyunapi.ChunkChars) {
		data, err := c.api.Call(ctx, service, chunk, buf)
		if err != nil {
			return err
		}
		rule, err := Verdict(data)
		if err != nil {
			return c.api.Malformed(service, err.Error())
		}
		if rule != "" {
			v.Action, v.Rule = guard.Block, rule
			return nil
		}
	}
	return nil
}

var errDetail = errors.New("Data.Detail is not an array of objects")

// Verdict returns the rule of a blocking Data ("" to pass). Its error is a
// fixed phrase.
func Verdict(data []byte) (string, error) {
	rule, sawSuggestion := "", false
	if s, k, ok := remote.Get(data, "Suggestion"); ok && k == remote.KindString {
		sawSuggestion = true
		if remote.StringEquals(s, "block") {
			rule = "block"
		}
	}
	if det, k, ok := remote.Get(data, "Detail"); ok && k != remote.KindNull {
		if k != remote.KindArray {
			return "", errDetail
		}
		bad := false
		err := remote.EachElem(det, func(_ int, e []byte, ek rawjson.Kind) bool {
			if ek != remote.KindObject {
				bad = true
				return false
			}
			s, sk, ok := remote.Get(e, "Suggestion")
			if !ok || sk != remote.KindString {
				return true
			}
			sawSuggestion = true
			if remote.StringEquals(s, "block") {
				rule = "block"
				if t, tk, ok := remote.Get(e, "Type"); ok && tk == remote.KindString {
					if name, err := remote.Unquote(nil, t); err == nil && aliyunapi.LabelOK(name) {
						rule = string(name)
					}
				}
				return false
			}
			return true
		})
		if err != nil || bad {
			return "", errDetail
		}
	}
	if sawSuggestion {
		return rule, nil
	}
	risk, rk, rok := remote.Get(data, "RiskLevel")
	attack, ak, aok := remote.Get(data, "AttackLevel")
	if (!rok || rk != remote.KindString) && (!aok || ak != remote.KindString) {
		return "", errors.New("Data has neither Suggestion nor RiskLevel")
	}
	if rok && aliyunapi.Level(risk) == 3 {
		return "contentModeration", nil
	}
	if aok && aliyunapi.Level(attack) == 3 {
		return "promptAttack", nil
	}
	return "", nil
}
