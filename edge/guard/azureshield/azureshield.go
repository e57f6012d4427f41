// Package azureshield is the `azure_content_safety` guardrail kind: Azure
// AI Content Safety Prompt Shields (POST
// {endpoint}/contentsafety/text:shieldPrompt?api-version=2024-09-01, key
// in Ocp-Apim-Subscription-Key), which detects jailbreak attempts in the
// user's prompt (userPrompt) and indirect attacks in third-party content
// (documents).
//
// Which text goes where: on input the user's texts are the userPrompt;
// tool results sent by the caller are documents (the content an agent
// fetched, where indirect attacks hide); system and earlier assistant
// texts are not sent (the operator's and the model's own words). On
// output the answer's texts are documents: an answer carrying an attack
// is content the caller's agent would act on next.
//
// Each side's texts are joined by a newline and split into chunks of at
// most 10,000 characters; one sequential call per chunk, each bounded by
// timeout_ms; the first attack detected blocks. Prompt Shields never
// rewrite.
package azureshield

import (
	"context"
	"errors"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/remote"
	"gw/sse/rawjson"
)

// ChunkChars is the limit per call, in characters (spec "Limits").
const ChunkChars = 10000

// Path is the shieldPrompt endpoint below the resource endpoint.
const Path = "/contentsafety/text:shieldPrompt?api-version=2024-09-01"

// Rules recorded on a block.
const (
	RulePrompt   = "user_prompt_attack"
	RuleDocument = "document_attack"
)

// Interface guards.
var _ guard.Checker = (*Checker)(nil)

// Checker is one compiled guardrail. Immutable, safe for concurrent use.
type Checker struct {
	ep *remote.Endpoint
}

// New compiles g.
func New(g *resources.Guardrail) (guard.Checker, error) {
	o, ok := g.Options.(*resources.AzureContentSafetyOptions)
	if !ok || o == nil {
		return nil, errors.New("cannot build guardrail \"" + g.Name + "\": options are not azure_content_safety options")
	}
	b, err := remote.New(remote.Config{
		Name: "azure prompt shields (guardrail " + g.Name + ")", BaseURL: o.Endpoint,
		Timeout: remote.Timeout(g.TimeoutMS),
		Headers: []remote.Header{{Key: "Ocp-Apim-Subscription-Key", Value: o.APIKey.Reveal()}},
	})
	if err != nil {
		return nil, errors.New("cannot build guardrail \"" + g.Name + "\": " + err.Error())
	}
	return &Checker{ep: b.Endpoint(Path)}, nil
}

// CallDeadlines (guard.CallDeadlines, from the remote layer's branch):
// timeout_ms bounds each chunk's call, not the whole check.
func (*Checker) CallDeadlines() {}

// Check sends the user prompt's chunks, then the documents' chunks.
func (c *Checker) Check(ctx context.Context, req *guard.Request, v *guard.Verdict) error {
	buf := remote.GetBuffer()
	defer remote.PutBuffer(buf)
	for _, doc := range [2]bool{false, true} {
		buf.Aux = Join(buf.Aux[:0], req, doc)
		var arr [8][]byte
		for _, chunk := range remote.Chunks(arr[:0], buf.Aux, ChunkChars) {
			buf.Req = append(buf.Req[:0], `{"userPrompt":`...)
			if doc {
				buf.Req = append(buf.Req, `"","documents":[`...)
				buf.Req = remote.AppendString(buf.Req, chunk)
				buf.Req = append(buf.Req, "]}"...)
			} else {
				buf.Req = remote.AppendString(buf.Req, chunk)
				buf.Req = append(buf.Req, `,"documents":[]}`...)
			}
			var err error
			if buf.Resp, err = c.ep.Post(ctx, buf.Req, buf.Resp[:0]); err != nil {
				return err
			}
			attack, err := c.Judge(buf.Resp, doc)
			if err != nil {
				return err
			}
			if attack {
				v.Action, v.Rule = guard.Block, RulePrompt
				if doc {
					v.Rule = RuleDocument
				}
				return nil
			}
		}
	}
	return nil
}

// Join appends the texts of one side, newline-separated: the user prompt
// (doc false: input user texts) or the documents (doc true: input tool
// results, or every output text).
func Join(dst []byte, req *guard.Request, doc bool) []byte {
	n := 0
	for _, t := range req.Texts {
		var isDoc bool
		switch {
		case req.Phase == guard.Output:
			isDoc = true
		case t.Role == guard.RoleUser && t.Part != guard.PartToolResult:
			isDoc = false
		case t.Role == guard.RoleTool || t.Part == guard.PartToolResult:
			isDoc = true
		default:
			continue // system and earlier assistant texts
		}
		if isDoc != doc || len(t.Data) == 0 {
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

// Judge reads one shieldPrompt answer.
func (c *Checker) Judge(resp []byte, doc bool) (bool, error) {
	if !doc {
		raw, kind, ok := remote.Get(resp, "userPromptAnalysis", "attackDetected")
		a, isBool := remote.Bool(raw, kind)
		if !ok || !isBool {
			return false, c.ep.Malformed("userPromptAnalysis.attackDetected is not a boolean")
		}
		return a, nil
	}
	arr, kind, ok := remote.Get(resp, "documentsAnalysis")
	if !ok || kind != remote.KindArray {
		return false, c.ep.Malformed("documentsAnalysis is not an array")
	}
	attack, bad, n := false, false, 0
	err := remote.EachElem(arr, func(_ int, e []byte, _ rawjson.Kind) bool {
		n++
		raw, kind, ok := remote.Get(e, "attackDetected")
		a, isBool := remote.Bool(raw, kind)
		if !ok || !isBool {
			bad = true
			return false
		}
		attack = attack || a
		return true
	})
	if err != nil || bad || n != 1 {
		return false, c.ep.Malformed("documentsAnalysis does not hold one analysis with attackDetected")
	}
	return attack, nil
}
