// Package aliyuntext is the `aliyun_text_moderation` guardrail kind:
// Alibaba Cloud Text Moderation 2.0 (action TextModerationPlus) with the
// LLM services llm_query_moderation (input) and llm_response_moderation
// (output), signed ACS3-HMAC-SHA256.
//
// A check's texts are joined by a newline and split into chunks of at
// most 2,000 characters (the service's limit); one sequential call per
// chunk, each bounded by timeout_ms. A chunk blocks when its
// Data.RiskLevel (none, low, medium, high) reaches risk_level_threshold
// (default high); the rule recorded is the first Result label. Detection
// only: this kind never rewrites.
package aliyuntext

import (
	"context"
	"errors"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/aliyunapi"
	"gw/edge/guard/remote"
	"gw/sse/rawjson"
)

// Action and services.
const (
	Action        = "TextModerationPlus"
	ServiceInput  = "llm_query_moderation"
	ServiceOutput = "llm_response_moderation"
)

// Interface guards.
var _ guard.Checker = (*Checker)(nil)

// Checker is one compiled guardrail. Immutable, safe for concurrent use.
type Checker struct {
	api       *aliyunapi.Client
	threshold int
}

// New compiles g.
func New(g *resources.Guardrail) (guard.Checker, error) {
	o, ok := g.Options.(*resources.AliyunTextModerationOptions)
	if !ok || o == nil {
		return nil, errors.New("cannot build guardrail \"" + g.Name + "\": options are not aliyun_text_moderation options")
	}
	c, err := NewChecker(g.Name, o, g.TimeoutMS)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// NewChecker is New with the concrete type.
func NewChecker(name string, o *resources.AliyunTextModerationOptions, timeoutMS int64) (*Checker, error) {
	api, err := aliyunapi.New(name, &o.AliyunCredentials, timeoutMS, Action, ServiceInput, ServiceOutput)
	if err != nil {
		return nil, err
	}
	t := aliyunapi.LevelOf(o.RiskLevelThreshold)
	if t < 1 {
		t = aliyunapi.LevelOf("high")
	}
	return &Checker{api: api, threshold: t}, nil
}

// API is the client (tests).
func (c *Checker) API() *aliyunapi.Client { return c.api }

// CallDeadlines (guard.CallDeadlines, from the remote layer's branch):
// timeout_ms bounds each chunk's call, not the whole check.
func (*Checker) CallDeadlines() {}

// Check judges req's texts chunk by chunk.
func (c *Checker) Check(ctx context.Context, req *guard.Request, v *guard.Verdict) error {
	service := ServiceInput
	if req.Phase == guard.Output {
		service = ServiceOutput
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
		raw, kind, ok := remote.Get(data, "RiskLevel")
		if !ok || kind != remote.KindString {
			return c.api.Malformed(service, "Data.RiskLevel is not a string")
		}
		lvl := aliyunapi.Level(raw)
		if lvl < 0 {
			return c.api.Malformed(service, "Data.RiskLevel is not none, low, medium or high")
		}
		if lvl >= c.threshold {
			v.Action, v.Rule = guard.Block, ruleOf(data)
			return nil
		}
	}
	return nil
}

// ruleOf names the first Result label of a risky answer, from a fixed
// set (a label is the service's category name, never the text), or
// "risk_level".
func ruleOf(data []byte) string {
	rule := "risk_level"
	if res, kind, ok := remote.Get(data, "Result"); ok && kind == remote.KindArray {
		_ = remote.EachElem(res, func(_ int, e []byte, _ rawjson.Kind) bool {
			if l, k, ok := remote.Get(e, "Label"); ok && k == remote.KindString {
				if s, err := remote.Unquote(nil, l); err == nil && aliyunapi.LabelOK(s) {
					rule = string(s)
				}
			}
			return false
		})
	}
	return rule
}
