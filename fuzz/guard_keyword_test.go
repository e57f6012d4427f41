package fuzz

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/keyword"
)

// FuzzKeyword: the keyword checker (one automaton for all literals, regexes
// behind a literal prefilter) gives the same verdict and rule as a naive
// reference — bytes.Index on ASCII-lowered text for each literal, then
// regexp.Match for each regex in order — on arbitrary bytes.
//
// spec holds one pattern per line ("re:" starts a regex); text is split on
// NUL into several texts.
func FuzzKeyword(f *testing.F) {
	f.Add("bad\nre:(?i)ignore (all )?previous instructions", []byte("please IGNORE previous instructions\x00ok"))
	f.Add("abcd\nbc\nre:\\d{3}-\\d{4}", []byte("abce 555-1234"))
	f.Add("secret\nSECRET plan\nre:(?i)kilo", []byte("\u212Ailo secret"))
	f.Add("re:pa\u017fs\nre:(?i)pass", []byte("pa\u017Fs \xff\xfe"))
	f.Add("aab\nab\nb", []byte("aaab"))
	f.Add("re:ab\uFFFDcd\nre:^$", []byte("ab\xffcd\x00"))
	f.Add("", []byte("anything"))
	// Texts of 256 bytes and more are scanned as two interleaved streams.
	f.Add("needle\nre:(?i)select \\* from", []byte(strings.Repeat("hay ", 100)+"nee"+"dle"+strings.Repeat(" hay", 100)))
	f.Add("stradd\nzz", []byte(strings.Repeat("x", 148)+"stradd"+strings.Repeat("y", 150)))
	f.Add("re:(?i)select \\* from", []byte(strings.Repeat("a", 140)+"SELECT * FROM t"+strings.Repeat("b", 140)))
	// Short texts are scanned in batches, four interleaved streams grouped
	// by length, and resolved in text order: a regex hit in an earlier text
	// beats a literal in a later one; a long text between short ones.
	f.Add("banned\nre:secret[-_]project\\d+", []byte("a\x00bb\x00ccc secret_project7\x00dddd\x00eeeee banned\x00f\x00gg\x00hhh\x00i\x00j"))
	f.Add("zzz\nyy", []byte("0\x001\x002\x003\x004\x005\x006\x007\x008\x009\x00a\x00b\x00c\x00d\x00e\x00f\x00g\x00h\x00yy\x00zzz"))
	f.Add("needle\nother", []byte("x\x00"+strings.Repeat("hay ", 70)+"\x00short needle\x00OTHER"))
	// Patterns starting with non-ASCII or upper-case bytes; escapes are
	// decoded before matching, so a pattern meets the raw UTF-8.
	f.Add("\u00e9t\u00e9\nBaNnEd\nre:(?i)\u00c9T\u00c9", []byte("un \u00c9T\u00c9\x00banned\x00\u00e9t\u00e9"))
	f.Fuzz(func(t *testing.T, spec string, text []byte) {
		var ps []resources.KeywordPattern
		type refRe struct {
			re  *regexp.Regexp
			idx int
		}
		type refLit struct {
			lit []byte
			idx int
		}
		var lits []refLit
		var res []refRe
		for _, line := range strings.Split(spec, "\n") {
			if line == "" {
				continue
			}
			i := len(ps)
			if e, ok := strings.CutPrefix(line, "re:"); ok {
				re, err := regexp.Compile(e)
				if err != nil {
					continue
				}
				ps = append(ps, resources.KeywordPattern{Kind: "regex", Value: e, Regexp: re})
				res = append(res, refRe{re, i})
				continue
			}
			ps = append(ps, resources.KeywordPattern{Kind: "literal", Value: line})
			lits = append(lits, refLit{asciiLowerBytes([]byte(line)), i})
		}
		c, err := keyword.New(&resources.Guardrail{Name: "f", Kind: resources.GuardrailKeyword, Options: &resources.KeywordOptions{Patterns: ps}})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		req := &guard.Request{}
		for _, part := range bytes.Split(text, []byte{0}) {
			req.Texts = append(req.Texts, guard.Text{Data: part})
		}

		want := ""
	texts:
		for _, tx := range req.Texts {
			low := asciiLowerBytes(tx.Data)
			bestEnd, bestIdx := -1, -1
			for _, l := range lits {
				if j := bytes.Index(low, l.lit); j >= 0 {
					if end := j + len(l.lit); bestEnd < 0 || end < bestEnd {
						bestEnd, bestIdx = end, l.idx
					}
				}
			}
			if bestIdx >= 0 {
				want = "literal#" + strconv.Itoa(bestIdx)
				break
			}
			for _, r := range res {
				if r.re.Match(tx.Data) {
					want = "regex#" + strconv.Itoa(r.idx)
					break texts
				}
			}
		}

		var v guard.Verdict
		if err := c.Check(context.Background(), req, &v); err != nil {
			t.Fatalf("Check: %v", err)
		}
		if v.Rule != want || (want == "") != (v.Action == guard.Allow) || (want != "" && v.Action != guard.Block) {
			t.Fatalf("got %v %q; want %q", v.Action, v.Rule, want)
		}
		if len(v.Masks) != 0 || len(v.Buf) != 0 {
			t.Fatalf("keyword must not mask")
		}
	})
}

func asciiLowerBytes(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}
