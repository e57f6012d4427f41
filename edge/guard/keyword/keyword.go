// Package keyword is the guardrail kind keyword: literal and regex patterns
// that block a text when they occur in it.
//
// Matching rules (docs/GUARDRAILS_KINDS.md):
//   - Literals match as substrings, ASCII-case-insensitively: A–Z and a–z
//     are the same letter, every other byte (non-ASCII letters included)
//     must match exactly. A blocked word is meant to be caught however the
//     caller capitalises it (LiteLLM's content filter lowercases keywords
//     the same way); for Unicode case folding or word boundaries write a
//     regex such as (?i)\bпароль\b.
//   - Regexes are Go RE2 as written: case-sensitive unless they say (?i),
//     like the deny patterns of Kong's and APISIX's ai-prompt-guard.
//   - Each text is judged on its own; the first text with a hit blocks.
//     Within a text literals are looked for first (the one that ends first
//     in the text, lowest pattern index on a tie), then regexes in pattern
//     order.
//   - Verdict.Rule is "literal#N" or "regex#N", N being the pattern's index
//     in the guardrail's patterns list: never the pattern or the matched
//     text, either of which can be sensitive.
//
// All literals of a guardrail share one Aho-Corasick automaton (a dense
// DFA over byte classes) that also carries each regex's required literal
// factors, so a regex runs only on texts that contain one of them.
package keyword

import (
	"context"
	"errors"
	"regexp"
	"strconv"

	"gw/admin/resources"
	"gw/edge/guard"
)

// Interface guards.
var _ guard.Checker = (*Checker)(nil)

// Checker is a compiled keyword guardrail. It is immutable and safe for
// concurrent use.
type Checker struct {
	ac       *automaton // nil when there are neither literals nor factors
	litRules []string   // literal id → Rule
	regexes  []compiledRegex
}

type compiledRegex struct {
	re   *regexp.Regexp
	rule string
	bits uint64 // prefilter bits, all needed; 0 = always run
	ks   bool   // a factor relies on ASCII k/s: a fold sign in the text runs it anyway
}

// ksBit is the prefilter bit of the fold signs (Kelvin sign, long s).
const ksBit = 1 << 63

// New compiles g, whose Options must be *resources.KeywordOptions.
func New(g *resources.Guardrail) (guard.Checker, error) {
	opts, ok := g.Options.(*resources.KeywordOptions)
	if !ok || opts == nil {
		return nil, errors.New("cannot compile keyword guardrail " + strconv.Quote(g.Name) + ": options are not keyword options")
	}
	c := &Checker{}
	var lits, factors []string
	var factorBits []uint64
	nextBit := uint(0)
	for i, p := range opts.Patterns {
		where := "cannot compile keyword guardrail " + strconv.Quote(g.Name) + ": patterns[" + strconv.Itoa(i) + "]: "
		switch p.Kind {
		case "literal":
			if p.Value == "" {
				return nil, errors.New(where + "empty literal")
			}
			lits = append(lits, p.Value)
			c.litRules = append(c.litRules, "literal#"+strconv.Itoa(i))
		case "regex":
			if p.Regexp == nil {
				return nil, errors.New(where + "regex is not compiled")
			}
			r := compiledRegex{re: p.Regexp, rule: "regex#" + strconv.Itoa(i)}
			for _, grp := range prefilterGroups(p.Regexp.String()) {
				if nextBit == 63 {
					break // the rest run unfiltered (or less filtered)
				}
				bit := uint64(1) << nextBit
				nextBit++
				r.bits |= bit
				r.ks = r.ks || hasKS(grp) // conservative: also for case-sensitive groups
				for _, s := range grp {
					factors = append(factors, s)
					factorBits = append(factorBits, bit)
				}
			}
			c.regexes = append(c.regexes, r)
		default:
			return nil, errors.New(where + "unknown kind " + strconv.Quote(p.Kind))
		}
	}
	for _, r := range c.regexes {
		if r.ks {
			for _, s := range foldSigns {
				factors = append(factors, s)
				factorBits = append(factorBits, ksBit)
			}
			break
		}
	}
	if len(lits)+len(factors) > 0 {
		ac, err := buildAutomaton(lits, factors, factorBits)
		if err != nil {
			return nil, errors.New("cannot compile keyword guardrail " + strconv.Quote(g.Name) + ": " + err.Error())
		}
		c.ac = ac
	}
	return c, nil
}

// Check blocks on the first text with a hit. It never masks.
//
// Short texts (a chat's messages) are scanned in batches of up to
// batchMax, four at a time as interleaved automaton streams (run4): one
// text's walk is a chain of dependent loads, four independent chains keep
// the core busy. A batch's texts are grouped by length so the four streams
// end together. The verdicts are then resolved in text order, so the first
// text with a hit still decides; long texts get scan's own interleaving.
func (c *Checker) Check(_ context.Context, req *guard.Request, v *guard.Verdict) error {
	texts := req.Texts
	if c.ac == nil {
		for i := range texts {
			if rule := c.regexRule(texts[i].Data, 0); rule != "" {
				v.Action, v.Rule = guard.Block, rule
				return nil
			}
		}
		return nil
	}
	var b batch
	for i := 0; i <= len(texts); i++ {
		if i < len(texts) && len(texts[i].Data) < splitMin {
			b.idx[b.n] = i
			if b.n++; b.n < batchMax {
				continue
			}
		}
		if rule := c.flush(texts, &b); rule != "" {
			v.Action, v.Rule = guard.Block, rule
			return nil
		}
		b.n = 0
		if i < len(texts) && len(texts[i].Data) >= splitMin {
			if rule := c.match(texts[i].Data); rule != "" {
				v.Action, v.Rule = guard.Block, rule
				return nil
			}
		}
	}
	return nil
}

// batchMax bounds a batch of short texts (its state lives on the stack).
const batchMax = 16

// batch is a run of short texts scanned together: idx in text order, ord
// the same positions ordered by length, and each text's literal and
// prefilter bits.
type batch struct {
	n    int
	idx  [batchMax]int
	ord  [batchMax]uint8
	lit  [batchMax]int32
	seen [batchMax]uint64
}

// flush scans the batch's texts and returns the Rule of the first (in
// text order) with a hit, or "".
func (c *Checker) flush(texts []guard.Text, b *batch) string {
	if b.n == 0 {
		return ""
	}
	ln := func(k uint8) int { return len(texts[b.idx[k]].Data) }
	for k := 0; k < b.n; k++ {
		b.ord[k] = uint8(k)
		for j := k; j > 0 && ln(b.ord[j]) < ln(b.ord[j-1]); j-- {
			b.ord[j], b.ord[j-1] = b.ord[j-1], b.ord[j]
		}
	}
	data := func(j int) []byte { return texts[b.idx[b.ord[j]]].Data }
	j := 0
	for ; j+4 <= b.n; j += 4 {
		lit, seen := c.ac.run4(data(j), data(j+1), data(j+2), data(j+3))
		for k := range 4 {
			b.lit[b.ord[j+k]], b.seen[b.ord[j+k]] = lit[k], seen[k]
		}
	}
	if j+2 <= b.n {
		o0, o1 := b.ord[j], b.ord[j+1]
		b.lit[o0], b.seen[o0], b.lit[o1], b.seen[o1] = c.ac.run2(data(j), data(j+1))
		j += 2
	}
	if j < b.n {
		o := b.ord[j]
		_, b.lit[o], b.seen[o] = c.ac.run(0, data(j))
	}
	for k := 0; k < b.n; k++ {
		if b.lit[k] >= 0 {
			return c.litRules[b.lit[k]]
		}
		if rule := c.regexRule(texts[b.idx[k]].Data, b.seen[k]); rule != "" {
			return rule
		}
	}
	return ""
}

// match returns the Rule of the first pattern that hits data, or "".
func (c *Checker) match(data []byte) string {
	var seen uint64
	if c.ac != nil {
		var lit int32
		if lit, seen = c.ac.scan(data); lit >= 0 {
			return c.litRules[lit]
		}
	}
	return c.regexRule(data, seen)
}

// regexRule returns the Rule of the first regex that hits data, or "";
// seen holds the prefilter bits of the factors found in data.
func (c *Checker) regexRule(data []byte, seen uint64) string {
	for i := range c.regexes {
		r := &c.regexes[i]
		if seen&r.bits != r.bits && !(r.ks && seen&ksBit != 0) {
			continue // a literal every match needs is absent
		}
		if r.re.Match(data) {
			return r.rule
		}
	}
	return ""
}
