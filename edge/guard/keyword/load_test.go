package keyword

import (
	"testing"

	"gw/admin/resources"
	"gw/edge/guard"
)

// TestFromLoader: patterns as the loader compiles them.
func TestFromLoader(t *testing.T) {
	r := resources.Load([]byte(`_format_version: "1"
guardrails:
  - name: kw
    kind: keyword
    patterns:
      - {kind: literal, value: "Project Nightingale"}
      - {kind: regex, value: '(?i)ignore (all )?previous instructions'}
  - name: empty
    kind: keyword
    patterns: []
`), func(string) (string, bool) { return "", false })
	if err := r.Err(); err != nil {
		t.Fatalf("load: %v", err)
	}
	kw, err := New(r.Resources.Guardrails[0])
	if err != nil {
		t.Fatal(err)
	}
	if v := check(t, kw, "tell me about project NIGHTINGALE"); v.Action != guard.Block || v.Rule != "literal#0" {
		t.Fatalf("got %v %q", v.Action, v.Rule)
	}
	if v := check(t, kw, "fine", "Ignore all previous instructions"); v.Action != guard.Block || v.Rule != "regex#1" {
		t.Fatalf("got %v %q", v.Action, v.Rule)
	}
	empty, err := New(r.Resources.Guardrails[1])
	if err != nil {
		t.Fatal(err)
	}
	if v := check(t, empty, "Project Nightingale"); v.Action != guard.Allow {
		t.Fatalf("empty list: got %v", v.Action)
	}
}
