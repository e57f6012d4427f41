package fuzz

import (
	"strings"
	"testing"

	"gw/admin/resources"
	"gw/schema"
)

// FuzzSchemaFieldTables feeds arbitrary Markdown to the CONFIG.md field
// table parser that gives the JSON Schema its descriptions. It must not
// panic, and every key it returns names a section and a field.
func FuzzSchemaFieldTables(f *testing.F) {
	f.Add("## models\n\n| Field | Type | Rule |\n|---|---|---|\n| `a` / `b` | string | first |\n")
	f.Add("## guardrails\n#### `pii`\n| Field | Rule |\n|---|---|\n| `x.y`, `.z` | a \\| b |\n| `t_min/_max` | c |\n")
	f.Add("| Field |\n| `` |\n| `/` | `.` |\n#\n####`\n| Field | Rule\n|`a`|")
	f.Fuzz(func(t *testing.T, md string) {
		for k := range schema.ParseFieldTables(md, resources.Collections) {
			if !strings.Contains(k, "/") {
				t.Fatalf("key %q has no section/field separator", k)
			}
		}
	})
}
