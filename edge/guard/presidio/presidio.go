// Package presidio is the guardrail kind presidio: Microsoft Presidio's
// analyzer and anonymizer containers, run by the customer. Each non-empty
// text is one analyzer call (POST <analyzer_url>/analyze); each text with
// entities to mask is one anonymizer call (POST <anonymizer_url>/anonymize)
// that rewrites it with the configured operator. timeout_ms bounds each
// call (spec "guardrails").
//
// Verdict rules (docs/GUARDRAILS_KINDS.md):
//   - The analyzer is asked for `entities` (all it supports when the list is
//     empty) in `language`, with `score_threshold` when set; results under
//     the threshold are ignored as well, whatever the analyzer returned.
//   - A result whose entity's action is block blocks at once (texts after
//     it are not analyzed, nothing is anonymized); Rule is its entity type.
//   - Otherwise every text with mask results is sent to the anonymizer with
//     exactly those results and the operator for every entity type
//     (`replace` → <ENTITY_TYPE>, `mask` → '*' over the whole entity,
//     `hash` → sha256, `redact` → removed), and the answer's `text` replaces
//     the text. Rule is the first masked entity type.
//   - An analyzer answer that is not an array of {entity_type, start, end,
//     score}, or an anonymizer answer without a string `text`, is
//     malformed: the check fails and fail_open / output_fail_open decide.
package presidio

import (
	"context"
	"errors"
	"sync"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/remote"
)

// Interface guards.
var (
	_ guard.Checker       = (*Checker)(nil)
	_ guard.CallDeadlines = (*Checker)(nil)
	_ guard.Concurrent    = (*Checker)(nil)
)

// Checker is a compiled presidio guardrail; immutable.
type Checker struct {
	analyze, anonymize *remote.Endpoint
	entities           []resources.PresidioEntity
	defaultBlock       bool
	threshold          float64
	// analyzeTail is the analyzer body after the text; anonymizeTail the
	// anonymizer body after the results (the operator).
	analyzeTail, anonymizeTail []byte
	canMask                    bool
	scratch                    sync.Pool // *scratch
}

type pending struct {
	index    int // text index
	from, to int // its results array in scratch.results
	rule     string
}

type scratch struct {
	pend    []pending
	results []byte
}

// operators renders the anonymizer's DEFAULT operator per `operator`.
var operators = map[string]string{
	resources.PresidioReplace: `{"type":"replace"}`,
	// chars_to_mask beyond an entity's length masks all of it.
	resources.PresidioMask:   `{"type":"mask","masking_char":"*","chars_to_mask":1000000,"from_end":false}`,
	resources.PresidioHash:   `{"type":"hash","hash_type":"sha256"}`,
	resources.PresidioRedact: `{"type":"redact"}`,
}

// New compiles g (kind presidio).
func New(g *resources.Guardrail) (guard.Checker, error) {
	o, ok := g.Options.(*resources.PresidioOptions)
	if !ok {
		return nil, errOptions
	}
	timeout := remote.Timeout(g.TimeoutMS)
	an, err := remote.New(remote.Config{Name: "presidio analyzer", BaseURL: o.AnalyzerURL, Timeout: timeout})
	if err != nil {
		return nil, errField("analyzer_url", err)
	}
	anon, err := remote.New(remote.Config{Name: "presidio anonymizer", BaseURL: o.AnonymizerURL, Timeout: timeout})
	if err != nil {
		return nil, errField("anonymizer_url", err)
	}
	op, ok := operators[o.Operator]
	if !ok {
		return nil, errors.New("`operator`: unknown operator")
	}
	c := &Checker{analyze: an.Endpoint("/analyze"), anonymize: anon.Endpoint("/anonymize"),
		entities: o.Entities, defaultBlock: o.DefaultAction == resources.ActionBlock, threshold: o.ScoreThreshold}
	c.scratch.New = func() any { return new(scratch) }

	t := append([]byte(nil), `,"language":`...)
	t = remote.AppendStringS(t, o.Language)
	if len(o.Entities) > 0 {
		t = append(t, `,"entities":[`...)
		for i, e := range o.Entities {
			if i > 0 {
				t = append(t, ',')
			}
			t = remote.AppendStringS(t, e.Name)
		}
		t = append(t, ']')
	}
	if o.ScoreThreshold > 0 {
		t = append(t, `,"score_threshold":`...)
		t = remote.AppendFloat(t, o.ScoreThreshold)
	}
	c.analyzeTail = append(t, '}')
	c.anonymizeTail = append(append(append([]byte(nil), `],"anonymizers":{"DEFAULT":`...), op...), "}}"...)

	if len(o.Entities) == 0 {
		c.canMask = !c.defaultBlock
	}
	for _, e := range o.Entities {
		if e.Action == resources.ActionMask {
			c.canMask = true
		}
	}
	return c, nil
}

var errOptions = errors.New("presidio: options of another kind")

func errField(field string, err error) error { return errors.New("`" + field + "`: " + err.Error()) }

// CallDeadlines: timeout_ms bounds each analyzer and anonymizer call.
func (*Checker) CallDeadlines() {}

// Concurrent: only a configuration that can never mask may run beside
// other stages (a rewrite must be seen by the stages after it).
func (c *Checker) Concurrent() bool { return !c.canMask }

// action resolves an entity type's action: block, mask, or skip (an
// entity not asked for).
func (c *Checker) action(entity []byte) (block, mask bool, rule string) {
	if len(c.entities) == 0 {
		return c.defaultBlock, !c.defaultBlock, ""
	}
	for _, e := range c.entities {
		if remote.StringEquals(entity, e.Name) {
			return e.Action == resources.ActionBlock, e.Action == resources.ActionMask, e.Name
		}
	}
	return false, false, ""
}

// Check analyzes each text, then anonymizes those with mask results.
func (c *Checker) Check(ctx context.Context, req *guard.Request, v *guard.Verdict) error {
	buf := remote.GetBuffer()
	defer remote.PutBuffer(buf)
	sc := c.scratch.Get().(*scratch)
	sc.pend, sc.results = sc.pend[:0], sc.results[:0]
	defer c.scratch.Put(sc)

	for i, t := range req.Texts {
		if len(t.Data) == 0 {
			continue
		}
		b := append(buf.Req[:0], `{"text":`...)
		b = remote.AppendString(b, t.Data)
		b = append(b, c.analyzeTail...)
		buf.Req = b
		var err error
		if buf.Resp, err = c.analyze.Post(ctx, buf.Req, buf.Resp[:0]); err != nil {
			return err
		}
		blocked, err := c.results(buf.Resp, i, sc, v)
		if err != nil || blocked {
			return err
		}
	}
	if len(sc.pend) == 0 {
		return nil
	}
	v.Action, v.Rule = guard.Rewrite, sc.pend[0].rule
	for _, p := range sc.pend {
		b := append(buf.Req[:0], `{"text":`...)
		b = remote.AppendString(b, req.Texts[p.index].Data)
		b = append(b, `,"analyzer_results":[`...)
		b = append(b, sc.results[p.from:p.to]...)
		b = append(b, c.anonymizeTail...)
		buf.Req = b
		var err error
		if buf.Resp, err = c.anonymize.Post(ctx, buf.Req, buf.Resp[:0]); err != nil {
			v.Masks, v.Action = v.Masks[:0], guard.Allow
			return err
		}
		raw, kind, ok := remote.Get(buf.Resp, "text")
		if !ok || kind != remote.KindString {
			v.Masks, v.Action = v.Masks[:0], guard.Allow
			return c.anonymize.Malformed("text is not a string")
		}
		start := len(v.Buf)
		if v.Buf, err = remote.Unquote(v.Buf, raw); err != nil {
			v.Masks, v.Action = v.Masks[:0], guard.Allow
			return c.anonymize.Malformed("text is not a string")
		}
		v.Masks = append(v.Masks, guard.Mask{Index: p.index, Data: v.Buf[start:]})
	}
	return nil
}

// results reads one analyzer answer for text i: a block sets v and
// returns true; mask results are re-rendered into sc.results.
func (c *Checker) results(resp []byte, i int, sc *scratch, v *guard.Verdict) (blocked bool, err error) {
	from := len(sc.results)
	var bad string
	var rule string
	n := 0
	perr := remote.EachElem(resp, func(_ int, r []byte, kind remote.Kind) bool {
		if kind != remote.KindObject {
			bad = "a result is not an object"
			return false
		}
		et, ek, _ := remote.Get(r, "entity_type")
		rs, sk, _ := remote.Get(r, "start")
		re, ekk, _ := remote.Get(r, "end")
		rsc, sck, _ := remote.Get(r, "score")
		s, ok1 := remote.Int(rs)
		e, ok2 := remote.Int(re)
		score, ok3 := remote.Float(rsc)
		if ek != remote.KindString || sk != remote.KindNumber || ekk != remote.KindNumber || sck != remote.KindNumber ||
			!ok1 || !ok2 || !ok3 || s < 0 || e < s {
			bad = "a result lacks entity_type, start, end or score"
			return false
		}
		// A mask result copies the entity_type span into the anonymizer's
		// request as it is; the scan above does not check a string's
		// contents (a raw control character, invalid UTF-8).
		if !remote.Valid(et) {
			bad = "a result's entity_type is not a valid JSON string"
			return false
		}
		if score < c.threshold {
			return true
		}
		block, mask, name := c.action(et)
		switch {
		case block:
			v.Action, v.Rule = guard.Block, name
			if name == "" {
				v.Rule = unquoted(et)
			}
			blocked = true
			return false
		case mask:
			if n > 0 {
				sc.results = append(sc.results, ',')
			}
			n++
			sc.results = append(sc.results, `{"entity_type":`...)
			sc.results = append(sc.results, et...)
			sc.results = append(sc.results, `,"start":`...)
			sc.results = append(sc.results, rs...)
			sc.results = append(sc.results, `,"end":`...)
			sc.results = append(sc.results, re...)
			sc.results = append(sc.results, `,"score":`...)
			sc.results = append(sc.results, rsc...)
			sc.results = append(sc.results, '}')
			if rule == "" {
				rule = name
				if rule == "" {
					rule = unquoted(et)
				}
			}
		}
		return true
	})
	switch {
	case perr != nil:
		return false, c.analyze.Malformed("the answer is not an array of results")
	case bad != "":
		v.Action, v.Rule = guard.Allow, ""
		return false, c.analyze.Malformed(bad)
	case blocked:
		return true, nil
	}
	if n > 0 {
		sc.pend = append(sc.pend, pending{index: i, from: from, to: len(sc.results), rule: rule})
	}
	return false, nil
}

// ReadAnalysis reads one analyzer answer: a block sets v and returns
// true; otherwise results are the mask-action results re-rendered for the
// anonymizer (the inside of a JSON array). An error (*remote.Error, class
// malformed) when the answer is not the documented shape. Exported for
// the fuzz target.
func (c *Checker) ReadAnalysis(answer []byte, v *guard.Verdict) (blocked bool, results []byte, err error) {
	var sc scratch
	blocked, err = c.results(answer, 0, &sc, v)
	return blocked, sc.results, err
}

func unquoted(raw []byte) string {
	s, err := remote.Unquote(nil, raw)
	if err != nil || len(s) > 64 {
		return "entity"
	}
	return string(s)
}
