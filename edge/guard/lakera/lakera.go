// Package lakera is the guardrail kind lakera: one call to Lakera Guard's
// v2 screening API (POST /v2/guard) per check, the judged texts sent as
// the conversation's `messages`. Detection only: Lakera's project policy
// (project_id, or the account's default) decides which detectors run and
// at what thresholds; gw blocks when the answer is `flagged: true`.
//
// Verdict rules (docs/GUARDRAILS_KINDS.md):
//   - Each text is one message: role system, user or assistant as its
//     author; a caller-sent tool result goes as user: it is untrusted
//     input, which is what Lakera screens user messages for.
//   - `flagged: true` blocks. The request asks for the `breakdown`; Rule is
//     the first detector_type marked detected ("flagged" when none is).
//   - An answer without a boolean `flagged` is malformed: the check fails
//     and fail_open / output_fail_open decide.
package lakera

import (
	"context"
	"errors"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/openaimod"
	"gw/edge/guard/remote"
)

// DefaultEndpoint is Lakera's API base when `endpoint` is unset.
const DefaultEndpoint = "https://api.lakera.ai"

// maxRule bounds a Rule taken from the answer (a detector type name).
const maxRule = 64

// Interface guards.
var (
	_ guard.Checker       = (*Checker)(nil)
	_ guard.CallDeadlines = (*Checker)(nil)
	_ guard.Concurrent    = (*Checker)(nil)
)

// Checker is a compiled lakera guardrail; immutable.
type Checker struct {
	ep   *remote.Endpoint
	tail []byte // the request body after the messages
}

// New compiles g (kind lakera).
func New(g *resources.Guardrail) (guard.Checker, error) {
	o, ok := g.Options.(*resources.LakeraOptions)
	if !ok {
		return nil, errOptions
	}
	base := o.Endpoint
	if base == "" {
		base = DefaultEndpoint
	}
	base, path := openaimod.SplitEndpoint(base, "/v2", "/guard")
	b, err := remote.New(remote.Config{Name: "lakera", BaseURL: base, Timeout: remote.Timeout(g.TimeoutMS),
		Headers: []remote.Header{{Key: "Authorization", Value: "Bearer " + o.APIKey.Reveal()}}})
	if err != nil {
		return nil, err
	}
	c := &Checker{ep: b.Endpoint(path)}
	c.tail = append(c.tail, `],"breakdown":true`...)
	if o.ProjectID != "" {
		c.tail = append(c.tail, `,"project_id":`...)
		c.tail = remote.AppendStringS(c.tail, o.ProjectID)
	}
	c.tail = append(c.tail, '}')
	return c, nil
}

var errOptions = errors.New("lakera: options of another kind")

// CallDeadlines: timeout_ms bounds the one call.
func (*Checker) CallDeadlines() {}

// Concurrent: detection only, waiting on the provider.
func (*Checker) Concurrent() bool { return true }

var roles = [...]string{guard.RoleUser: `{"role":"user","content":`, guard.RoleSystem: `{"role":"system","content":`,
	guard.RoleAssistant: `{"role":"assistant","content":`, guard.RoleTool: `{"role":"user","content":`}

// Check screens every text in one request.
func (c *Checker) Check(ctx context.Context, req *guard.Request, v *guard.Verdict) error {
	buf := remote.GetBuffer()
	defer remote.PutBuffer(buf)
	b := append(buf.Req[:0], `{"messages":[`...)
	for i, t := range req.Texts {
		if i > 0 {
			b = append(b, ',')
		}
		role := roles[guard.RoleUser]
		if int(t.Role) < len(roles) {
			role = roles[t.Role]
		}
		b = append(b, role...)
		b = remote.AppendString(b, t.Data)
		b = append(b, '}')
	}
	b = append(b, c.tail...)
	buf.Req = b
	var err error
	buf.Resp, err = c.ep.Post(ctx, buf.Req, buf.Resp[:0])
	if err != nil {
		return err
	}
	return c.ReadAnswer(buf.Resp, v)
}

// ReadAnswer reads a /v2/guard answer into v; an error (*remote.Error,
// class malformed) when it is not the documented shape. Exported for the
// fuzz target.
func (c *Checker) ReadAnswer(resp []byte, v *guard.Verdict) error {
	raw, kind, ok := remote.Get(resp, "flagged")
	flagged, isBool := remote.Bool(raw, kind)
	if !ok || !isBool {
		return c.ep.Malformed("flagged is not a boolean")
	}
	if !flagged {
		return nil
	}
	v.Action, v.Rule = guard.Block, "flagged"
	if bd, kind, ok := remote.Get(resp, "breakdown"); ok && kind == remote.KindArray {
		remote.EachElem(bd, func(_ int, d []byte, kind remote.Kind) bool {
			if kind != remote.KindObject {
				return true
			}
			_, dk, _ := remote.Get(d, "detected")
			if dk != remote.KindTrue {
				return true
			}
			if dt, tk, ok := remote.Get(d, "detector_type"); ok && tk == remote.KindString {
				if s, err := remote.Unquote(nil, dt); err == nil && len(s) > 0 && len(s) <= maxRule {
					v.Rule = string(s)
				}
			}
			return false
		})
	}
	return nil
}
