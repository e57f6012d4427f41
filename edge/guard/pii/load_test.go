package pii

import (
	"testing"

	"gw/admin/resources"
	"gw/edge/guard"
)

func load(t *testing.T, yaml string) *resources.Guardrail {
	t.Helper()
	r := resources.Load([]byte("_format_version: \"1\"\nguardrails:\n"+yaml), func(string) (string, bool) { return "", false })
	if err := r.Err(); err != nil {
		t.Fatalf("load: %v", err)
	}
	return r.Resources.Guardrails[0]
}

// TestFromLoader: options exactly as the loader resolves them (defaults,
// default_action, replacements) compile and behave as documented.
func TestFromLoader(t *testing.T) {
	f := func(yaml string, texts []string, action guard.Action, rule, want string) {
		t.Helper()
		c, err := New(load(t, yaml))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		v := run(t, c, texts...)
		if v.Action != action || v.Rule != rule {
			t.Fatalf("got %v %q; want %v %q", v.Action, v.Rule, action, rule)
		}
		if action == guard.Rewrite {
			if got := masked(texts, v); got != want {
				t.Fatalf("got %q; want %q", got, want)
			}
		}
	}
	// detectors absent: all nine with default_action mask.
	f("  - {name: p, kind: pii}\n", []string{"a@b.com 123-45-6789"}, guard.Rewrite, "email", "[EMAIL_REDACTED] [US_SSN_REDACTED]")
	// default_action block applies to every detector not saying otherwise.
	f("  - {name: p, kind: pii, default_action: block}\n", []string{"x", "10.1.2.3"}, guard.Block, "ip_address", "")
	f("  - {name: p, kind: pii, default_action: block, detectors: [{name: email, action: mask}, jwt]}\n",
		[]string{"a@b.com"}, guard.Rewrite, "email", "[EMAIL_REDACTED]")
	// detectors: [] runs none.
	f("  - {name: p, kind: pii, detectors: []}\n", []string{"a@b.com"}, guard.Allow, "", "")
	// custom patterns: the loader's default replacement, a literal one, group 1.
	f(`  - name: p
    kind: pii
    detectors: []
    custom_patterns:
      - {name: emp_id, regex: 'EMP-\d{6}'}
      - {name: pw, regex: 'password=(\S+)', replacement: "$1"}
`, []string{"EMP-123456 password=hunter2"}, guard.Rewrite, "emp_id", "[EMP_ID_REDACTED] password=$1")
}
