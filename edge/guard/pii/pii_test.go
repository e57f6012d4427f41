package pii

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"gw/admin/resources"
	"gw/edge/guard"
)

func label(name string) string { return "[" + strings.ToUpper(name) + "_REDACTED]" }

// opts builds PIIOptions: detectors "name" (mask) or "name!" (block).
func opts(dets ...string) *resources.PIIOptions {
	o := &resources.PIIOptions{DefaultAction: resources.ActionMask}
	for _, d := range dets {
		a := resources.ActionMask
		if n, ok := strings.CutSuffix(d, "!"); ok {
			d, a = n, resources.ActionBlock
		}
		o.Detectors = append(o.Detectors, resources.PIIDetector{Name: d, Action: a, Replacement: label(d)})
	}
	return o
}

func allOpts() *resources.PIIOptions { return opts(resources.PIIDetectorNames...) }

func custom(o *resources.PIIOptions, name, expr, action, replacement string) *resources.PIIOptions {
	if replacement == "" {
		replacement = label(name)
	}
	o.CustomPatterns = append(o.CustomPatterns, resources.PIIPattern{Name: name, Regexp: regexp.MustCompile(expr), Action: action, Replacement: replacement})
	return o
}

func mustNew(t testing.TB, o *resources.PIIOptions) guard.Checker {
	t.Helper()
	c, err := New(&resources.Guardrail{Name: "pii", Kind: resources.GuardrailPII, Options: o})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func run(t testing.TB, c guard.Checker, texts ...string) guard.Verdict {
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

// masked renders a verdict on texts: each text after masks, joined by " | ".
func masked(texts []string, v guard.Verdict) string {
	out := append([]string(nil), texts...)
	for _, m := range v.Masks {
		out[m.Index] = string(m.Data)
	}
	return strings.Join(out, " | ")
}

// TestDetectors: each detector alone, mask action; want is the text after
// masking ("" = no match).
func TestDetectors(t *testing.T) {
	cases := []struct {
		det, in, want string
	}{
		// email
		{"email", "mail bob.smith+tag@example.co.uk now", "mail [EMAIL_REDACTED] now"},
		{"email", "a@b.io.", "[EMAIL_REDACTED]."},
		{"email", "x a@b.com.c0m", "x [EMAIL_REDACTED].c0m"},
		{"email", "联系 zhang@mail.cn 谢谢", "联系 [EMAIL_REDACTED] 谢谢"},
		{"email", "two: a@x.org,b@y.net", "two: [EMAIL_REDACTED],[EMAIL_REDACTED]"},
		{"email", "not an email: a@b", ""},
		{"email", "a@b.c", ""},             // one-letter TLD
		{"email", "a@-b.com", ""},          // label starts with '-'
		{"email", "a@b.com9", ""},          // digit in TLD, nothing shorter
		{"email", "@example.com", ""},      // no local part
		{"email", "user@@example.com", ""}, // empty local before the second @
		{"email", "a@b..com", ""},          // empty label
		{"email", strings.Repeat("a", 65) + "@b.com", ""},
		// china_mobile
		{"china_mobile", "call 13812345678.", "call [CHINA_MOBILE_REDACTED]."},
		{"china_mobile", "+8613812345678", "[CHINA_MOBILE_REDACTED]"},
		{"china_mobile", "tel +86 138-1234-5678", "tel [CHINA_MOBILE_REDACTED]"},
		{"china_mobile", "0086 19912345678", "[CHINA_MOBILE_REDACTED]"},
		{"china_mobile", "手机13812345678号", "手机[CHINA_MOBILE_REDACTED]号"},
		{"china_mobile", "138 1234 5678", "[CHINA_MOBILE_REDACTED]"},
		{"china_mobile", "12812345678", ""},   // second digit 2
		{"china_mobile", "138123456789", ""},  // 12 digits
		{"china_mobile", "9913812345678", ""}, // inside a longer number
		{"china_mobile", "id13812345678", ""}, // glued to a word
		{"china_mobile", "138 1234-5678", ""}, // mixed separators
		{"china_mobile", "+87 13812345678", "+87 [CHINA_MOBILE_REDACTED]"},
		// china_id_card
		{"china_id_card", "ID 11010519491231002X ok", "ID [CHINA_ID_CARD_REDACTED] ok"},
		{"china_id_card", "11010519491231002x", "[CHINA_ID_CARD_REDACTED]"},
		{"china_id_card", "440308199901010013", ""}, // wrong check digit (2 is right)
		{"china_id_card", "440308199901010012", "[CHINA_ID_CARD_REDACTED]"},
		{"china_id_card", "110105194913310023", ""}, // month 13
		{"china_id_card", "011010519491231002X", ""},
		{"china_id_card", "911010519491231002X", ""}, // 19 characters: embedded
		{"china_id_card", "11010519491231002X1", ""},
		// bank_card
		{"bank_card", "card 4111111111111111 exp", "card [BANK_CARD_REDACTED] exp"},
		{"bank_card", "4111 1111 1111 1111", "[BANK_CARD_REDACTED]"},
		{"bank_card", "4111-1111-1111-1111", "[BANK_CARD_REDACTED]"},
		{"bank_card", "amex 3782 822463 10005.", "amex [BANK_CARD_REDACTED]."},
		{"bank_card", "6222 0212 3456 7890 127 ok", ""}, // 19 digits, Luhn fails (8 is right); shorter prefixes fail too
		{"bank_card", "6222 0212 3456 7890 128 ok", "[BANK_CARD_REDACTED] ok"},
		{"bank_card", "4111 1111 1111 1111 2025", "[BANK_CARD_REDACTED] 2025"},
		{"bank_card", "4111111111111112", ""},                              // Luhn fails
		{"bank_card", "94111111111111111", ""},                             // 17 digits: Luhn fails as a whole
		{"bank_card", "41111111111111110000", ""},                          // 20 digits
		{"bank_card", "4111 1111-1111 1111", ""},                           // mixed separators
		{"bank_card", "x4111111111111111", ""},                             // glued
		{"bank_card", "4111111111111111x", ""},                             // glued
		{"bank_card", "order 1234567890128", "order [BANK_CARD_REDACTED]"}, // 13 digits, Luhn ok
		// us_ssn
		{"us_ssn", "ssn 123-45-6789.", "ssn [US_SSN_REDACTED]."},
		{"us_ssn", "000-12-3456", ""},
		{"us_ssn", "666-12-3456", ""},
		{"us_ssn", "912-34-5678", ""},
		{"us_ssn", "123-00-4567", ""},
		{"us_ssn", "123-45-0000", ""},
		{"us_ssn", "1123-45-6789", ""},
		{"us_ssn", "123-45-67890", ""},
		{"us_ssn", "123 45 6789", ""},
		// ip_address
		{"ip_address", "host 192.168.1.10:8080", "host [IP_ADDRESS_REDACTED]:8080"},
		{"ip_address", "at 10.0.0.1.", "at [IP_ADDRESS_REDACTED]."},
		{"ip_address", "256.1.1.1", ""},
		{"ip_address", "1.2.3.256", ""},
		{"ip_address", "01.2.3.4", ""},
		{"ip_address", "1.2.3.4.5", ""},
		{"ip_address", "v1.2.3.4", ""},
		{"ip_address", "1.2.3", ""},
		{"ip_address", "ip fe80::1 up", "ip [IP_ADDRESS_REDACTED] up"},
		{"ip_address", "2001:db8:85a3:0:0:8a2e:370:7334", "[IP_ADDRESS_REDACTED]"},
		{"ip_address", "[::1]:443", "[[IP_ADDRESS_REDACTED]]:443"},
		{"ip_address", "::ffff:192.0.2.1", "[IP_ADDRESS_REDACTED]"},
		{"ip_address", "at 12:30:45 today", ""},
		{"ip_address", "std::vector", ""},
		{"ip_address", "a :: b", ""},
		{"ip_address", "1:2:3:4:5:6:7:8:9", ""},
		{"ip_address", "00:1a:2b:3c:4d:5e", ""},
		// api_key
		{"api_key", "key sk-proj-abcDEF1234567890abcdefXYZ end", "key [API_KEY_REDACTED] end"},
		{"api_key", "sk-ant-api03-AbCdEfGh12345678_ijklmnop", "[API_KEY_REDACTED]"},
		{"api_key", "AKIAIOSFODNN7EXAMPLE", "[API_KEY_REDACTED]"},
		{"api_key", "ASIAIOSFODNN7EXAMPLE,", "[API_KEY_REDACTED],"},
		{"api_key", "ghp_" + strings.Repeat("a1", 18), "[API_KEY_REDACTED]"},
		{"api_key", "github_pat_11ABCDEFG0123456789_abcdefghij", "[API_KEY_REDACTED]"},
		{"api_key", "xoxb-1234567890-abcdef", "[API_KEY_REDACTED]"},
		{"api_key", "AIza" + strings.Repeat("B", 35), "[API_KEY_REDACTED]"},
		{"api_key", "sk-this-is-only-words-no-digits-at-all", ""},
		{"api_key", "task-1234567890123456789012", ""},
		{"api_key", "AKIAIOSFODNN7EXAMPL", ""},   // 15 after the prefix
		{"api_key", "AKIAIOSFODNN7EXAMPLEX", ""}, // 17
		{"api_key", "ghp_" + strings.Repeat("a", 35), ""},
		// jwt
		{"jwt", "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-_x end", "Bearer [JWT_REDACTED] end"},
		{"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.", ""},
		{"jwt", "eyJhbG.eyJzdWIiOiIxIn0.sig", ""}, // header too short
		{"jwt", "xeyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", ""},
		// private_key
		{"private_key", "k: -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nbye", "k: [PRIVATE_KEY_REDACTED]\nbye"},
		{"private_key", "-----BEGIN PRIVATE KEY-----\nMIIE", "[PRIVATE_KEY_REDACTED]"},
		{"private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----", "[PRIVATE_KEY_REDACTED]"},
		{"private_key", "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----", ""},
		{"private_key", "-----BEGIN CERTIFICATE-----", ""},
	}
	for _, tc := range cases {
		t.Run(tc.det+"/"+tc.in, func(t *testing.T) {
			v := run(t, mustNew(t, opts(tc.det)), tc.in)
			if tc.want == "" || tc.want == tc.in {
				if v.Action != guard.Allow || len(v.Masks) != 0 {
					t.Fatalf("got %v %q %q; want no match", v.Action, v.Rule, masked([]string{tc.in}, v))
				}
				return
			}
			if v.Action != guard.Rewrite || v.Rule != tc.det {
				t.Fatalf("got %v %q; want rewrite %q", v.Action, v.Rule, tc.det)
			}
			if got := masked([]string{tc.in}, v); got != tc.want {
				t.Fatalf("got %q; want %q", got, tc.want)
			}
		})
	}
}

func TestPIIVerdicts(t *testing.T) {
	cases := []struct {
		name   string
		o      *resources.PIIOptions
		texts  []string
		action guard.Action
		rule   string
		want   string // masked texts joined by " | "
	}{
		{"nothing", allOpts(), []string{"hello world", ""}, guard.Allow, "", ""},
		{"no detectors", opts(), []string{"a@b.com"}, guard.Allow, "", ""},
		{"multiple matches one text", allOpts(), []string{"a@b.com and c@d.org and 10.0.0.1"}, guard.Rewrite, "email",
			"[EMAIL_REDACTED] and [EMAIL_REDACTED] and [IP_ADDRESS_REDACTED]"},
		{"only some texts masked", allOpts(), []string{"hi", "mail a@b.com", "bye", "ip 1.2.3.4"}, guard.Rewrite, "email",
			"hi | mail [EMAIL_REDACTED] | bye | ip [IP_ADDRESS_REDACTED]"},
		{"rule is first entry in config order", opts("ip_address", "email"), []string{"a@b.com 1.2.3.4"}, guard.Rewrite, "ip_address",
			"[EMAIL_REDACTED] [IP_ADDRESS_REDACTED]"},
		{"block wins over mask", opts("email", "us_ssn!"), []string{"a@b.com", "123-45-6789"}, guard.Block, "us_ssn", ""},
		{"block in a later text discards masks", opts("email", "jwt!"), []string{"a@b.com", "x", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig"}, guard.Block, "jwt", ""},
		{"first block entry in config order", opts("email!", "ip_address!"), []string{"1.2.3.4 a@b.com"}, guard.Block, "email", ""},
		{"first text with a block", opts("email!", "ip_address!"), []string{"1.2.3.4", "a@b.com"}, guard.Block, "ip_address", ""},
		{"overlap merges into first start", opts("email", "ip_address"), []string{"x 1.2.3.4@example.com"}, guard.Rewrite, "email",
			"x [EMAIL_REDACTED]"},
		{"same start: config order labels", opts("china_mobile", "bank_card"), []string{"13812345678"}, guard.Rewrite, "china_mobile",
			"[CHINA_MOBILE_REDACTED]"},
		{"custom whole match", custom(opts(), "emp_id", `EMP-\d{6}`, "mask", ""), []string{"id EMP-123456 ok"}, guard.Rewrite, "emp_id",
			"id [EMP_ID_REDACTED] ok"},
		{"custom replacement literal $1", custom(opts(), "emp", `EMP-(\d{6})`, "mask", "<$1>"), []string{"EMP-123456"}, guard.Rewrite, "emp",
			"EMP-<$1>"},
		{"custom group 1 only", custom(opts(), "pw", `password=(\S+)`, "mask", "***"), []string{"user=a password=hunter2 x password=b"}, guard.Rewrite, "pw",
			"user=a password=*** x password=***"},
		{"custom non-participating group", custom(opts(), "pw", `password(?:=(\S+))?`, "mask", "***"), []string{"password please"}, guard.Allow, "", ""},
		{"custom $1 without groups", custom(opts(), "c", `secret`, "mask", "$1"), []string{"my secret"}, guard.Rewrite, "c", "my $1"},
		{"custom block", custom(opts("email"), "proj", `(?i)project x`, "block", ""), []string{"a@b.com", "about Project X"}, guard.Block, "proj", ""},
		{"custom and builtin merged", custom(opts("email"), "dom", `example\.com`, "mask", "[D]"), []string{"a@example.com"}, guard.Rewrite, "email",
			"[EMAIL_REDACTED]"},
		{"custom earlier start wins label", custom(opts("email"), "to", `to: \S+`, "mask", "[TO]"), []string{"to: a@b.com"}, guard.Rewrite, "email",
			"[TO]"},
		{"invalid utf-8 passes through", allOpts(), []string{"\xff a@b.com \xfe"}, guard.Rewrite, "email", "\xff [EMAIL_REDACTED] \xfe"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := run(t, mustNew(t, tc.o), tc.texts...)
			if v.Action != tc.action || v.Rule != tc.rule {
				t.Fatalf("got %v %q; want %v %q", v.Action, v.Rule, tc.action, tc.rule)
			}
			if tc.action != guard.Rewrite {
				if len(v.Masks) != 0 {
					t.Fatalf("got %d masks with action %v", len(v.Masks), v.Action)
				}
				return
			}
			seen := map[int]bool{}
			for _, m := range v.Masks {
				if seen[m.Index] {
					t.Fatalf("text %d masked twice", m.Index)
				}
				seen[m.Index] = true
			}
			if got := masked(tc.texts, v); got != tc.want {
				t.Fatalf("got %q; want %q", got, tc.want)
			}
		})
	}
}

// TestPIIBufReuse: masks stay correct when Buf starts small and grows, and
// when the verdict is reused.
func TestPIIBufReuse(t *testing.T) {
	c := mustNew(t, allOpts())
	texts := []string{strings.Repeat("a@b.com ", 50), "x", strings.Repeat("1.2.3.4 ", 80)}
	req := &guard.Request{}
	for _, s := range texts {
		req.Texts = append(req.Texts, guard.Text{Data: []byte(s)})
	}
	v := guard.Verdict{Buf: make([]byte, 0, 4)}
	for round := 0; round < 3; round++ {
		v.Reset()
		if err := c.Check(context.Background(), req, &v); err != nil {
			t.Fatal(err)
		}
		want := strings.Repeat("[EMAIL_REDACTED] ", 50) + " | x | " + strings.Repeat("[IP_ADDRESS_REDACTED] ", 80)
		if got := masked(texts, v); got != want {
			t.Fatalf("round %d: got %q", round, got)
		}
	}
}

func TestPIINewErrors(t *testing.T) {
	f := func(name string, o resources.GuardrailOptions) {
		t.Helper()
		if _, err := New(&resources.Guardrail{Name: "p", Options: o}); err == nil {
			t.Fatalf("%s: want an error", name)
		}
	}
	f("wrong options", &resources.KeywordOptions{})
	f("unknown detector", opts("passport"))
	f("twice", opts("email", "email"))
	f("bad action", &resources.PIIOptions{Detectors: []resources.PIIDetector{{Name: "email", Action: "redact"}}})
	f("uncompiled", &resources.PIIOptions{CustomPatterns: []resources.PIIPattern{{Name: "x", Action: "mask"}}})
}

func TestLuhnIDCardIPv6(t *testing.T) {
	for s, want := range map[string]bool{"4111111111111111": true, "4111 1111 1111 1111": true, "4111111111111112": false, "79927398713": true} {
		if luhn([]byte(s)) != want {
			t.Errorf("luhn(%q) = %v", s, !want)
		}
	}
	for s, want := range map[string]bool{"11010519491231002X": true, "110105194912310021": false, "440524188001010014": true} {
		if validIDCard([]byte(s)) != want {
			t.Errorf("validIDCard(%q) = %v", s, !want)
		}
	}
	for s, want := range map[string]bool{"::": true, "::1": true, "1::": true, "1:2:3:4:5:6:7:8": true, "1:2:3:4:5:6:7::": true,
		"1:2:3:4:5:6:7:8:9": false, "1::2::3": false, ":1:2:3:4:5:6:7": false, "1:2:3:4:5:6:1.2.3.4": true, "::1.2.3.4": true,
		"1:2:3:4:5:6:7:1.2.3.4": false, "12345::": false, "1:2": false, "::01.2.3.4": false, "1.2.3.4::": false} {
		if validIPv6([]byte(s)) != want {
			t.Errorf("validIPv6(%q) = %v", s, !want)
		}
	}
}
