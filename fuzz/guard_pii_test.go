package fuzz

import (
	"bytes"
	"context"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gw/admin/resources"
	"gw/edge/guard"
	"gw/edge/guard/pii"
)

// The reference pii detectors: a full-match regexp per detector, a start
// rule, and a validator written independently of the scanners (check
// digits, Luhn, SSN areas, net/netip for IPv6). For each start position the
// reference takes the longest j such that data[i:j] matches the regexp and
// passes the validator (which includes the end boundary) — slow and plain.

type piiRef struct {
	full   *regexp.Regexp // ^(?:...)$
	upper  *regexp.Regexp // ^(?:...), leftmost-longest: bounds j
	start  func(data []byte, i int) bool
	valid  func(data []byte, i, j int) bool
	custom func(data []byte) [][2]int // instead of the above (private_key)
}

func refAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
func refTok(c byte) bool { return refAlnum(c) || c == '_' || c == '-' }

func prevNot(f func(byte) bool) func([]byte, int) bool {
	return func(d []byte, i int) bool { return i == 0 || !f(d[i-1]) }
}

func nextNot(d []byte, j int, f func(byte) bool) bool { return j >= len(d) || !f(d[j]) }

func newPIIRef(expr string, start func([]byte, int) bool, valid func([]byte, int, int) bool) piiRef {
	up := regexp.MustCompile(`^(?:` + expr + `)`)
	up.Longest()
	return piiRef{full: regexp.MustCompile(`^(?:` + expr + `)$`), upper: up, start: start, valid: valid}
}

func refDigits(b []byte) []byte {
	var out []byte
	for _, c := range b {
		if c >= '0' && c <= '9' {
			out = append(out, c)
		}
	}
	return out
}

func refLuhn(d []byte) bool {
	sum := 0
	for k := 0; k < len(d); k++ {
		x := int(d[len(d)-1-k] - '0')
		if k%2 == 1 {
			x *= 2
			if x > 9 {
				x -= 9
			}
		}
		sum += x
	}
	return sum%10 == 0
}

var piiRefs = map[string]piiRef{
	"email": newPIIRef(`[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+`,
		prevNot(func(c byte) bool { return refAlnum(c) || strings.IndexByte("._%+-", c) >= 0 }),
		func(d []byte, i, j int) bool {
			at := bytes.IndexByte(d[i:j], '@')
			dom := string(d[i+at+1 : j])
			if len(dom) > 255 || !nextNot(d, j, func(c byte) bool { return refAlnum(c) || c == '-' }) {
				return false
			}
			labels := strings.Split(dom, ".")
			for _, l := range labels {
				if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
					return false
				}
			}
			return regexp.MustCompile(`^[A-Za-z]{2,63}$`).MatchString(labels[len(labels)-1])
		}),
	"china_mobile": newPIIRef(`(?:(?:\+86|0086)[ -]?)?1[3-9]\d(?:\d{8}| \d{4} \d{4}|-\d{4}-\d{4})`,
		prevNot(refAlnum), func(d []byte, i, j int) bool { return nextNot(d, j, refAlnum) }),
	"china_id_card": newPIIRef(`\d{17}[0-9Xx]`, prevNot(refAlnum), func(d []byte, i, j int) bool {
		s := strings.ToUpper(string(d[i:j]))
		if !nextNot(d, j, refAlnum) || s[0] == '0' {
			return false
		}
		if y := s[6:8]; y != "18" && y != "19" && y != "20" {
			return false
		}
		if m := s[10:12]; m < "01" || m > "12" {
			return false
		}
		if dd := s[12:14]; dd < "01" || dd > "31" {
			return false
		}
		w := []int{7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2}
		sum := 0
		for k := range w {
			sum += int(s[k]-'0') * w[k]
		}
		return s[17] == "10X98765432"[sum%11]
	}),
	"bank_card": newPIIRef(`\d{13,19}|\d{4}(?: \d{1,6}){2,4}|\d{4}(?:-\d{1,6}){2,4}`, prevNot(refAlnum), func(d []byte, i, j int) bool {
		ds := refDigits(d[i:j])
		return nextNot(d, j, refAlnum) && len(ds) >= 13 && len(ds) <= 19 && refLuhn(ds)
	}),
	"us_ssn": newPIIRef(`\d{3}-\d{2}-\d{4}`, prevNot(refAlnum), func(d []byte, i, j int) bool {
		s := string(d[i:j])
		return nextNot(d, j, refAlnum) && s[:3] != "000" && s[:3] != "666" && s[0] != '9' && s[4:6] != "00" && s[7:] != "0000"
	}),
	"ipv4": newPIIRef(`\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}`,
		prevNot(func(c byte) bool { return refAlnum(c) || c == '.' }),
		func(d []byte, i, j int) bool {
			if !nextNot(d, j, refAlnum) || j+1 < len(d) && d[j] == '.' && d[j+1] >= '0' && d[j+1] <= '9' {
				return false
			}
			a, err := netip.ParseAddr(string(d[i:j])) // rejects octets > 255 and leading zeros
			return err == nil && a.Is4()
		}),
	"ipv6": newPIIRef(`[0-9A-Fa-f:.]{2,45}`,
		prevNot(func(c byte) bool { return refAlnum(c) || c == ':' || c == '.' }),
		func(d []byte, i, j int) bool {
			if !nextNot(d, j, func(c byte) bool { return refAlnum(c) || c == ':' }) {
				return false
			}
			s := string(d[i:j])
			a, err := netip.ParseAddr(s)
			return err == nil && a.Is6() && strings.ContainsAny(s, "0123456789abcdefABCDEF")
		}),
	"api_key": newPIIRef(`sk-[A-Za-z0-9_-]{20,}|AKIA[A-Z0-9]{16}|ASIA[A-Z0-9]{16}|AIza[A-Za-z0-9_-]{35}|gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{22,}|xox[abprs]-[A-Za-z0-9-]{10,}`,
		prevNot(refTok), func(d []byte, i, j int) bool {
			if !nextNot(d, j, refTok) {
				return false
			}
			return !bytes.HasPrefix(d[i:j], []byte("sk-")) || len(refDigits(d[i+3:j])) > 0
		}),
	"jwt": newPIIRef(`eyJ[A-Za-z0-9_-]{7,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`, prevNot(refTok),
		func(d []byte, i, j int) bool { return nextNot(d, j, refTok) }),
	"private_key": {custom: func(d []byte) [][2]int {
		begin := regexp.MustCompile(`^-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----`)
		end := regexp.MustCompile(`-----END [A-Z0-9 ]*PRIVATE KEY-----`)
		var out [][2]int
		for i := range d {
			m := begin.FindIndex(d[i:])
			if m == nil {
				continue
			}
			b := i + m[1]
			j := len(d)
			if e := end.FindIndex(d[b:]); e != nil {
				j = b + e[1]
			}
			out = append(out, [2]int{i, j})
		}
		return out
	}},
}

func (r piiRef) spans(d []byte) [][2]int {
	if r.custom != nil {
		return r.custom(d)
	}
	var out [][2]int
	for i := range d {
		if !r.start(d, i) {
			continue
		}
		m := r.upper.FindIndex(d[i:])
		if m == nil {
			continue
		}
		for j := i + m[1]; j > i; j-- {
			if r.full.Match(d[i:j]) && r.valid(d, i, j) {
				out = append(out, [2]int{i, j})
				break
			}
		}
	}
	return out
}

// FuzzPII: the pii checker gives the same verdict, rule and masked texts
// as a reference built from regexps and plain validators, for any set of
// enabled detectors, actions and configuration order, on arbitrary bytes.
// text is split on NUL into several texts.
func FuzzPII(f *testing.F) {
	f.Add(uint16(0x1ff), uint16(0), false, []byte("mail a@b.com, ip 10.0.0.1\x00card 4111 1111 1111 1111 ok"))
	f.Add(uint16(0x1ff), uint16(0x10), true, []byte("ssn 123-45-6789\x00id 11010519491231002X\x00+86 138-1234-5678"))
	f.Add(uint16(0x1ff), uint16(0), false, []byte("fe80::1 ::ffff:1.2.3.4 12:30:45 [::1]:443 std::vector"))
	f.Add(uint16(0x1ff), uint16(0x100), false, []byte("-----BEGIN RSA PRIVATE KEY-----\nMII\n-----END RSA PRIVATE KEY-----"))
	f.Add(uint16(0x1ff), uint16(0), true, []byte("Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig sk-proj-abcDEF1234567890abcdefXYZ AKIAIOSFODNN7EXAMPLE"))
	f.Add(uint16(0x1ff), uint16(0), false, []byte("x 1.2.3.4@example.com secret-abc 12:34 \xff\xfe"))
	f.Add(uint16(0x0ff), uint16(0x3), true, []byte("13812345678 4111111111111111 a@b.io"))
	f.Add(uint16(1<<5), uint16(0), false, []byte("1:2:3:4:5:6:7:8 1::2::3 ::01.2.3.4 1:2:3:4:5:6:1.2.3.4 1:2:3:4:5::1.2.3.4 ab:: fe80::1: 1::2.3"))
	f.Add(uint16(1<<3), uint16(0), false, []byte("4111 1111 1111 1111 2025 3782 822463 10005 6011-0009-9013-9424-123"))
	f.Add(uint16(1<<0), uint16(0), false, []byte("a@b.com.c0m x.y@sub-d.example.org- a@b.-c.com \u4e2d@x.cn"))
	f.Add(uint16(0x7ff), uint16(0x400), false, []byte("12:34 secret-\x00SECRET-abc 0086 13812345678 +86-138 1234 5678"))
	// Keys found from their '-' or '_' (sk-, xox?-, gh?_, github_pat_), with
	// and without a token byte before them; digits and 'A' at every offset
	// of the eight-byte skip, after non-ASCII bytes.
	f.Add(uint16(1<<6), uint16(0), false, []byte("sk-abcdefghij0123456789 xsk-abcdefghij0123456789 _sk-abcdefghij0123456789\x00xoxb-123456789012 -xoxp-123456789012 ghp_abcdefghijklmnopqrstuvwxyz0123456789 aghp_abcdefghijklmnopqrstuvwxyz0123456789\x00github_pat_abcdefghij0123456789AB_x github_pat-"))
	f.Add(uint16(0x1ff), uint16(0), false, []byte("1234567\u00e9123-45-6789\x00\u00e9\u00e94111111111111111\x00xxxxxxxAKIAIOSFODNN7EXAMPLE 9AKIAIOSFODNN7EXAMPLE\x00abcdefg+8613812345678"))
	f.Fuzz(func(t *testing.T, enable, block uint16, reverse bool, text []byte) {
		if len(text) > 256 {
			text = text[:256] // the reference is quadratic
		}
		o := &resources.PIIOptions{DefaultAction: resources.ActionMask}
		for k, n := range resources.PIIDetectorNames {
			if enable&(1<<k) == 0 {
				continue
			}
			a := resources.ActionMask
			if block&(1<<k) != 0 {
				a = resources.ActionBlock
			}
			o.Detectors = append(o.Detectors, resources.PIIDetector{Name: n, Action: a, Replacement: "[" + strings.ToUpper(n) + "_REDACTED]"})
		}
		if reverse {
			slices.Reverse(o.Detectors)
		}
		customAction := func(bit int) string {
			if block&(1<<bit) != 0 {
				return resources.ActionBlock
			}
			return resources.ActionMask
		}
		if enable&(1<<9) != 0 {
			o.CustomPatterns = append(o.CustomPatterns, resources.PIIPattern{Name: "secret", Regexp: regexp.MustCompile(`(?i)secret-(\w*)`), Action: customAction(9), Replacement: "$1"})
		}
		if enable&(1<<10) != 0 {
			o.CustomPatterns = append(o.CustomPatterns, resources.PIIPattern{Name: "clock", Regexp: regexp.MustCompile(`\d{2}:\d{2}`), Action: customAction(10), Replacement: "[CLOCK]"})
		}
		c, err := pii.New(&resources.Guardrail{Name: "f", Kind: resources.GuardrailPII, Options: o})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		req := &guard.Request{}
		for _, part := range bytes.Split(text, []byte{0}) {
			req.Texts = append(req.Texts, guard.Text{Data: part})
		}
		var v guard.Verdict
		if err := c.Check(context.Background(), req, &v); err != nil {
			t.Fatalf("Check: %v", err)
		}
		wantAction, wantRule, wantMasks := piiReference(o, req.Texts)
		if v.Action != wantAction || v.Rule != wantRule {
			t.Fatalf("got %v %q; want %v %q", v.Action, v.Rule, wantAction, wantRule)
		}
		if len(v.Masks) != len(wantMasks) {
			t.Fatalf("got %d masks; want %d", len(v.Masks), len(wantMasks))
		}
		for k, m := range v.Masks {
			if m.Index != wantMasks[k].Index || !bytes.Equal(m.Data, wantMasks[k].Data) {
				t.Fatalf("mask %d: got %d %q; want %d %q", k, m.Index, m.Data, wantMasks[k].Index, wantMasks[k].Data)
			}
		}
	})
}

type refSpan struct {
	start, end, entry int
}

func piiReference(o *resources.PIIOptions, texts []guard.Text) (guard.Action, string, []guard.Mask) {
	type ent struct {
		name, repl string
		block      bool
		find       func([]byte) []refSpan // mask spans (entry filled by caller)
		re         *regexp.Regexp
	}
	var ents []ent
	for _, d := range o.Detectors {
		var refs []piiRef
		if d.Name == "ip_address" {
			refs = []piiRef{piiRefs["ipv4"], piiRefs["ipv6"]}
		} else {
			refs = []piiRef{piiRefs[d.Name]}
		}
		ents = append(ents, ent{name: d.Name, repl: d.Replacement, block: d.Action == resources.ActionBlock, find: func(b []byte) []refSpan {
			var out []refSpan
			for _, r := range refs {
				for _, s := range r.spans(b) {
					out = append(out, refSpan{s[0], s[1], 0})
				}
			}
			return out
		}})
	}
	for _, p := range o.CustomPatterns {
		re := p.Regexp
		ents = append(ents, ent{name: p.Name, repl: p.Replacement, block: p.Action == resources.ActionBlock, re: re, find: func(b []byte) []refSpan {
			var out []refSpan
			for _, m := range re.FindAllSubmatchIndex(b, -1) {
				a, e := m[0], m[1]
				if re.NumSubexp() > 0 {
					a, e = m[2], m[3]
				}
				if a >= 0 && e > a {
					out = append(out, refSpan{a, e, 0})
				}
			}
			return out
		}})
	}
	var masks []guard.Mask
	rule := ""
	for ti, t := range texts {
		var spans []refSpan
		firstMask := ""
		for ei, e := range ents {
			if e.block {
				hit := false
				if e.re != nil {
					hit = e.re.Match(t.Data)
				} else {
					hit = len(e.find(t.Data)) > 0
				}
				if hit {
					return guard.Block, e.name, nil
				}
				continue
			}
			got := e.find(t.Data)
			if len(got) > 0 && firstMask == "" {
				firstMask = e.name
			}
			for _, s := range got {
				s.entry = ei
				spans = append(spans, s)
			}
		}
		if len(spans) == 0 {
			continue
		}
		if rule == "" {
			rule = firstMask
		}
		slices.SortFunc(spans, func(a, b refSpan) int {
			if a.start != b.start {
				return a.start - b.start
			}
			return a.entry - b.entry
		})
		var out []byte
		last := 0
		for k := 0; k < len(spans); {
			s := spans[k]
			end := s.end
			for k++; k < len(spans) && spans[k].start < end; k++ {
				end = max(end, spans[k].end)
			}
			out = append(out, t.Data[last:s.start]...)
			out = append(out, ents[s.entry].repl...)
			last = end
		}
		out = append(out, t.Data[last:]...)
		masks = append(masks, guard.Mask{Index: ti, Data: out})
	}
	if rule == "" {
		return guard.Allow, "", nil
	}
	return guard.Rewrite, rule, masks
}
