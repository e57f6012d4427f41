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
// Short texts (a chat's messages) are scanned four at a time as
// interleaved automaton streams (run4): one text's walk is a chain of
// dependent loads, four independent chains keep the core busy. The
// verdicts are then resolved in text order, so the first text with a hit
// still decides; long texts get scan's own interleaving.
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
	var pend [4]int // indexes of short texts not yet scanned
	np := 0
	for i := 0; i <= len(texts); i++ {
		if i < len(texts) && len(texts[i].Data) < splitMin {
			pend[np] = i
			if np++; np < len(pend) {
				continue
			}
		}
		if rule := c.flush(texts, &pend, np); rule != "" {
			v.Action, v.Rule = guard.Block, rule
			return nil
		}
		np = 0
		if i < len(texts) && len(texts[i].Data) >= splitMin {
			if rule := c.match(texts[i].Data); rule != "" {
				v.Action, v.Rule = guard.Block, rule
				return nil
			}
		}
	}
	return nil
}

// flush scans the np pending short texts and returns the Rule of the first
// (in text order) with a hit, or "".
func (c *Checker) flush(texts []guard.Text, pend *[4]int, np int) string {
	var lit [4]int32
	var seen [4]uint64
	switch np {
	case 0:
		return ""
	case 4:
		lit, seen = c.ac.run4(texts[pend[0]].Data, texts[pend[1]].Data, texts[pend[2]].Data, texts[pend[3]].Data)
	case 1:
		_, lit[0], seen[0] = c.ac.run(0, texts[pend[0]].Data)
	default:
		lit[0], seen[0], lit[1], seen[1] = c.ac.run2(texts[pend[0]].Data, texts[pend[1]].Data)
		if np == 3 {
			_, lit[2], seen[2] = c.ac.run(0, texts[pend[2]].Data)
		}
	}
	for k := 0; k < np; k++ {
		if lit[k] >= 0 {
			return c.litRules[lit[k]]
		}
		if rule := c.regexRule(texts[pend[k]].Data, seen[k]); rule != "" {
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
