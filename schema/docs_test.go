package schema

import (
	"os"
	"strings"
	"testing"

	"gw/admin/resources"
)

// TestEveryFieldHasADescription fails when a field of the schema has no row
// in a field table of docs/CONFIG.md. undocumented.txt lists the fields that
// had none when this test was written (nested blocks described in prose);
// it may only shrink: a listed field that gains a row fails the test too,
// so the line gets removed.
func TestEveryFieldHasADescription(t *testing.T) {
	_, missing := Build()
	raw, err := os.ReadFile("undocumented.txt")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, l := range strings.Split(string(raw), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			known[l] = true
		}
	}
	got := map[string]bool{}
	for _, m := range missing {
		got[m] = true
		if !known[m] {
			t.Errorf("%s has no description: add a row for it to a field table of docs/CONFIG.md", m)
		}
	}
	for k := range known {
		if !got[k] {
			t.Errorf("%s is documented now (or gone): remove it from schema/undocumented.txt", k)
		}
	}
}

func TestParseFieldTables(t *testing.T) {
	md := "## models\n\n| Field | Type | Rule |\n|---|---|---|\n" +
		"| `a` / `b` | string | first |\n" +
		"| `x.y`, `.z` | string | nested \\| piped |\n" +
		"| `t_min/_max` | number | bounds |\n\n" +
		"## guardrails\n\n#### `pii`\n\n| Field | Type | Required | Default | Rule | Source |\n|---|---|---|---|---|---|\n" +
		"| `entities` | list | yes | | which | gw |\n"
	got := ParseFieldTables(md, resources.Collections)
	want := map[string]string{
		"models/a": "first", "models/b": "first", "models/x.y": "nested | piped", "models/x.z": "nested | piped",
		"models/t_min": "bounds", "models/t_max": "bounds", "guardrails#pii/entities": "which",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d entries, want %d: %v", len(got), len(want), got)
	}
}
