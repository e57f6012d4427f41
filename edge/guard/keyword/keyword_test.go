package keyword

import (
	"context"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"gw/admin/resources"
	"gw/edge/guard"
)

// pat builds a patterns list: "re:..." is a regex, anything else a literal.
func pat(ps ...string) []resources.KeywordPattern {
	out := make([]resources.KeywordPattern, 0, len(ps))
	for _, p := range ps {
		if e, ok := strings.CutPrefix(p, "re:"); ok {
			out = append(out, resources.KeywordPattern{Kind: "regex", Value: e, Regexp: regexp.MustCompile(e)})
		} else {
			out = append(out, resources.KeywordPattern{Kind: "literal", Value: p})
		}
	}
	return out
}

func mustNew(t testing.TB, ps []resources.KeywordPattern) guard.Checker {
	t.Helper()
	c, err := New(&resources.Guardrail{Name: "kw", Kind: resources.GuardrailKeyword, Options: &resources.KeywordOptions{Patterns: ps}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func check(t testing.TB, c guard.Checker, texts ...string) guard.Verdict {
	t.Helper()
	req := &guard.Request{}
	for _, s := range texts {
		req.Texts = append(req.Texts, guard.Text{Data: []byte(s)})
	}
	var v guard.Verdict
	if err := c.Check(context.Background(), req, &v); err != nil {
		t.Fatalf("Check: %v", err)
	}
	return v
}

func TestKeyword(t *testing.T) {
	cases := []struct {
		name     string
		patterns []resources.KeywordPattern
		texts    []string
		rule     string // "" = allow
	}{
		{"empty list matches nothing", pat(), []string{"anything at all", ""}, ""},
		{"no texts", pat("bad"), nil, ""},
		{"literal substring", pat("secret"), []string{"a topsecret plan"}, "literal#0"},
		{"literal ascii case-insensitive", pat("Secret Plan"), []string{"the SECRET plan"}, "literal#0"},
		{"literal upper in text lower in pattern", pat("drop table"), []string{"DROP TABLE users"}, "literal#0"},
		{"non-ascii exact", pat("密码"), []string{"我的密码是"}, "literal#0"},
		{"non-ascii not folded", pat("пароль"), []string{"ПАРОЛЬ"}, ""},
		{"literal near miss", pat("secret"), []string{"secre t", "secre"}, ""},
		{"literal at end", pat("end"), []string{"the end"}, "literal#0"},
		{"whole text", pat("x"), []string{"x"}, "literal#0"},
		{"first ending literal wins", pat("bcd", "abcde", "ab"), []string{"xabcde"}, "literal#2"},
		{"same end lowest index", pat("bc", "abc"), []string{"abc"}, "literal#0"},
		{"suffix of another literal", pat("abcd", "bc"), []string{"abce"}, "literal#1"},
		{"overlapping prefixes", pat("aab", "ab"), []string{"aaab"}, "literal#0"},
		{"second text", pat("bad"), []string{"fine", "also bad"}, "literal#0"},
		{"index counts regexes", pat("re:zzz", "bad"), []string{"bad"}, "literal#1"},
		{"regex", pat("re:\\d{3}-\\d{4}"), []string{"call 555-1234"}, "regex#0"},
		{"regex case-sensitive", pat("re:Secret"), []string{"secret"}, ""},
		{"regex (?i)", pat("re:(?i)ignore (all )?previous instructions"), []string{"IGNORE previous Instructions"}, "regex#0"},
		{"regex kelvin sign under (?i)", pat("re:(?i)kilo"), []string{"\u212Ailo"}, "regex#0"},
		{"regex long s under (?i)", pat("re:(?i)pass"), []string{"pa\u017Fs"}, "regex#0"},
		{"regex U+FFFD matches invalid byte", pat("re:ab\uFFFDcd"), []string{"ab\xffcd"}, "regex#0"},
		{"literal before regex in same text", pat("re:a+", "zz"), []string{"a zz"}, "literal#1"},
		{"regex order", pat("re:b", "re:a"), []string{"ab"}, "regex#0"},
		{"regex prefiltered absent", pat("re:password\\s*=", "re:token"), []string{"nothing here"}, ""},
		{"regex alternation factor", pat("re:(foo|bar)baz"), []string{"xbarbaz"}, "regex#0"},
		{"regex without factor always runs", pat("re:[0-9]+x"), []string{"12x"}, "regex#0"},
		{"regex anchored", pat("re:^hello$"), []string{"hello world", "hello"}, "regex#0"},
		{"regex repeat factor", pat("re:(abc){2,}"), []string{"abcabc"}, "regex#0"},
		{"many literals", pat("alpha", "beta", "gamma", "delta", "epsilon"), []string{"the DELTA variant"}, "literal#3"},
		{"invalid utf-8 text", pat("ab"), []string{"\xff\xfeab\xc3"}, "literal#0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := check(t, mustNew(t, tc.patterns), tc.texts...)
			if tc.rule == "" {
				if v.Action != guard.Allow || v.Rule != "" {
					t.Fatalf("got %v %q; want allow", v.Action, v.Rule)
				}
				return
			}
			if v.Action != guard.Block || v.Rule != tc.rule {
				t.Fatalf("got %v %q; want block %q", v.Action, v.Rule, tc.rule)
			}
			if len(v.Masks) != 0 {
				t.Fatalf("keyword never masks, got %d masks", len(v.Masks))
			}
		})
	}
}

func TestKeywordNewErrors(t *testing.T) {
	f := func(name string, opts resources.GuardrailOptions) {
		t.Helper()
		_, err := New(&resources.Guardrail{Name: "kw", Options: opts})
		if err == nil {
			t.Fatalf("%s: want an error", name)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("%s: error leaks the pattern: %v", name, err)
		}
	}
	f("wrong options", &resources.PIIOptions{})
	f("empty literal", &resources.KeywordOptions{Patterns: []resources.KeywordPattern{{Kind: "literal"}}})
	f("uncompiled regex", &resources.KeywordOptions{Patterns: []resources.KeywordPattern{{Kind: "regex", Value: "hunter2"}}})
	f("unknown kind", &resources.KeywordOptions{Patterns: []resources.KeywordPattern{{Kind: "glob", Value: "hunter2"}}})
}

func TestPrefilterGroups(t *testing.T) {
	cases := []struct {
		expr string
		want string // groups joined by " & ", strings by "|"; "" = always run
	}{
		{`password\s*=`, "password & ="},
		{`(?i)password`, "PASSWORD"}, // the parser keeps folded literals upper-case
		{`(?i)ignore (all )?(previous|prior) rules`, "IGNORE  &  RULES & EVIOUS|IOR"}, // Simplify factors the common prefix PR out,
		{`(?i)select\s+\*\s+from`, "SELECT & FROM & *"},
		{`(foo|bar)bazz`, "bazz & foo|bar"},
		{`(fooo|b)\d`, ""},
		{`\d+`, ""},
		{`ab`, ""},
		{`x?abc`, "abc"},
		{`(?:abc)*`, ""},
		{`(?:abc)+`, "abc"},
		{`\bAKIA[0-9A-Z]{16}\b`, "AKIA"},
		{`日本語`, "日本語"},
		{`(?i)日本語`, ""},
		{`ab\x{FFFD}cd`, ""},
		{`(?i)straße`, "STRA"}, // a non-ASCII letter cuts the literal; the short wordy "E" is dropped

		{`one two three four five`, "one two three four five"},
		{`(?:aaa)(?:bbbb)(?:cc)(?:ddddd)(?:eeeeee)`, "aaabbbbccdddddeeeeee"},
		{`aaa.bbbb.ccccc.dddddd`, "dddddd & ccccc & bbbb & aaa"},
	}
	for _, tc := range cases {
		var parts []string
		for _, g := range prefilterGroups(tc.expr) {
			parts = append(parts, strings.Join(g, "|"))
		}
		if got := strings.Join(parts, " & "); got != tc.want {
			t.Errorf("prefilterGroups(%q) = %q; want %q", tc.expr, got, tc.want)
		}
	}
}

func TestKeywordConcurrent(t *testing.T) {
	c := mustNew(t, pat("bad", "re:(?i)evil\\d"))
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func() {
			for i := 0; i < 200; i++ {
				v := check(t, c, "fine", "EVIL9")
				if v.Rule != "regex#1" {
					t.Errorf("got %q", v.Rule)
				}
			}
			done <- true
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
}

// TestScan2: the two-stream scan agrees with the one-stream walk (first
// literal, and every factor when there is none) on random texts over a
// small alphabet, so matches straddle the split point often.
func TestScan2(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abcAB"[rng.IntN(5)]
		}
		return string(b)
	}
	var inA, inB, none int
	defer func() {
		if inA == 0 || inB == 0 || none == 0 {
			t.Errorf("coverage: %d hits in A, %d in B, %d without", inA, inB, none)
		}
	}()
	for round := 0; round < 3000; round++ {
		var lits, factors []string
		var bits []uint64
		for i := rng.IntN(4); i >= 0; i-- {
			lits = append(lits, word(4+rng.IntN(5)))
		}
		for i := rng.IntN(4); i > 0; i-- {
			factors = append(factors, word(2+rng.IntN(5)))
			bits = append(bits, 1<<rng.IntN(8))
		}
		a, err := buildAutomaton(lits, factors, bits)
		if err != nil {
			t.Fatal(err)
		}
		data := []byte(word(4*a.maxLen + rng.IntN(200)))
		_, want, wantSeen := a.run(0, data)
		switch first := firstEnd(a, data); {
		case want < 0:
			none++
		case first < len(data)/2+a.maxLen-1:
			inA++
		default:
			inB++
		}
		got, gotSeen := a.scan2(data)
		if got != want || want < 0 && gotSeen != wantSeen {
			t.Fatalf("lits %q factors %q data %q: scan2 = %d %b; run = %d %b", lits, factors, data, got, gotSeen, want, wantSeen)
		}
		got, gotSeen = a.scan4(data)
		if got != want || want < 0 && gotSeen != wantSeen {
			t.Fatalf("lits %q factors %q data %q: scan4 = %d %b; run = %d %b", lits, factors, data, got, gotSeen, want, wantSeen)
		}
	}
}

// firstEnd is the end of the first literal match (len(data) when none).
func firstEnd(a *automaton, data []byte) int {
	for i := 1; i <= len(data); i++ {
		if _, lit, _ := a.run(0, data[:i]); lit >= 0 {
			return i
		}
	}
	return len(data)
}
