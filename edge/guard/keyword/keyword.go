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
func (c *Checker) Check(_ context.Context, req *guard.Request, v *guard.Verdict) error {
	for i := range req.Texts {
		if rule := c.match(req.Texts[i].Data); rule != "" {
			v.Action, v.Rule = guard.Block, rule
			return nil
		}
	}
	return nil
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
