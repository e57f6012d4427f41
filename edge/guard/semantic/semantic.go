// Package semantic is the guardrail kind `semantic`: the candidate texts of
// one hook are embedded in one batch request with the guardrail's
// embedding_model and compared with the deny and allow examples, whose
// vectors are computed when the config applies (embed.Preparer). A text
// whose best deny similarity reaches deny_threshold blocks; when allow
// examples exist, every screened text must reach allow_threshold against
// one of them. An embedding call that fails or times out is a check that
// could not complete: fail_open / output_fail_open decide.
package semantic

import (
	"context"
	"errors"
	"sync"
	"time"

	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/embed"
	"gw/edge/guard"
	"gw/edge/vecindex"
)

// Rules named in hit records and metrics.
const (
	RuleDeny  = "deny_example"
	RuleAllow = "below_allow_threshold"
)

// ErrNotPrepared is the error of a check whose example vectors were never
// computed (a snapshot compiled without the prepare hook, as validation
// does): the fail-open settings decide, the guardrail is never skipped.
var ErrNotPrepared = errors.New("semantic: the example vectors are not computed")

// Checker is one compiled semantic guardrail. Safe for concurrent use once
// prepared.
type Checker struct {
	g    *resources.Guardrail
	opts *resources.SemanticGuardrailOptions
	// Set by Prepare.
	model   *snapshot.Plan
	deny    *vecindex.Index // nil without deny examples
	allow   *vecindex.Index // nil without allow examples
	norm    bool            // the model does not send unit vectors
	timeout time.Duration
}

var (
	_ guard.Checker  = (*Checker)(nil)
	_ embed.Preparer = (*Checker)(nil)
	_ guard.Buffered = (*Checker)(nil)
)

// New compiles a guardrail of kind semantic.
func New(g *resources.Guardrail) (guard.Checker, error) {
	o, ok := g.Options.(*resources.SemanticGuardrailOptions)
	if !ok || o == nil {
		return nil, errors.New("BUG: semantic guardrail without semantic options")
	}
	return &Checker{g: g, opts: o, timeout: time.Duration(g.TimeoutMS) * time.Millisecond}, nil
}

// BuffersFull implements guard.Buffered: a streamed answer is judged whole,
// never through a window (a window's fragment has no stable meaning).
func (*Checker) BuffersFull() bool { return true }

// Prepare embeds the examples with the snapshot's embedding model.
func (c *Checker) Prepare(ctx context.Context, s *snapshot.Snapshot, sess *embed.Session) error {
	if !c.opts.Active() {
		return nil
	}
	m := c.opts.EmbeddingModel
	if m == nil {
		return errors.New("`embedding_model`: not resolved")
	}
	p := s.Plans[m.DisplayName]
	if p == nil || p.Model.Embedding == nil {
		return errors.New("`embedding_model`: " + m.DisplayName + " is not an embedding model")
	}
	build := func(list []string) (*vecindex.Index, error) {
		if len(list) == 0 {
			return nil, nil
		}
		// timeout_ms bounds a check's request; a load waits for the
		// embedding model's own timeout.
		vecs, err := sess.Vectors(ctx, p, list, 0)
		if err != nil {
			return nil, errors.New("cannot embed the examples: " + err.Error())
		}
		b := vecindex.NewBuilder(int(p.Model.Embedding.Dimensions), 1)
		for _, v := range vecs {
			if err := b.Add(0, v); err != nil {
				return nil, err
			}
		}
		return b.Build(), nil
	}
	deny, err := build(c.opts.DenyExamples)
	if err != nil {
		return errors.New("deny_examples: " + err.Error())
	}
	allow, err := build(c.opts.AllowExamples)
	if err != nil {
		return errors.New("allow_examples: " + err.Error())
	}
	c.model, c.deny, c.allow, c.norm = p, deny, allow, !p.Model.Embedding.Normalize
	return nil
}

// scratch is one Check's working memory.
type scratch struct {
	texts [][]byte
	score [1]float32
	res   embed.Result
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// Check embeds the screened texts in one request and compares them.
func (c *Checker) Check(ctx context.Context, req *guard.Request, v *guard.Verdict) error {
	if !c.opts.Active() {
		return nil // loads but inspects nothing (spec)
	}
	if c.model == nil {
		return ErrNotPrepared
	}
	sc := scratchPool.Get().(*scratch)
	defer func() {
		clear(sc.texts)
		sc.texts = sc.texts[:0]
		scratchPool.Put(sc)
	}()
	sc.texts = Screened(sc.texts[:0], req, c.opts.TextSource == "all_messages", int(c.opts.MaxScreenedTexts))
	if len(sc.texts) == 0 {
		return nil
	}
	if err := embed.Embed(ctx, c.model, sc.texts, c.timeout, &sc.res); err != nil {
		return err
	}
	for i := range sc.texts {
		q := sc.res.Vec(i)
		if c.norm && !vecindex.Normalize(q) {
			return errors.New("semantic: the embedding model returned a zero vector")
		}
		if c.deny != nil {
			sc.score[0] = float32(c.opts.DenyThreshold)
			if g, _ := c.deny.Pick(q, sc.score[:]); g >= 0 {
				v.Action, v.Rule = guard.Block, RuleDeny
				return nil
			}
		}
		if c.allow != nil {
			sc.score[0] = float32(c.opts.AllowThreshold)
			if g, _ := c.allow.Pick(q, sc.score[:]); g < 0 {
				v.Action, v.Rule = guard.Block, RuleAllow
				return nil
			}
		}
	}
	return nil
}

// Screened appends to dst the texts one hook screens: on input the
// content of user messages (all messages' content with all, tool
// payloads never), on output every assistant text; empty texts are
// skipped, and of the rest only the last max (the most recent) are kept.
func Screened(dst [][]byte, req *guard.Request, all bool, max int) [][]byte {
	n := len(dst)
	for i := range req.Texts {
		t := &req.Texts[i]
		if len(t.Data) == 0 {
			continue
		}
		if req.Phase == guard.Input {
			if t.Part != guard.PartContent || (!all && t.Role != guard.RoleUser) {
				continue
			}
		}
		dst = append(dst, t.Data)
	}
	if max > 0 && len(dst)-n > max {
		k := copy(dst[n:], dst[len(dst)-max:])
		clear(dst[n+k:])
		dst = dst[:n+k]
	}
	return dst
}
