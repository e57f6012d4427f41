// Package azuretext is the `azure_content_safety_text_moderation`
// guardrail kind: Azure AI Content Safety "Analyze Text"
// (POST {endpoint}/contentsafety/text:analyze?api-version=2024-09-01,
// key in Ocp-Apim-Subscription-Key).
//
// The texts of one check are concatenated (input: the user's texts with
// text_source concatenate_user_content, every text with
// concatenate_all_content; output: the answer's texts), joined by a
// newline, and split into chunks of at most 10,000 characters (the
// service's limit per request); one call per chunk, sequential, each
// bounded by timeout_ms. The first chunk that blocks ends the check.
//
// A chunk blocks when a configured category's severity reaches its
// threshold (severity_threshold_by_category, else severity_threshold) or
// when a blocklist matched. Azure text moderation never rewrites.
package azuretext

import (
	"context"
	"errors"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/remote"
	"gw/sse/rawjson"
)

// ChunkChars is the service's limit per request, in characters (spec
// "Limits": Azure text chunk 10,000).
const ChunkChars = 10000

// APIVersion is the Content Safety API version gw speaks.
const APIVersion = "2024-09-01"

// Path is the analyze endpoint below the resource endpoint.
const Path = "/contentsafety/text:analyze?api-version=" + APIVersion

// Interface guards.
var _ guard.Checker = (*Checker)(nil)

// Checker is one compiled guardrail. Immutable, safe for concurrent use.
type Checker struct {
	ep *remote.Endpoint
	// tail is the request body after "text": the categories, blocklists
	// and output type, rendered once.
	tail    []byte
	allText bool // text_source concatenate_all_content
	// thresholds per AzureTextCategories index; -1 when the category is
	// not configured.
	thresholds [4]int64
}

// New compiles g.
func New(g *resources.Guardrail) (guard.Checker, error) {
	o, ok := g.Options.(*resources.AzureTextModerationOptions)
	if !ok || o == nil {
		return nil, errors.New("cannot build guardrail \"" + g.Name + "\": options are not azure_content_safety_text_moderation options")
	}
	b, err := remote.New(remote.Config{
		Name: "azure content safety (guardrail " + g.Name + ")", BaseURL: o.Endpoint,
		Timeout: remote.Timeout(g.TimeoutMS),
		Headers: []remote.Header{{Key: "Ocp-Apim-Subscription-Key", Value: o.APIKey.Reveal()}},
	})
	if err != nil {
		return nil, errors.New("cannot build guardrail \"" + g.Name + "\": " + err.Error())
	}
	c := &Checker{ep: b.Endpoint(Path), allText: o.TextSource == "concatenate_all_content"}
	for i := range c.thresholds {
		c.thresholds[i] = -1
	}
	tail := []byte(`,"categories":[`)
	for i, cat := range o.Categories {
		if i > 0 {
			tail = append(tail, ',')
		}
		tail = remote.AppendStringS(tail, cat)
		if k := categoryIndex([]byte(cat)); k >= 0 {
			c.thresholds[k] = o.Threshold(cat)
		}
	}
	tail = append(tail, ']')
	if len(o.BlocklistNames) > 0 {
		tail = append(tail, `,"blocklistNames":[`...)
		for i, n := range o.BlocklistNames {
			if i > 0 {
				tail = append(tail, ',')
			}
			tail = remote.AppendStringS(tail, n)
		}
		tail = append(tail, ']')
		if o.HaltOnBlocklistHit {
			tail = append(tail, `,"haltOnBlocklistHit":true`...)
		} else {
			tail = append(tail, `,"haltOnBlocklistHit":false`...)
		}
	}
	tail = append(tail, `,"outputType":`...)
	tail = remote.AppendStringS(tail, o.OutputType)
	c.tail = append(tail, '}')
	return c, nil
}

// CallDeadlines (guard.CallDeadlines, from the remote layer's branch):
// timeout_ms bounds each chunk's call, not the whole check.
func (*Checker) CallDeadlines() {}

// Check judges the texts of req, one call per chunk.
func (c *Checker) Check(ctx context.Context, req *guard.Request, v *guard.Verdict) error {
	buf := remote.GetBuffer()
	defer remote.PutBuffer(buf)
	buf.Aux = Join(buf.Aux[:0], req, c.allText)
	if len(buf.Aux) == 0 {
		return nil
	}
	var arr [8][]byte
	for _, chunk := range remote.Chunks(arr[:0], buf.Aux, ChunkChars) {
		buf.Req = append(buf.Req[:0], `{"text":`...)
		buf.Req = remote.AppendString(buf.Req, chunk)
		buf.Req = append(buf.Req, c.tail...)
		var err error
		if buf.Resp, err = c.ep.Post(ctx, buf.Req, buf.Resp[:0]); err != nil {
			return err
		}
		rule, err := c.Judge(buf.Resp)
		if err != nil {
			return err
		}
		if rule != "" {
			v.Action, v.Rule = guard.Block, rule
			return nil
		}
	}
	return nil
}

// Join appends the texts a check sends, newline-separated: on input the
// user's texts (every text when all), on output every text.
func Join(dst []byte, req *guard.Request, all bool) []byte {
	n := 0
	for _, t := range req.Texts {
		if req.Phase == guard.Input && !all && t.Role != guard.RoleUser {
			continue
		}
		if len(t.Data) == 0 {
			continue
		}
		if n > 0 {
			dst = append(dst, '\n')
		}
		dst = append(dst, t.Data...)
		n++
	}
	return dst
}

// Categories as Azure names them, in AzureTextCategories order.
var categories = [4]string{"Hate", "Sexual", "SelfHarm", "Violence"}

func categoryIndex(raw []byte) int {
	for i, c := range categories {
		if string(raw) == c {
			return i
		}
	}
	return -1
}

// Judge reads one analyze answer: the rule that blocks ("" for none), or
// an error when the answer is not the documented shape.
func (c *Checker) Judge(resp []byte) (string, error) {
	cats, kind, ok := remote.Get(resp, "categoriesAnalysis")
	if !ok || kind != remote.KindArray {
		return "", c.ep.Malformed("categoriesAnalysis is not an array")
	}
	if bl, kind, ok := remote.Get(resp, "blocklistsMatch"); ok && kind != remote.KindNull {
		if kind != remote.KindArray {
			return "", c.ep.Malformed("blocklistsMatch is not an array")
		}
		hit := false
		if err := remote.EachElem(bl, func(int, []byte, rawjson.Kind) bool { hit = true; return false }); err != nil {
			return "", c.ep.Malformed("blocklistsMatch is not an array")
		}
		if hit {
			return "blocklist", nil
		}
	}
	rule, bad := "", ""
	var name [16]byte
	err := remote.EachElem(cats, func(_ int, e []byte, kind rawjson.Kind) bool {
		if kind != remote.KindObject {
			bad = "a categoriesAnalysis entry is not an object"
			return false
		}
		rc, ck, ok1 := remote.Get(e, "category")
		rs, sk, ok2 := remote.Get(e, "severity")
		if !ok1 || ck != remote.KindString || !ok2 || sk != remote.KindNumber {
			bad = "a categoriesAnalysis entry lacks category or severity"
			return false
		}
		sev, ok := remote.Int(rs)
		if !ok {
			bad = "a severity is not an integer"
			return false
		}
		cn, err := remote.Unquote(name[:0], rc)
		if err != nil {
			bad = "a category is not a string"
			return false
		}
		if k := categoryIndex(cn); k >= 0 && c.thresholds[k] >= 0 && sev >= c.thresholds[k] {
			rule = categories[k]
			return false
		}
		return true
	})
	switch {
	case bad != "":
		return "", c.ep.Malformed(bad)
	case err != nil:
		return "", c.ep.Malformed("categoriesAnalysis is not an array")
	}
	return rule, nil
}
