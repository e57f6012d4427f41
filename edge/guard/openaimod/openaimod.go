// Package openaimod is the guardrail kind openai_moderation: one call to
// OpenAI's moderation endpoint (POST /v1/moderations) per check, every
// judged text one element of the `input` array. Detection only: it blocks
// or allows, never rewrites.
//
// Verdict rules (docs/GUARDRAILS_KINDS.md):
//   - category_thresholds empty: a result with `flagged: true` blocks; Rule
//     is the first category marked true in that result's `categories`
//     ("flagged" when none is).
//   - category_thresholds set: the provider's verdict is ignored; a result
//     whose `category_scores[c]` reaches the threshold of c blocks, Rule c.
//     Categories without a threshold never block.
//   - An answer without one result per input, or without the fields the
//     rule reads, is malformed: the check fails and fail_open decides.
package openaimod

import (
	"context"
	"errors"
	"strings"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/remote"
)

// maxRule bounds a Rule taken from the answer (a category name).
const maxRule = 64

// DefaultEndpoint is OpenAI's API base when `endpoint` is unset.
const DefaultEndpoint = "https://api.openai.com"

// Interface guards.
var (
	_ guard.Checker       = (*Checker)(nil)
	_ guard.CallDeadlines = (*Checker)(nil)
	_ guard.Concurrent    = (*Checker)(nil)
)

// Checker is a compiled openai_moderation guardrail; immutable.
type Checker struct {
	ep         *remote.Endpoint
	model      string
	thresholds []threshold // sorted as configured (map order made stable)
}

type threshold struct {
	category string
	min      float64
}

// New compiles g (kind openai_moderation).
func New(g *resources.Guardrail) (guard.Checker, error) {
	o, ok := g.Options.(*resources.OpenAIModerationOptions)
	if !ok {
		return nil, errOptions
	}
	base := o.Endpoint
	if base == "" {
		base = DefaultEndpoint
	}
	base, path := SplitEndpoint(base, "/v1", "/moderations")
	b, err := remote.New(remote.Config{Name: "openai_moderation", BaseURL: base, Timeout: remote.Timeout(g.TimeoutMS),
		Headers: []remote.Header{{Key: "Authorization", Value: "Bearer " + o.APIKey.Reveal()}}})
	if err != nil {
		return nil, err
	}
	c := &Checker{ep: b.Endpoint(path), model: o.Model}
	for k, v := range o.CategoryThresholds {
		c.thresholds = append(c.thresholds, threshold{category: k, min: v})
	}
	// Stable order: the Rule of a result over several thresholds must not
	// depend on map iteration.
	for i := 1; i < len(c.thresholds); i++ {
		for j := i; j > 0 && c.thresholds[j].category < c.thresholds[j-1].category; j-- {
			c.thresholds[j], c.thresholds[j-1] = c.thresholds[j-1], c.thresholds[j]
		}
	}
	return c, nil
}

// SplitEndpoint turns an `endpoint` override into the base URL and the path
// to call: a URL already ending in the operation (…/v1/moderations) is
// used as is, one ending in the version (…/v1) gets the operation, any
// other gets version and operation.
func SplitEndpoint(u, version, op string) (base, path string) {
	u = strings.TrimRight(u, "/")
	switch {
	case strings.HasSuffix(u, version+op):
		return strings.TrimSuffix(u, version+op), version + op
	case strings.HasSuffix(u, version):
		return strings.TrimSuffix(u, version), version + op
	}
	return u, version + op
}

var errOptions = errors.New("openai_moderation: options of another kind")

// CallDeadlines: timeout_ms bounds the one call (remote.Endpoint).
func (*Checker) CallDeadlines() {}

// Concurrent: detection only, waiting on the provider.
func (*Checker) Concurrent() bool { return true }

// Check sends every text in one request.
func (c *Checker) Check(ctx context.Context, req *guard.Request, v *guard.Verdict) error {
	buf := remote.GetBuffer()
	defer remote.PutBuffer(buf)
	b := append(buf.Req[:0], `{"model":`...)
	b = remote.AppendStringS(b, c.model)
	b = append(b, `,"input":[`...)
	for i, t := range req.Texts {
		if i > 0 {
			b = append(b, ',')
		}
		b = remote.AppendString(b, t.Data)
	}
	b = append(b, "]}"...)
	buf.Req = b
	var err error
	buf.Resp, err = c.ep.Post(ctx, buf.Req, buf.Resp[:0])
	if err != nil {
		return err
	}
	return c.ReadAnswer(buf.Resp, len(req.Texts), v)
}

// ReadAnswer reads a moderation answer to a request of inputs texts into
// v; an error (*remote.Error, class malformed) when it is not the
// documented shape. Exported for the fuzz target.
func (c *Checker) ReadAnswer(resp []byte, n int, v *guard.Verdict) error {
	results, kind, ok := remote.Get(resp, "results")
	if !ok || kind != remote.KindArray {
		return c.ep.Malformed("results is not an array")
	}
	count := 0
	var bad string
	err := remote.EachElem(results, func(i int, r []byte, kind remote.Kind) bool {
		count++
		if kind != remote.KindObject {
			bad = "a result is not an object"
			return false
		}
		if v.Action == guard.Block {
			return true // counting only
		}
		rule, problem := c.result(r)
		if problem != "" {
			bad = problem
			return false
		}
		if rule != "" {
			v.Action, v.Rule = guard.Block, rule
		}
		return true
	})
	switch {
	case err != nil:
		return c.ep.Malformed("results is not an array")
	case bad != "":
		return c.ep.Malformed(bad)
	case count != n:
		v.Action, v.Rule = guard.Allow, ""
		return c.ep.Malformed("results do not match the inputs")
	}
	return nil
}

// result returns the Rule one result blocks with ("" when it passes), or
// what is malformed about it.
func (c *Checker) result(r []byte) (rule, problem string) {
	if len(c.thresholds) == 0 {
		raw, kind, ok := remote.Get(r, "flagged")
		flagged, isBool := remote.Bool(raw, kind)
		if !ok || !isBool {
			return "", "flagged is not a boolean"
		}
		if !flagged {
			return "", ""
		}
		cats, kind, ok := remote.Get(r, "categories")
		rule = "flagged"
		if ok && kind == remote.KindObject {
			remote.EachKey(cats, func(key, val []byte, kind remote.Kind) bool {
				if kind == remote.KindTrue {
					if s, err := remote.Unquote(nil, key); err == nil && len(s) > 0 && len(s) <= maxRule {
						rule = string(s)
					}
					return false
				}
				return true
			})
		}
		return rule, ""
	}
	scores, kind, ok := remote.Get(r, "category_scores")
	if !ok || kind != remote.KindObject {
		return "", "category_scores is not an object"
	}
	for _, t := range c.thresholds {
		raw, kind, ok := remote.Get(scores, t.category)
		if !ok {
			continue // a category this model does not score
		}
		f, isNum := remote.Float(raw)
		if kind != remote.KindNumber || !isNum {
			return "", "a category score is not a number"
		}
		if f >= t.min {
			return t.category, ""
		}
	}
	return "", ""
}
