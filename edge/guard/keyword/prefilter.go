package keyword

import (
	"regexp/syntax"
	"unicode/utf8"
)

// A regex prefilter: the set of literal factors of which every match of the
// regex contains at least one. The literals' automaton looks for them in the
// same pass over the text, and a regex whose factors are all absent is not
// run: RE2 over 4 KB costs microseconds per regex, the extra automaton
// states nothing.
//
// Soundness: the automaton folds ASCII case, so it finds a superset of the
// occurrences of a case-sensitive factor. In a case-folded literal ((?i))
// non-ASCII letters cut the factor in two (their folds are other
// multi-byte letters; any substring of a required string is required too).
// RE2 also folds k to the Kelvin sign U+212A and s to the long s U+017F:
// factors with k or s are kept, and the automaton looks for those two
// signs as well; a text containing either runs such regexes unfiltered.

// A regex is prefiltered only when one of its groups has strings of at
// least this length; shorter groups then only add conjuncts.
const minFactorLen = 3

// Larger alternations are not worth the automaton states.
const maxFactors = 16

// maxGroups bounds the conjuncts kept per regex (each costs a prefilter bit).
const maxGroups = 4

// prefilterGroups returns the regex's prefilter as a conjunction of
// disjunctions: every match contains, for each group, one of its strings.
// nil means none can be derived and the regex always runs.
func prefilterGroups(expr string) [][]string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	var out [][]string
	for _, g := range conjuncts(re.Simplify()) {
		// A short group helps only when it is rare: punctuation, not "pr".
		if len(g) > 0 && len(g) <= maxFactors && (score(g) >= minFactorLen || !wordy(g)) {
			out = append(out, g)
		}
	}
	// The rarest (longest) groups first.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && score(out[j]) > score(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	if len(out) == 0 || score(out[0]) < minFactorLen {
		return nil
	}
	if len(out) > maxGroups {
		out = out[:maxGroups]
	}
	return out
}

// wordy reports whether a group has a letter, digit or space.
func wordy(g []string) bool {
	for _, s := range g {
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c == ' ' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf {
				return true
			}
		}
	}
	return false
}

// foldSigns are the non-ASCII runes RE2 folds to ASCII letters (k, s).
var foldSigns = []string{"\u212A", "\u017F"}

// hasKS reports whether a group depends on RE2's k/s folding.
func hasKS(g []string) bool {
	for _, s := range g {
		for i := 0; i < len(s); i++ {
			switch s[i] {
			case 'k', 'K', 's', 'S':
				return true
			}
		}
	}
	return false
}

// conjuncts returns groups of strings such that every match of re contains
// one string of each group; none when it knows nothing.
func conjuncts(re *syntax.Regexp) [][]string {
	switch re.Op {
	case syntax.OpLiteral:
		var out [][]string
		for _, s := range literalFactors(re.Rune, re.Flags&syntax.FoldCase != 0) {
			// A folded k or s only matters if the text has a fold sign,
			// which scan reports separately (foldSigns).
			out = append(out, []string{s})
		}
		return out
	case syntax.OpCapture, syntax.OpPlus:
		return conjuncts(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return conjuncts(re.Sub[0])
		}
	case syntax.OpConcat:
		var out [][]string
		for _, sub := range re.Sub {
			out = append(out, conjuncts(sub)...)
		}
		return out
	case syntax.OpAlternate:
		// One disjunction: each branch contributes its best group.
		var all []string
		for _, sub := range re.Sub {
			var best []string
			for _, g := range conjuncts(sub) {
				if best == nil || score(g) > score(best) {
					best = g
				}
			}
			if best == nil {
				return nil
			}
			all = append(all, best...)
		}
		return [][]string{all}
	}
	return nil
}

func score(f []string) int {
	m := -1
	for _, s := range f {
		if m < 0 || len(s) < m {
			m = len(s)
		}
	}
	return m
}

// literalFactors returns the pieces of the literal the automaton can look
// for soundly. U+FFFD always cuts: RE2 matches it against any invalid
// UTF-8 byte, whose bytes differ from its encoding.
func literalFactors(runes []rune, fold bool) []string {
	var out []string
	var cur []byte
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
		}
		cur = cur[:0]
	}
	for _, r := range runes {
		if r == utf8.RuneError || fold && r >= utf8.RuneSelf {
			flush()
			continue
		}
		cur = utf8.AppendRune(cur, r)
	}
	flush()
	return out
}
